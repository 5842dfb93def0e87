package deploy

import (
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
)

// TestKustomization: the kustomization lists every manifest, in order, and names the image
// by digest (make image writes it); the render puts REPO@DIGEST in every workload.
func TestKustomization(t *testing.T) {
	resources, images, err := Kustomization()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := fs.Glob(Manifests, "*.yaml")
	if d := cmp.Diff(files, resources); d != "" {
		t.Errorf("kustomization resources (-files +listed):\n%s", d)
	}
	if len(images) != 1 || images[0].Name != "mcp" || !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(images[0].Digest) {
		t.Fatalf("images: %+v: want one entry for mcp with a sha256 digest", images)
	}
	objs, err := Render()
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, o := range objs {
		spec, _ := dig(o, "spec", "template", "spec").(map[string]any)
		cs, _ := spec["containers"].([]any)
		for _, c := range cs {
			refs = append(refs, fmt.Sprint(c.(map[string]any)["image"]))
		}
	}
	want := images[0].Ref()
	if len(refs) != 3 || slices.IndexFunc(refs, func(r string) bool { return r != want }) >= 0 {
		t.Errorf("rendered images %v, want every one %s", refs, want)
	}
}

// TestAgentPolicyKeys: the policy lets agents write exactly the protocol's agent annotations.
func TestAgentPolicyKeys(t *testing.T) {
	vap := objects(t)["ValidatingAdmissionPolicy /mcp-agent-own-node"].(*admissionv1.ValidatingAdmissionPolicy)
	var expr string
	for _, v := range vap.Spec.Variables {
		if v.Name == "agentKeys" {
			expr = v.Expression
		}
	}
	var got []string
	for _, m := range regexp.MustCompile(`'([^']+)'`).FindAllStringSubmatch(expr, -1) {
		got = append(got, m[1])
	}
	want := slices.Clone(protocol.AgentAnnotations)
	slices.Sort(want)
	slices.Sort(got)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the policy's agentKeys (-protocol.AgentAnnotations +policy):\n%s", d)
	}
	if len(vap.Spec.MatchConditions) != 1 || vap.Spec.MatchConditions[0].Expression != "request.userInfo.username == 'system:serviceaccount:mcp-system:mcp-agent'" {
		t.Errorf("match conditions %+v", vap.Spec.MatchConditions)
	}
}
