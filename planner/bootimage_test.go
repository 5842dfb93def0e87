package planner

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/model"
)

const (
	os40 = "quay.io/fcos:40"
	os41 = "quay.io/fcos:41"
)

var (
	bi40 = model.BootImageDef{Name: "fcos-40", OSImage: os40, Images: map[string]string{"gcp": "img-40", "aws": "ami-40"}}
	bi41 = model.BootImageDef{Name: "fcos-41", OSImage: os41, Images: map[string]string{"gcp": "img-41", "aws": "ami-41"}}
)

// bootInput is a worker pool on OS image os41 with nodes w-0 (on os40, held), w-1 (on
// os40, updating) and w-2 (on os41), and the given boot image policy.
func bootInput(bi model.BootImage, templates ...model.MachineTemplate) Input {
	bi.Declared = true
	if bi.Skew == "" {
		bi.Skew = model.SkewWarn
	}
	d := desired(model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: 1}, BootImage: bi, OSImage: os41})
	d.BootImages = []model.BootImageDef{bi40, bi41}
	nodes := []model.Node{node("w-0", "worker", "a", 0), node("w-1", "worker", "a", 1), node("w-2", "worker", "a", 2)}
	nodes[0].OSImage, nodes[0].Hold = os40, "disk swap"
	nodes[1].OSImage, nodes[2].OSImage = os40, os41
	for i := range nodes {
		nodes[i].CurrentConfig = "rendered-worker-old"
	}
	old := &model.Rendered{Name: "rendered-worker-old", Pool: "worker", OSImage: os40}
	r := &model.Rendered{Name: "rendered-worker-new", Pool: "worker", OSImage: os41}
	return Input{Desired: d, Rendered: map[string]*model.Rendered{"worker": r},
		Known: map[string]*model.Rendered{old.Name: old}, Pointers: map[string]string{"worker": old.Name},
		Fleet: &model.Fleet{Nodes: nodes, Templates: templates}}
}

func machineSet(name, platform, image string, labels map[string]string) model.MachineTemplate {
	return model.MachineTemplate{Kind: "MachineSet", Namespace: "m", Name: name, Platform: platform, Image: image, Labels: labels,
		NodeLabels: map[string]string{"node-role.kubernetes.io/worker": ""}}
}

func TestBootImagePinnedAndManaged(t *testing.T) {
	for _, tc := range []struct {
		name       string
		bi         model.BootImage
		state      *model.BootImageDef
		wantTo     string
		changed    bool
		firstPivot bool
	}{
		{name: "managed follows the OS image", bi: model.BootImage{Policy: model.BootImageManaged}, wantTo: "fcos-41", changed: true},
		{name: "managed, state already on it", bi: model.BootImage{Policy: model.BootImageManaged}, state: &bi41, wantTo: "fcos-41"},
		{name: "managed, state on the old one", bi: model.BootImage{Policy: model.BootImageManaged}, state: &bi40, wantTo: "fcos-41", changed: true},
		{name: "pinned to the old image pivots at first boot", bi: model.BootImage{Policy: model.BootImagePinned, Image: "fcos-40"},
			state: &bi40, wantTo: "fcos-40", firstPivot: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := bootInput(tc.bi)
			if tc.state != nil {
				in.BootImages = map[string]model.BootImageDef{"worker": *tc.state}
			}
			p, err := MakePlan(in)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.BootImages) != 1 {
				t.Fatalf("boot images: %+v", p.BootImages)
			}
			b := p.BootImages[0]
			if b.To.Name != tc.wantTo || b.Changed != tc.changed || b.FirstBootPivot != tc.firstPivot {
				t.Errorf("to %s changed %v first-boot pivot %v; want %s %v %v", b.To.Name, b.Changed, b.FirstBootPivot, tc.wantTo, tc.changed, tc.firstPivot)
			}
			// w-0 is held on os40: it lags after this apply; w-1 pivots; w-2 is on os41.
			if !slices.Equal(b.Lagging, []string{"w-0"}) {
				t.Errorf("lagging %v, want [w-0]", b.Lagging)
			}
			if b.Changes() != tc.changed || p.HasChanges() != true { // nodes change in every case
				t.Errorf("changes %v", b.Changes())
			}
		})
	}
}

func TestBootImageNotManagedWithoutBlocks(t *testing.T) {
	in := bootInput(model.BootImage{})
	in.Desired.Pools[0].BootImage = model.BootImage{Policy: model.BootImageManaged}
	in.Desired.BootImages = nil
	p, err := MakePlan(in)
	if err != nil || len(p.BootImages) != 0 {
		t.Fatalf("boot images %+v, err %v: a configuration without boot_image blocks leaves boot images alone", p.BootImages, err)
	}
}

