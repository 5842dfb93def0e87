package planner

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

// pausedFleet: worker nodes on three configs. n-0 lacks only /etc/a (on_change none), n-1
// only /etc/b (no policy: a reboot), n-2 runs the target.
func pausedFleet(pause model.Pause) Input {
	to := target("worker", file("/etc/a", "x", "none"), file("/etc/b", "y"))
	noA := &model.Rendered{Name: "rendered-worker-noa", Pool: "worker", Files: []model.File{file("/etc/b", "y")}}
	noB := &model.Rendered{Name: "rendered-worker-nob", Pool: "worker", Files: []model.File{file("/etc/a", "x", "none")}}
	nodes := []model.Node{node("n-0", "worker", "a", 0), node("n-1", "worker", "a", 1), node("n-2", "worker", "a", 2)}
	nodes[0].CurrentConfig, nodes[1].CurrentConfig, nodes[2].CurrentConfig = noA.Name, noB.Name, to.Name
	return Input{Desired: desired(model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: 1}, Paused: pause}),
		Rendered: map[string]*model.Rendered{"worker": to},
		Known:    map[string]*model.Rendered{noA.Name: noA, noB.Name: noB, to.Name: to},
		Pointers: map[string]string{"worker": noA.Name},
		Fleet:    &model.Fleet{Nodes: nodes}}
}

// paused = "disruptive" holds the node whose steps reboot it and lets the one whose steps
// disrupt nothing through; paused = true holds both. The plan says since when (the
// state's record), what waits and whether it is disruptive.
func TestPausedDisruptive(t *testing.T) {
	since := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	in := pausedFleet(model.PauseDisruptive)
	in.PausedSince = map[string]time.Time{"worker": since}
	p, err := MakePlan(in)
	if err != nil {
		t.Fatal(err)
	}
	pp, n := p.Pools[0], nodesByName(p)
	if n["n-0"].Deferred || n["n-0"].Wave != 1 || !n["n-1"].Deferred || n["n-1"].Wave != 0 {
		t.Errorf("n-0 deferred %v wave %d, n-1 deferred %v wave %d: want n-0 in wave 1 and n-1 held",
			n["n-0"].Deferred, n["n-0"].Wave, n["n-1"].Deferred, n["n-1"].Wave)
	}
	want := &PauseStatus{Mode: model.PauseDisruptive, Since: &since, Waiting: []string{"n-1"},
		Steps: []string{"drain", "write /etc/b", "reboot", "verify"}, Disruptive: true, Passing: []string{"n-0"}}
	if d := cmp.Diff(want, pp.Pause); d != "" {
		t.Errorf("pause (-want +got):\n%s", d)
	}
	if !pp.Paused || len(pp.Blockers) != 1 || pp.Blockers[0].Kind != BlockPaused ||
		pp.Blockers[0].Message != "pool worker is paused for disruptive changes: 1 node change deferred (n-1 reboots); 1 node change let through (no drain or reboot)" {
		t.Errorf("paused %v, blockers %+v", pp.Paused, pp.Blockers)
	}
	// What apply asks of each node: the same answer.
	for _, name := range []string{"n-0", "n-1"} {
		np := n[name]
		v := Admit(Gates, &Facts{Node: name, Pool: &pp, Disruptive: np.Disruptive(), Observed: in.Fleet.Nodes})
		if held := v.Kind == Defer; held != np.Deferred {
			t.Errorf("apply's gates on %s: %+v; the plan deferred it: %v", name, v, np.Deferred)
		}
	}

	all := pausedFleet(model.PauseAll)
	p, err = MakePlan(all)
	if err != nil {
		t.Fatal(err)
	}
	pp, n = p.Pools[0], nodesByName(p)
	if !n["n-0"].Deferred || !n["n-1"].Deferred || pp.Pause.Since != nil || !slices.Equal(pp.Pause.Waiting, []string{"n-0", "n-1"}) ||
		pp.Pause.Passing != nil || !pp.Pause.Disruptive {
		t.Errorf("paused = true: n-0 deferred %v, n-1 %v, pause %+v", n["n-0"].Deferred, n["n-1"].Deferred, pp.Pause)
	}
}

// A pool paused for disruptive changes whose changes disrupt nothing is not held: its
// boot pointer moves, as an unpaused pool's.
func TestPausedDisruptiveNothingHeld(t *testing.T) {
	in := pausedFleet(model.PauseDisruptive)
	in.Fleet.Nodes = in.Fleet.Nodes[:1] // n-0 only: it lacks the on_change none file
	p, err := MakePlan(in)
	if err != nil {
		t.Fatal(err)
	}
	pp := p.Pools[0]
	if pp.Paused || len(pp.Blockers) != 0 || p.Nodes[0].Deferred || len(pp.Pause.Waiting) != 0 || pp.Pause.Disruptive {
		t.Errorf("paused %v, blockers %+v, pause %+v, n-0 deferred %v", pp.Paused, pp.Blockers, pp.Pause, p.Nodes[0].Deferred)
	}
	if !slices.ContainsFunc(pp.Changes, func(c Change) bool { return c.From == "rendered-worker-noa" }) {
		t.Errorf("changes %+v", pp.Changes)
	}
}

