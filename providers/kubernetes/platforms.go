package kubernetes

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mcpfleet/mcp/model"
)

// Where each kind of machine template keeps its boot image. A MachineSet's is in its
// providerSpec (spec.template.spec.providerSpec.value), whose kind names the platform; a
// Cluster API infrastructure template's is in spec.template.spec, and its own kind names the
// platform. The fields are those the platforms' APIs define (openshift/api machine/v1beta1;
// the Cluster API providers' v1beta1 templates); a template that gives its image another way
// (an AMI looked up by filters, a GCP image family, an Azure compute gallery) is not
// supported: mcp sets image references, it does not rewrite how a template finds one.

// imageSpec says where one kind keeps its image: the first of candidates (fields relative
// to the kind's base) that holds a non-empty string is the image field; when none does,
// why says what the template uses instead.
type imageSpec struct {
	platform   string
	candidates func(v map[string]any) []string
	why        string
}

func fixed(fields ...string) func(map[string]any) []string {
	return func(map[string]any) []string { return fields }
}

// Machine API (machine.openshift.io/v1beta1) provider specs, by providerSpec.value.kind.
var providerSpecs = map[string]imageSpec{
	"GCPMachineProviderSpec": {platform: "gcp", candidates: gcpBootDisk,
		why: "its providerSpec has no boot disk with an image (disks[].boot: true, disks[].image)"},
	"AWSMachineProviderConfig": {platform: "aws", candidates: fixed("ami.id"),
		why: "its AMI is not given by ami.id (it uses ami.arn or ami.filters)"},
	// An image uploaded at install time (resourceID) or a marketplace image (publisher,
	// offer, sku, version: the reference is their URN, publisher:offer:sku:version).
	"AzureMachineProviderSpec": {platform: "azure", candidates: fixed("image.resourceID", "image.{publisher,offer,sku,version}"),
		why: "its image has neither a resourceID nor a marketplace publisher, offer, sku and version"},
	"VSphereMachineProviderSpec": {platform: "vsphere", candidates: fixed("template"),
		why: "its providerSpec has no template (the VM template machines are cloned from)"},
}

// Cluster API infrastructure templates (infrastructure.cluster.x-k8s.io), by kind.
var infraTemplates = map[string]imageSpec{
	"AWSMachineTemplate": {platform: "aws", candidates: fixed("ami.id"),
		why: "its AMI is not given by ami.id (it is looked up: imageLookupFormat, imageLookupOrg, imageLookupBaseOS)"},
	"GCPMachineTemplate": {platform: "gcp", candidates: fixed("image"),
		why: "its image is not given by image (it uses imageFamily)"},
	"AzureMachineTemplate": {platform: "azure", candidates: fixed("image.id", "image.marketplace.{publisher,offer,sku,version}"),
		why: "its image is neither an image.id nor a marketplace image (compute and shared galleries are not supported)"},
	"VSphereMachineTemplate": {platform: "vsphere", candidates: fixed("template"),
		why: "it has no template (the VM template machines are cloned from)"},
	"DockerMachineTemplate": {platform: "docker", candidates: fixed("customImage"),
		why: "it has no customImage (CAPD then runs the kindest/node image of the Kubernetes version)"},
}

// gcpBootDisk is the image field of the first disk marked boot.
func gcpBootDisk(v map[string]any) []string {
	disks, _ := v["disks"].([]any)
	for i, d := range disks {
		if m, ok := d.(map[string]any); ok && m["boot"] == true {
			return []string{fmt.Sprintf("disks[%d].image", i)}
		}
	}
	return nil
}

// findImage fills t's Platform, Field and Image from obj, whose image is under base (a
// field path) as spec says; or its Unsupported with the reason.
func findImage(t *model.MachineTemplate, obj map[string]any, base string, spec imageSpec) {
	t.Platform = spec.platform
	paths, _ := parseField(base)
	v, _ := paths[0].lookup(obj)
	m, _ := v.(map[string]any)
	for _, rel := range spec.candidates(m) {
		field := base + "." + rel
		if img, err := readImage(obj, field); err == nil && strings.Trim(img, ":") != "" {
			t.Field, t.Image = field, img
			return
		}
	}
	t.Unsupported = spec.why
}

// knownKinds lists a table's kinds, for a message.
func knownKinds(table map[string]imageSpec) string {
	return strings.Join(slices.Sorted(maps.Keys(table)), ", ")
}
