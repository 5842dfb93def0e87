package planner

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

// Each machine template's state: which pool manages it (node labels, then the pool's
// machine_templates selection by the template's own labels), and its image against the
// pool's boot image on its platform — the applied one first, else the configuration's.
func TestMakeTemplateStatus(t *testing.T) {
	managed := func(sel *model.TemplateSelection) model.BootImage {
		return model.BootImage{Policy: model.BootImageManaged, Declared: true, Templates: sel}
	}
	d := desired(
		model.Pool{Name: "worker", OSImage: "os:2",
			BootImage: managed(&model.TemplateSelection{Mode: model.TemplatesPartial, MatchLabels: map[string]string{"mcp": "on"}})},
		model.Pool{Name: "infra", BootImage: model.BootImage{Policy: model.BootImagePinned, Image: "old", Declared: true,
			Templates: &model.TemplateSelection{Mode: model.TemplatesAll}}},
		model.Pool{Name: "edge"},
		model.Pool{Name: "gpu", BootImage: managed(&model.TemplateSelection{Mode: model.TemplatesAll})},
		model.Pool{Name: "lost", OSImage: "os:9", BootImage: managed(&model.TemplateSelection{Mode: model.TemplatesAll})},
	)
	d.BootImages = []model.BootImageDef{
		{Name: "new", OSImage: "os:2", Images: map[string]string{"aws": "ami-2", "gcp": "g-2"}},
		{Name: "old", OSImage: "os:1", Images: map[string]string{"aws": "ami-1"}},
	}
	role := func(pools ...string) map[string]string {
		m := map[string]string{}
		for _, p := range pools {
			m["node-role.kubernetes.io/"+p] = ""
		}
		return m
	}
	on := map[string]string{"mcp": "on"}
	tmpl := func(name string, labels, nodeLabels map[string]string, platform, image string) model.MachineTemplate {
		return model.MachineTemplate{Kind: "MachineSet", Namespace: "ns", Name: name, Labels: labels, NodeLabels: nodeLabels,
			Platform: platform, Field: "f", Image: image}
	}
	unsupported := tmpl("w-unsupported", on, role("worker"), "aws", "")
	unsupported.Unsupported = "its AMI is not given by ami.id"
	refused := tmpl("w-refused", on, role("worker"), "aws", "ami-1")
	refused.LastError = "admission webhook denied the request"
	templates := []model.MachineTemplate{
		tmpl("w-done", on, role("worker"), "aws", "ami-2"),
		tmpl("w-old", on, role("worker"), "aws", "ami-1"),
		tmpl("w-unselected", map[string]string{"mcp": "off"}, role("worker"), "aws", "ami-1"),
		tmpl("w-azure", on, role("worker"), "azure", "/images/x"),
		unsupported,
		refused,
		tmpl("infra", nil, role("infra"), "aws", "ami-2"),
		tmpl("edge", nil, role("edge"), "aws", "ami-2"),
		tmpl("nobody", nil, role("db"), "aws", "ami-2"),
		tmpl("two", on, role("worker", "infra"), "aws", "ami-2"),
		tmpl("gpu", nil, role("gpu"), "gcp", "g-1"),
		tmpl("lost", nil, role("lost"), "gcp", "g-1"),
	}
	// gpu's OS image comes from a config block: its rendered config's.
	rendered := map[string]*model.Rendered{"gpu": {OSImage: "os:2"}}
	got := MakeTemplateStatus(d, rendered, nil, templates)
	row := func(i int, pool, bootImage, wanted string, state TemplateState, reason string) TemplateStatus {
		return TemplateStatus{Template: templates[i], Pool: pool, BootImage: bootImage, Wanted: wanted, State: state, Reason: reason}
	}
	want := []TemplateStatus{
		row(0, "worker", "new", "ami-2", TemplateStateReconciled, ""),
		row(1, "worker", "new", "ami-2", TemplateStateLagging, "boot_image.new's aws image is ami-2"),
		row(2, "worker", "", "", TemplateStateUnmanaged, "pool worker's machine_templates selects templates labelled mcp=on"),
		row(3, "worker", "new", "", TemplateStateDegraded, `boot_image.new has no image for platform "azure" (images: aws, gcp)`),
		row(4, "worker", "new", "", TemplateStateDegraded, "its AMI is not given by ami.id"),
		row(5, "worker", "new", "ami-2", TemplateStateDegraded, "apply's last set of its image was refused: admission webhook denied the request"),
		row(6, "infra", "old", "ami-1", TemplateStateLagging, "boot_image.old's aws image is ami-1"),
		row(7, "edge", "", "", TemplateStateUnmanaged, "pool edge manages no machine templates (its boot_image has no machine_templates block)"),
		row(8, "", "", "", TemplateStateUnmanaged, "no pool's node_selector matches the labels of the nodes it makes"),
		row(9, "worker", "new", "ami-2", TemplateStateDegraded,
			"pool infra manages it too (apply sets pool worker's image): make the pools' machine_templates selections exclusive"),
		row(10, "gpu", "new", "g-2", TemplateStateLagging, "boot_image.new's gcp image is g-2"),
		row(11, "lost", "", "", TemplateStateDegraded, `pool "lost" has a managed boot image, and no boot_image block has its OS image "os:9" `+
			`(known: boot_image.new (os_image "os:2"), boot_image.old (os_image "os:1")); declare a boot_image with os_image = "os:9", or pin one (policy = "pinned")`),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MakeTemplateStatus (-want +got):\n%s", diff)
	}

	// What apply last applied to a pool wins over what the configuration says now: the
	// templates are reconciled with the state, and the plan shows the change to come.
	got = MakeTemplateStatus(d, rendered, map[string]model.BootImageDef{"infra": d.BootImages[0]}, templates[6:7])
	if got[0].State != TemplateStateReconciled || got[0].BootImage != "new" {
		t.Errorf("infra with boot_image.new applied: %+v", got[0])
	}

	// A configuration with no boot_image blocks manages none.
	plain := desired(model.Pool{Name: "worker"})
	got = MakeTemplateStatus(plain, nil, nil, templates[:1])
	if got[0].State != TemplateStateUnmanaged || got[0].Reason != "pool worker's boot image is not managed (no boot_image blocks)" {
		t.Errorf("no boot images: %+v", got[0])
	}
}
