package planner

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

// A node whose current config is absent or a name the state never made is planned from
// what it carries against its target: nothing for the items that match, exactly the
// differing ones with their own on_change; a node that differs in none is adopted; one
// that could not be observed is planned as before, the reason in its warning.
func TestMakePlanFromObservation(t *testing.T) {
	tg := target("worker", file("/etc/chrony.conf", "server a", "restart:chronyd.service"),
		file("/etc/motd", "hi")) // no on_change: a reboot, were it to differ
	chrony := model.Drift{Path: "/etc/chrony.conf", Kind: model.DriftContent}
	cases := []struct {
		name, from string
		obs        *model.Observation
		action     NodeAction
		steps      []string
		warn       string
	}{
		{"absent, carries all", "", &model.Observation{Target: tg.Name}, NodeAdopt, []string{"adopt"}, ""},
		{"foreign, carries all", "rendered-worker-0123abcd", &model.Observation{Target: tg.Name}, NodeAdopt, []string{"adopt"}, ""},
		{"foreign, one file differs", "rendered-worker-0123abcd", &model.Observation{Target: tg.Name, Drift: []model.Drift{chrony}},
			NodeUpdate, []string{"write /etc/chrony.conf", "restart chronyd.service"}, ""},
		{"foreign, more than listed", "rendered-worker-0123abcd", &model.Observation{Target: tg.Name, Drift: []model.Drift{chrony}, Unlisted: 3},
			NodeUpdate, []string{"cordon", "drain", "write /etc/chrony.conf", "write /etc/motd", "reboot", "verify", "uncordon"}, "3 more items"},
		{"observed against another target", "rendered-worker-0123abcd", &model.Observation{Target: "rendered-worker-older"},
			NodeUpdate, []string{"cordon", "drain", "write /etc/chrony.conf", "write /etc/motd", "reboot", "verify", "uncordon"}, "unknown to the state"},
		{"not observed", "rendered-worker-0123abcd", &model.Observation{Target: tg.Name, Reason: "the agent did not answer"},
			NodeUpdate, []string{"cordon", "drain", "write /etc/chrony.conf", "write /etc/motd", "reboot", "verify", "uncordon"}, "the agent did not answer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := node("w-0", "worker", "a", 0)
			n.CurrentConfig, n.Observed = c.from, c.obs
			p, err := MakePlan(Input{Desired: desired(model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: 1}}),
				Rendered: map[string]*model.Rendered{"worker": tg}, Fleet: &model.Fleet{Nodes: []model.Node{n}}})
			if err != nil {
				t.Fatal(err)
			}
			np := p.Nodes[0]
			if np.Action != c.action {
				t.Errorf("action %q, want %q", np.Action, c.action)
			}
			if d := cmp.Diff(c.steps, keys(np.Steps)); d != "" {
				t.Errorf("steps (-want +got):\n%s", d)
			}
			if w := strings.Join(np.Warnings, "; "); !strings.Contains(w, c.warn) || c.warn == "" && w != "" {
				t.Errorf("warnings %q, want one containing %q", w, c.warn)
			}
			for _, ch := range p.Pools[0].Changes {
				if len(ch.Nodes) > 0 && c.obs.Usable(tg.Name) {
					t.Errorf("a node planned from what it carries is listed under the changes from its config: %+v", ch)
				}
			}
		})
	}
}

// ToObserve names the nodes whose current config is absent or unknown, with their pool's
// target, and leaves out those the state or the plan knows.
func TestToObserve(t *testing.T) {
	tg := target("worker", file("/etc/motd", "hi"))
	nodes := []model.Node{node("w-0", "worker", "a", 0), node("w-1", "worker", "a", 0), node("w-2", "worker", "a", 0),
		node("w-3", "worker", "a", 0), node("stray", "none", "a", 0)}
	nodes[1].CurrentConfig = tg.Name         // the plan renders it (a lost state)
	nodes[2].CurrentConfig = "rendered-old"  // the state knows it
	nodes[3].CurrentConfig = "rendered-mco1" // neither does
	got := ToObserve(desired(model.Pool{Name: "worker"}), map[string]*model.Rendered{"worker": tg}, nil,
		map[string]*model.Rendered{"rendered-old": {Name: "rendered-old"}}, nodes)
	names := map[string]string{}
	for n, r := range got {
		names[n] = r.Name
	}
	if d := cmp.Diff(map[string]string{"w-0": tg.Name, "w-3": tg.Name}, names); d != "" {
		t.Errorf("ToObserve (-want +got):\n%s", d)
	}
}

// A node with an update in flight is not planned from what it carries: an item the
// interrupted update wrote looks carried, and its on_change would be skipped.
func TestMakePlanInFlightNotFromObservation(t *testing.T) {
	tg := target("worker", file("/etc/chrony.conf", "server a", "restart:chronyd.service"))
	for name, edit := range map[string]func(*model.Node, *Input){
		"in flight": func(_ *model.Node, in *Input) {
			in.InFlight = []model.InFlight{{Node: "w-0", Target: tg.Name, Phase: model.PhaseHandOver}}
		},
		"working": func(n *model.Node, _ *Input) { n.State, n.DesiredConfig = model.StateWorking, "rendered-worker-other" },
		"rebooting": func(n *model.Node, _ *Input) {
			n.PendingReboot = &model.PendingReboot{Config: tg.Name, BootID: n.BootID}
		},
	} {
		t.Run(name, func(t *testing.T) {
			n := node("w-0", "worker", "a", 0)
			n.BootID, n.Observed = "b1", &model.Observation{Target: tg.Name}
			in := Input{Desired: desired(model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: 1}}),
				Rendered: map[string]*model.Rendered{"worker": tg}}
			edit(&n, &in)
			in.Fleet = &model.Fleet{Nodes: []model.Node{n}}
			p, err := MakePlan(in)
			if err != nil {
				t.Fatal(err)
			}
			if got := keys(p.Nodes[0].Steps); !slices.Contains(got, "restart chronyd.service") || p.Nodes[0].Action == NodeAdopt {
				t.Errorf("%s, steps %v; want the update from nothing, its restart included", p.Nodes[0].Action, got)
			}
		})
	}
}