func TestBootImageTemplates(t *testing.T) {
	tmpl := []model.MachineTemplate{
		machineSet("a-gcp", "gcp", "img-40", map[string]string{"managed": "yes"}),
		machineSet("b-aws", "aws", "ami-41", map[string]string{"managed": "yes"}),
		machineSet("c-gcp-excluded", "gcp", "img-40", nil),
		machineSet("d-azure", "azure", "x", map[string]string{"managed": "yes"}),
		{Kind: "MachineSet", Namespace: "m", Name: "e-other-pool", Platform: "gcp", Image: "img-40",
			NodeLabels: map[string]string{"node-role.kubernetes.io/infra": ""}, Labels: map[string]string{"managed": "yes"}},
		{Kind: "MachineSet", Namespace: "m", Name: "f-unsupported", Unsupported: "unknown providerSpec kind Foo",
			NodeLabels: map[string]string{"node-role.kubernetes.io/worker": ""}, Labels: map[string]string{"managed": "yes"}},
	}
	sel := &model.TemplateSelection{Mode: model.TemplatesPartial, MatchLabels: map[string]string{"managed": "yes"}}
	in := bootInput(model.BootImage{Policy: model.BootImageManaged, Templates: sel}, tmpl...)
	p, err := MakePlan(in)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]TemplatePlan{}
	for _, tp := range p.BootImages[0].Templates {
		got[tp.Template.Name] = tp
	}
	want := map[string]TemplateAction{"a-gcp": TemplateUpdate, "b-aws": TemplateNoOp, "d-azure": TemplateDegraded, "f-unsupported": TemplateDegraded}
	if len(got) != len(want) {
		t.Errorf("templates %v, want exactly %v (c: not labelled, e: another pool's nodes)", keysOf(got), want)
	}
	for name, a := range want {
		if got[name].Action != a {
			t.Errorf("%s: %s, want %s (%+v)", name, got[name].Action, a, got[name])
		}
	}
	if a := got["a-gcp"]; a.From != "img-40" || a.To != "img-41" {
		t.Errorf("a-gcp: %s → %s", a.From, a.To)
	}
	if r := got["d-azure"].Reason; !strings.Contains(r, `no image for platform "azure"`) {
		t.Errorf("d-azure reason %q", r)
	}
	if p.BootImages[0].Refused != "" {
		t.Errorf("skew warn refused: %s", p.BootImages[0].Refused)
	}

	// All: the unlabelled one too.
	in.Desired.Pools[0].BootImage.Templates = &model.TemplateSelection{Mode: model.TemplatesAll}
	p, _ = MakePlan(in)
	if n := len(p.BootImages[0].Templates); n != 5 {
		t.Errorf("all: %d templates, want 5", n)
	}

	// Enforce: degraded templates refuse the plan, naming them.
	in.Desired.Pools[0].BootImage.Skew = model.SkewEnforce
	p, _ = MakePlan(in)
	r := strings.Join(p.Refusals(), "\n")
	if !strings.Contains(r, "MachineSet/m/d-azure") || !strings.Contains(r, "MachineSet/m/f-unsupported") {
		t.Errorf("refusal %q", r)
	}
	// A paused pool is kept: nothing changes, nothing refused.
	in.Desired.Pools[0].Paused = model.PauseAll
	p, _ = MakePlan(in)
	if b := p.BootImages[0]; !b.Kept || b.Changes() || b.Refused != "" {
		t.Errorf("paused: kept %v changes %v refused %q", b.Kept, b.Changes(), b.Refused)
	}
}

func TestBootImageTemplateOfTwoPools(t *testing.T) {
	in := bootInput(model.BootImage{Policy: model.BootImageManaged, Templates: &model.TemplateSelection{Mode: model.TemplatesAll}},
		machineSet("shared", "gcp", "img-40", nil))
	infra := in.Desired.Pools[0]
	infra.Name, infra.NodeSelector = "zinfra", map[string]string{"pool": "zinfra"}
	in.Desired.Pools = append(in.Desired.Pools, infra)
	in.Rendered["zinfra"] = &model.Rendered{Name: "rendered-zinfra-new", Pool: "zinfra", OSImage: os41}
	in.Fleet.Templates[0].NodeLabels["pool"] = "zinfra" // its nodes are both pools'
	p, err := MakePlan(in)
	if err != nil {
		t.Fatal(err)
	}
	if a := p.BootImages[0].Templates[0].Action; a != TemplateUpdate {
		t.Errorf("first pool: %s", a)
	}
	if tp := p.BootImages[1].Templates[0]; tp.Action != TemplateDegraded || !strings.Contains(tp.Reason, "pool worker manages it too") {
		t.Errorf("second pool: %+v", tp)
	}
}

func TestBootImagePinnedEnforceRefuses(t *testing.T) {
	in := bootInput(model.BootImage{Policy: model.BootImagePinned, Image: "fcos-40", Skew: model.SkewEnforce})
	p, err := MakePlan(in)
	if err != nil {
		t.Fatal(err)
	}
	r := p.Refusals()
	if len(r) != 1 || !strings.Contains(r[0], "boot_image.fcos-40") || !strings.Contains(r[0], os41) {
		t.Errorf("refusals %q", r)
	}
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
