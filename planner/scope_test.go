package planner

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

// scopeFleet: four workers (w-0 oldest) and one infra node, every one needing a reboot.
func scopeInput(targets, exclude []string, change func(nodes []model.Node)) Input {
	nodes := []model.Node{node("w-0", "worker", "a", 0), node("w-1", "worker", "a", 1), node("w-2", "worker", "a", 2),
		node("w-3", "worker", "a", 3), node("i-0", "infra", "a", 0)}
	if change != nil {
		change(nodes)
	}
	return Input{
		Desired: desired(model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: 2}},
			model.Pool{Name: "infra", MaxUnavailable: model.IntOrPercent{Value: 1}}),
		Rendered: map[string]*model.Rendered{"worker": target("worker", file("/etc/a", "x")), "infra": target("infra", file("/etc/a", "x"))},
		Pointers: map[string]string{"worker": "rendered-worker-old", "infra": "rendered-infra-old"},
		Fleet:    &model.Fleet{Nodes: nodes}, Targets: targets, Exclude: exclude,
	}
}

// nodeSummary is "wave held untargeted steps" per node.
func nodeSummary(p *Rollout) map[string]string {
	out := map[string]string{}
	for _, n := range p.Nodes {
		s := string(n.Action)
		if n.Wave > 0 {
			s += " wave " + string(rune('0'+n.Wave))
		}
		if n.Held != "" {
			s += " held: " + n.Held
		}
		if n.Untargeted {
			s += " untargeted"
		}
		if len(n.Steps) > 0 {
			s += " steps"
		}
		out[n.Name] = s
	}
	return out
}

// A hold label, a hold annotation and -exclude keep nodes out: no steps, the reason shown;
// a held node out of service still counts against the budget.
func TestMakePlanHoldsAndExcludes(t *testing.T) {
	in := scopeInput(nil, []string{"node.w-3"}, func(n []model.Node) {
		n[1].Labels[model.HoldKey] = "kernel-debug"
		n[2].Hold, n[2].Ready = "disk replaced on Tuesday", false
	})
	p, err := MakePlan(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"w-0": "update wave 1 steps",
		"w-1": "no-op held: kernel-debug (mcpfleet.io/hold)",
		"w-2": "no-op held: disk replaced on Tuesday (mcpfleet.io/hold)",
		"w-3": "no-op held: excluded with -exclude",
		"i-0": "update wave 1 steps",
	}
	if d := cmp.Diff(want, nodeSummary(p)); d != "" {
		t.Errorf("holds (-want +got):\n%s", d)
	}
	if pp := p.Pools[0]; pp.Held != 3 || pp.Unavailable != 1 || pp.Slots != 1 || pp.PointerKept {
		t.Errorf("worker pool: held %d, unavailable %d (w-2 is NotReady, held or not), slots %d, pointer kept %v",
			pp.Held, pp.Unavailable, pp.Slots, pp.PointerKept)
	}
}

// -target limits the rollout to the pools and nodes named; only a targeted pool's boot
// pointer moves; a hold wins over a target.
func TestMakePlanTargets(t *testing.T) {
	p, err := MakePlan(scopeInput([]string{"node.w-1", "node.w-2"}, nil, func(n []model.Node) { n[2].Labels[model.HoldKey] = "" }))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"w-0": "no-op untargeted", "w-1": "update wave 1 steps", "w-2": "no-op held: no reason given (mcpfleet.io/hold)",
		"w-3": "no-op untargeted", "i-0": "no-op untargeted"}
	if d := cmp.Diff(want, nodeSummary(p)); d != "" {
		t.Errorf("-target=node.w-1 -target=node.w-2 (-want +got):\n%s", d)
	}
	if !p.Pools[0].PointerKept || !p.Pools[1].PointerKept || p.Pools[0].Untargeted != 2 {
		t.Errorf("pools: %+v", p.Pools)
	}
	p, err = MakePlan(scopeInput([]string{"pool.infra"}, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := nodeSummary(p); got["i-0"] != "update wave 1 steps" || got["w-0"] != "no-op untargeted" || p.Pools[1].PointerKept || !p.Pools[0].PointerKept {
		t.Errorf("-target=pool.infra: %v, pools %+v", got, p.Pools)
	}
	if p.HasChanges() != true {
		t.Error("a targeted change is a change")
	}
	// Nothing in scope needs anything: no changes, though the untargeted pool re-renders.
	p, err = MakePlan(scopeInput([]string{"node.w-1"}, nil, func(n []model.Node) { n[1].Labels[model.HoldKey] = "x" }))
	if err != nil {
		t.Fatal(err)
	}
	if p.HasChanges() {
		t.Errorf("only a held node targeted: the plan has changes: %v", nodeSummary(p))
	}
}

func TestMakePlanUnknownTargetsAreErrors(t *testing.T) {
	_, err := MakePlan(scopeInput([]string{"node.nope", "pool.gpu", "worker", "node.wroker-1", "pool.wroker"}, []string{"pool.worker", "node.ghost", "node.w3"}, nil))
	if err == nil {
		t.Fatal("unknown targets planned")
	}
	for _, want := range []string{`-target=node.nope: no pool of the configuration selects a node "nope"`,
		`-target=pool.gpu: the configuration has no pool "gpu"`, `-target=worker: "worker" is not an address: want pool.NAME or node.NAME. Did you mean "pool.worker"?`,
		`-target=pool.wroker: the configuration has no pool "wroker". Did you mean "pool.worker"?`,
		`-exclude=node.w3: no pool of the configuration selects a node "w3" in the fleet. Did you mean "node.w-3"?`,
		`-exclude=pool.worker: only nodes can be excluded`, `-exclude=node.ghost: no pool`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