// Status plans only the paused pools for what their pauses hold.
func TestPauses(t *testing.T) {
	in := pausedFleet(model.PauseAll)
	in.Desired.Pools = append(in.Desired.Pools, model.Pool{Name: "infra", NodeSelector: map[string]string{"x": "y"}})
	in.Rendered["infra"] = target("infra")
	got, err := Pauses(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["worker"] == nil || !slices.Equal(got["worker"].Waiting, []string{"n-0", "n-1"}) {
		t.Errorf("pauses %+v", got)
	}
}

func nodesByName(p *Rollout) map[string]NodePlan {
	out := map[string]NodePlan{}
	for _, n := range p.Nodes {
		out[n.Name] = n
	}
	return out
}

// order: "oldest" (zone, then oldest), "newest" (zone, then newest), or a list first,
// the rest as "oldest"; a listed name that is no node of the pool is a warning with its
// place. The canary is the first in that order; nodes out of service go first all the same.
func TestOrder(t *testing.T) {
	nodes := []model.Node{node("a-old", "worker", "a", 1), node("a-new", "worker", "a", 5),
		node("b-old", "worker", "b", 0), node("b-new", "worker", "b", 9)}
	plan := func(o model.Order, canary int, edit func([]model.Node)) *Rollout {
		t.Helper()
		ns := slices.Clone(nodes)
		if edit != nil {
			edit(ns)
		}
		p, err := MakePlan(Input{Desired: desired(model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: 1},
			Order: o, Pacing: model.Pacing{Canary: canary, MaxFailures: 1}}),
			Rendered: map[string]*model.Rendered{"worker": target("worker", file("/etc/a", "x", "none"))},
			Fleet:    &model.Fleet{Nodes: ns}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	names := func(p *Rollout) []string {
		var out []string
		for _, n := range p.Nodes {
			out = append(out, n.Name)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		order model.Order
		want  []string
		by    model.OrderBy
	}{
		{"default", model.Order{}, []string{"a-old", "a-new", "b-old", "b-new"}, model.OrderOldest},
		{"oldest", model.Order{By: model.OrderOldest}, []string{"a-old", "a-new", "b-old", "b-new"}, model.OrderOldest},
		{"newest", model.Order{By: model.OrderNewest}, []string{"a-new", "a-old", "b-new", "b-old"}, model.OrderNewest},
		{"list", model.Order{By: model.OrderOldest, Nodes: []string{"b-new", "a-new"}, NodeRanges: make([]model.Range, 2)},
			[]string{"b-new", "a-new", "a-old", "b-old"}, model.OrderList},
	} {
		p := plan(tc.order, 1, nil)
		if d := cmp.Diff(tc.want, names(p)); d != "" || p.Pools[0].Order != tc.by {
			t.Errorf("%s: order %s (-want +got):\n%s", tc.name, p.Pools[0].Order, d)
		}
		if !p.Nodes[0].Canary || p.Nodes[1].Canary {
			t.Errorf("%s: the canary is not the first in order: %+v", tc.name, p.Nodes[:2])
		}
	}
	at := model.Range{Filename: "main.hcl", Start: model.Pos{Line: 3, Column: 12}}
	p := plan(model.Order{By: model.OrderOldest, Nodes: []string{"gone", "b-new"}, NodeRanges: []model.Range{at, {}}}, 0, nil)
	if d := cmp.Diff([]string{"b-new", "a-old", "a-new", "b-old"}, names(p)); d != "" {
		t.Errorf("list naming a gone node (-want +got):\n%s", d)
	}
	if w := p.Pools[0].Warnings; len(w) != 1 || !strings.Contains(w[0], `order names node "gone" (main.hcl:3,12), which is no node of pool worker`) {
		t.Errorf("warnings %q", w)
	}
	// Out of service first, whatever the order says.
	p = plan(model.Order{By: model.OrderNewest}, 0, func(ns []model.Node) { ns[0].Ready = false })
	if d := cmp.Diff([]string{"a-old", "a-new", "b-new", "b-old"}, names(p)); d != "" {
		t.Errorf("newest with a-old NotReady (-want +got):\n%s", d)
	}
	if got := OrderWords(&p.Pools[0]); got != "zone, then newest" {
		t.Errorf("OrderWords %q", got)
	}
}
