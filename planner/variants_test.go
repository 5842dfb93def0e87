package planner

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/model"
)

func variantsDesired() *model.Desired {
	f := func(path, s string) []model.File {
		return []model.File{{Entry: model.Entry{Path: path}, Mode: 0o644, Contents: []byte(s)}}
	}
	d := desired(model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: 1}})
	d.Configs = []model.Config{
		{Name: "50-all", Pools: []string{"worker"}, Files: f("/etc/all", "a")},
		{Name: "60-one", Pools: []string{"worker"}, Nodes: []string{"w-1"}, Files: f("/etc/one", "1")},
		{Name: "61-gpu", Pools: []string{"worker"}, NodeSelector: map[string]string{"gpu": "yes"}, Files: f("/etc/gpu", "g")},
		{Name: "62-typo", Pools: []string{"worker"}, Nodes: []string{"w-9"}, Files: f("/etc/t", "t")},
		{Name: "63-nolabel", Pools: []string{"worker"}, NodeSelector: map[string]string{"nope": "x"}, Files: f("/etc/n", "n")},
	}
	return d
}

// Each node's target is its pool's config with the targeted configs that apply to it: one
// variant per distinct set, rendered once; a node no targeted config applies to gets the
// pool's own config. The plan lists the variants with their nodes, moves each node to its
// own, shows each move's diff once with its nodes, warns of a name and a selector that
// match no node, and schedules every node of the pool under its one budget.
func TestPlanVariantsPerNode(t *testing.T) {
	d := variantsDesired()
	rendered, diags := Render(d, ignition.Renderer{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	base := rendered["worker"]
	if base.File("/etc/one") != nil || base.File("/etc/all") == nil {
		t.Fatalf("the pool's own config has a targeted config's file, or lacks the pool's: %v", base.Files)
	}
	gpu := func(n model.Node) model.Node { n.Labels["gpu"] = "yes"; return n }
	fleet := &model.Fleet{Nodes: []model.Node{node("w-0", "worker", "a", 0), node("w-1", "worker", "a", 1),
		gpu(node("w-2", "worker", "a", 2)), gpu(node("w-3", "worker", "a", 3))}}
	v := NewVariants(d, ignition.Renderer{})
	byNode, err := v.ForNodes(fleet.Nodes)
	if err != nil {
		t.Fatal(err)
	}
	if len(byNode) != 3 || byNode["w-2"] != byNode["w-3"] || byNode["w-1"] == byNode["w-2"] {
		t.Fatalf("variants by node: %v (want w-1 its own, w-2 and w-3 one shared)", byNode)
	}
	if byNode["w-1"].File("/etc/one") == nil || byNode["w-1"].File("/etc/all") == nil || byNode["w-1"].File("/etc/gpu") != nil {
		t.Errorf("w-1's variant: %v", byNode["w-1"].Files)
	}
	p, err := MakePlan(Input{Desired: d, Rendered: rendered, NodeRendered: byNode, Fleet: fleet})
	if err != nil {
		t.Fatal(err)
	}
	to := map[string]string{}
	for _, n := range p.Nodes {
		to[n.Name] = n.To
	}
	want := map[string]string{"w-0": base.Name, "w-1": byNode["w-1"].Name, "w-2": byNode["w-2"].Name, "w-3": byNode["w-2"].Name}
	if d := cmp.Diff(want, to); d != "" {
		t.Errorf("targets (-want +got):\n%s", d)
	}
	pp := p.Pools[0]
	wantV := []VariantPlan{{Rendered: byNode["w-1"].Name, Configs: []string{"60-one"}, Nodes: []string{"w-1"}},
		{Rendered: byNode["w-2"].Name, Configs: []string{"61-gpu"}, Nodes: []string{"w-2", "w-3"}}}
	if d := cmp.Diff(wantV, pp.Variants); d != "" {
		t.Errorf("variants (-want +got):\n%s", d)
	}
	if len(pp.Changes) != 3 {
		t.Errorf("changes: %d moves, want 3 (one per target)", len(pp.Changes))
	}
	for _, c := range pp.Changes {
		if c.To == byNode["w-2"].Name && !slices.Equal(c.Nodes, []string{"w-2", "w-3"}) {
			t.Errorf("the gpu variant's change reaches %v", c.Nodes)
		}
	}
	warns := strings.Join(pp.Warnings, "\n")
	if !strings.Contains(warns, `config 62-typo names node "w-9"`) || !strings.Contains(warns, "config 63-nolabel's node_selector") ||
		strings.Contains(warns, "60-one") || strings.Contains(warns, "61-gpu") {
		t.Errorf("warnings:\n%s", warns)
	}
	if pp.MaxUnavailable != 1 || pp.Waves != 4 {
		t.Errorf("budget: max_unavailable %d, %d waves; want 1 and 4 (one pool, one budget)", pp.MaxUnavailable, pp.Waves)
	}
	for _, r := range []*model.Rendered{base, byNode["w-1"], byNode["w-2"]} {
		if p.Rendered[r.Name] == nil {
			t.Errorf("plan does not carry %s", r.Name)
		}
	}
}

// A machine block gets the variant of the targeted configs for its name and labels, and
// counts as matching for the warnings; the plan says which config each machine boots.
func TestPlanMachineVariants(t *testing.T) {
	d := variantsDesired()
	d.Machines = []model.Machine{{Name: "w-9", Pool: "worker", MACs: []string{"52:54:00:00:00:09"}},
		{Name: "w-8", Pool: "worker", UUID: "x"}}
	rendered, _ := Render(d, ignition.Renderer{})
	byMachine, err := NewVariants(d, ignition.Renderer{}).ForMachines()
	if err != nil || len(byMachine) != 1 || byMachine["w-9"].File("/etc/t") == nil {
		t.Fatalf("machine variants: %v %v", byMachine, err)
	}
	p, err := MakePlan(Input{Desired: d, Rendered: rendered, MachineRendered: byMachine, Fleet: &model.Fleet{}})
	if err != nil {
		t.Fatal(err)
	}
	pp := p.Pools[0]
	if want := map[string]string{"w-9": byMachine["w-9"].Name, "w-8": rendered["worker"].Name}; !cmp.Equal(want, pp.Machines) {
		t.Errorf("machines: %v, want %v", pp.Machines, want)
	}
	if strings.Contains(strings.Join(pp.Warnings, "\n"), "62-typo") {
		t.Errorf("a name a machine block has is warned of: %v", pp.Warnings)
	}
}

// A targeted config Ignition refuses is found when the configuration renders (mcp
// validate), at its own file, not only once a node it applies to turns up.
func TestRenderChecksTargetedConfigs(t *testing.T) {
	d := variantsDesired()
	at := model.Range{Filename: "main.hcl", Start: model.Pos{Line: 7, Column: 3}}
	d.Configs[1].Files[0].Path = "/etc/one/"
	d.Configs[1].Files[0].DeclRange = at
	_, diags := Render(d, ignition.Renderer{})
	if !diags.HasErrors() {
		t.Fatal("a targeted config with a bad path rendered")
	}
	if !slices.ContainsFunc(diags, func(d *model.Diagnostic) bool { return d.Subject != nil && *d.Subject == at }) {
		t.Errorf("no diagnostic at the targeted config's file: %v", diags)
	}
}

// Two targeted configs each fine alone may clash together (a file of one inside a file of
// the other): the node they both apply to cannot be planned, and the error names the
// node, the configs and the place.
func TestVariantThatDoesNotRenderNamesItsPlace(t *testing.T) {
	d := variantsDesired()
	at := model.Range{Filename: "main.hcl", Start: model.Pos{Line: 9, Column: 3}}
	d.Configs[2].Files = []model.File{{Entry: model.Entry{Path: "/etc/one/inside", DeclRange: at}, Mode: 0o644, Contents: []byte("x")}}
	n := node("w-1", "worker", "a", 0)
	n.Labels["gpu"] = "yes"
	_, err := NewVariants(d, ignition.Renderer{}).ForNodes([]model.Node{n})
	if err == nil || !strings.Contains(err.Error(), "node w-1") || !strings.Contains(err.Error(), "configs 60-one, 61-gpu") {
		t.Fatalf("a clash of two targeted configs: %v", err)
	}
	t.Log(err)
}
