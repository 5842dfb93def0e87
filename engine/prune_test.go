package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state"
)

func TestPrunableKeepsWhatIsUsed(t *testing.T) {
	st := state.New()
	for _, n := range []string{"r-boot", "r-running", "r-desired", "r-from", "r-target", "r-now", "r-old1", "r-old2", "r-rolled-from"} {
		st.Rendered[n] = &model.Rendered{Name: n}
	}
	st.Pointers["worker"] = "r-boot"
	st.Journal["w-3"] = model.JournalEntry{From: "r-from", Target: "r-target"}
	st.History = map[string][]model.PointerChange{"worker": {{Rendered: "r-rolled-from"}, {Rendered: "r-boot"}}}
	fleet := &model.Fleet{Nodes: []model.Node{
		{Name: "w-1", CurrentConfig: "r-running", DesiredConfig: "r-desired"},
		{Name: "w-2", CurrentConfig: "r-gone-from-the-store"},
	}}
	p := prunable(st, fleet, map[string]*model.Rendered{"infra": {Name: "r-now"}}, nil)
	if d := cmp.Diff([]string{"r-old1", "r-old2"}, p.Delete); d != "" {
		t.Errorf("delete (-want +got):\n%s", d)
	}
	want := map[string]string{
		"r-boot": "boot config of pool worker", "r-running": "running on node w-1", "r-desired": "desired by node w-1",
		"r-from": "in the journal of node w-3", "r-target": "in the journal of node w-3", "r-now": "rendered now for pool infra",
		"r-rolled-from": "in the rollback history of pool worker",
	}
	if d := cmp.Diff(want, p.Keep); d != "" {
		t.Errorf("keep (-want +got):\n%s", d)
	}
}

// A machine block's boot config and the variants rendered now for chosen nodes are kept,
// as a pool's boot config and its config rendered now are.
func TestPrunableKeepsMachinesAndVariants(t *testing.T) {
	st := state.New()
	for _, n := range []string{"r-machine", "r-variant", "r-old"} {
		st.Rendered[n] = &model.Rendered{Name: n}
	}
	st.Machines = map[string]model.MachinePointer{"m-9": {Pool: "worker", Rendered: "r-machine"}}
	p := prunable(st, &model.Fleet{}, nil, map[string]*model.Rendered{"node w-3": {Name: "r-variant"}})
	if d := cmp.Diff([]string{"r-old"}, p.Delete); d != "" {
		t.Errorf("delete (-want +got):\n%s", d)
	}
	if p.Keep["r-machine"] != "boot config of machine m-9" || p.Keep["r-variant"] != "rendered now for node w-3" {
		t.Errorf("keep: %v", p.Keep)
	}
}
