package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/providers/local"
)

// recorder collects an apply's events.
type recorder struct {
	mu  sync.Mutex
	evs []Event
}

func (r *recorder) see(e Event) { r.mu.Lock(); r.evs = append(r.evs, e); r.mu.Unlock() }

func (r *recorder) of(kind EventKind) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, e := range r.evs {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// agentRuns counts, per node, the times its agent took up an update (the local fleet's
// event log).
func agentRuns(t *testing.T, dir string) map[string]int {
	t.Helper()
	logs, err := local.ReadEvents(dir + "/fleet")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for node, evs := range logs {
		for _, e := range evs {
			if e.Kind == local.EventWorking {
				out[node]++
			}
		}
	}
	return out
}

// nodePlan is node's part of plan.
func nodePlan(t *testing.T, plan *planner.Rollout, node string) planner.NodePlan {
	t.Helper()
	for _, n := range plan.Nodes {
		if n.Name == node {
			return n
		}
	}
	t.Fatalf("node %s is not in the plan", node)
	return planner.NodePlan{}
}

// A node's agent reports Done on its target between the plan apply showed and its first
// node (here: worker-2's agent finishing that very update, run by hand): under the state
// lock apply derives the plan again, finds it does no more than the plan shown — worker-2
// dropped out, the others' steps as shown — and carries it out: the five other nodes are
// updated, worker-2 is not worked on again, and apply says why it left it.
func TestFreshPlanGoesOnWhenANodeReachedItsTarget(t *testing.T) {
	dir := quickstart(t)
	w := load(t, dir)
	ctx := context.Background()
	st, p := planned(t, w, PlanOptions{})
	n := nodePlan(t, p.File.Rollout, "worker-2")
	if !starts(&n) {
		t.Fatalf("worker-2 is not started by the plan: %+v", n)
	}
	var onNode []model.Step
	for _, s := range n.Steps {
		if s.Kind.OnNode() {
			onNode = append(onNode, s)
		}
	}
	if err := w.Provider.(*local.Provider).RunNodeSteps(ctx, "worker-2", nil, p.File.Rollout.Rendered[n.To], onNode, func(model.Step) {}); err != nil {
		t.Fatal(err)
	}
	var rec recorder
	_, res, err := w.Apply(ctx, st, p, ApplyOptions{BudgetPoll: 20 * time.Millisecond, Observer: rec.see})
	if Outcome(res, err) != Complete {
		t.Fatalf("outcome %v, err %v; want the rest of the plan done", Outcome(res, err), err)
	}
	updated := slices.Sorted(slices.Values(res.Updated))
	if want := []string{"infra-0", "infra-1", "worker-0", "worker-1", "worker-3"}; !slices.Equal(updated, want) {
		t.Errorf("updated %v, want %v", updated, want)
	}
	for node, runs := range agentRuns(t, dir) {
		if runs != 1 {
			t.Errorf("node %s: its agent took up %d updates, want 1", node, runs)
		}
	}
	since := rec.of(EventSincePlan)
	if len(since) != 1 || since[0].Node != "worker-2" || !strings.Contains(since[0].Reason, "runs "+n.To) {
		t.Errorf("events since the plan: %+v; want one, for worker-2 at %s", since, n.To)
	}
}

// A node the plan shown did not start (on hold then) that the plan derived again would
// start (the hold lifted since) is more than was shown: nothing starts, and the refusal
// names the node.
func TestFreshPlanIsRefusedWhenANodeWouldBeAdded(t *testing.T) {
	dir := quickstart(t)
	const hold = "mcpfleet.io/hold"
	editNode(t, dir, "worker-3", func(m map[string]any) { m["labels"].(map[string]any)[hold] = "until the disk is swapped" })
	w := load(t, dir)
	ctx := context.Background()
	st, p := planned(t, w, PlanOptions{})
	if n := nodePlan(t, p.File.Rollout, "worker-3"); n.Held == "" {
		t.Fatalf("worker-3 is not held by the plan: %+v", n)
	}
	editNode(t, dir, "worker-3", func(m map[string]any) { delete(m["labels"].(map[string]any), hold) })
	_, res, err := w.Apply(ctx, st, p, ApplyOptions{BudgetPoll: 20 * time.Millisecond})
	if Outcome(res, err) != Incomplete || !errors.Is(err, errChangedSincePlan) || len(res.Updated) != 0 {
		t.Fatalf("outcome %v, updated %v, err %v; want it refused, nothing started", Outcome(res, err), res, err)
	}
	if !strings.Contains(err.Error(), "node.worker-3 would now be started") || !strings.Contains(err.Error(), "which the plan shown held") {
		t.Errorf("the refusal does not name the node added: %v", err)
	}
	if got := worked(t, dir); len(got) != 0 {
		t.Errorf("the refused plan worked on %v", got)
	}
}

// moreThanShown: a plan derived again does no more than the plan shown when nodes only
// drop out, or only some of a node's steps are done since (what is left is the rest of
// those shown, in order; the node runs its target or the config shown); a node added, a
// node's steps grown, changed or reordered, its target, the config it runs or its
// readiness changed, a node the plan deferred now started, or a pool's pause changed is
// more, and named.
func TestMoreThanShown(t *testing.T) {
	step := func(k model.StepKind, target string) model.Step {
		return model.Step{Kind: k, Target: target, Reason: "why"}
	}
	write, restart := step(model.StepWrite, "/etc/chrony.conf"), step(model.StepRestart, "chronyd.service")
	cordon, reboot := step(model.StepCordon, ""), step(model.StepReboot, "")
	node := func(name string, steps ...model.Step) planner.NodePlan {
		return planner.NodePlan{Name: name, Pool: "worker", Action: planner.NodeUpdate, From: "rendered-worker-a", To: "rendered-worker-b", Steps: steps}
	}
	pool := planner.PoolPlan{Name: "worker", Rendered: "rendered-worker-b", Previous: "rendered-worker-a", ReRendered: true, Size: 3, MaxUnavailable: 1, Slots: 1, Updates: 3, Waves: 3}
	shown := &planner.Rollout{Pools: []planner.PoolPlan{pool}, Nodes: []planner.NodePlan{
		node("w0", write, restart), node("w1", write, restart), node("w2", write, restart),
	}}
	derive := func(f func(r *planner.Rollout)) *planner.Rollout {
		r := &planner.Rollout{Pools: slices.Clone(shown.Pools), Nodes: slices.Clone(shown.Nodes)}
		f(r)
		return r
	}
	for _, tc := range []struct {
		name string
		f    func(r *planner.Rollout)
		want string // "" does no more; else in the message
	}{
		{"same", func(*planner.Rollout) {}, ""},
		{"a node at its target drops out, the budget counted again", func(r *planner.Rollout) {
			r.Nodes[1] = planner.NodePlan{Name: "w1", Pool: "worker", Action: planner.NodeNoOp, From: "rendered-worker-b", To: "rendered-worker-b"}
			r.Pools[0].Updates, r.Pools[0].Waves, r.Pools[0].Slots = 2, 2, 2
		}, ""},
		{"a node gone from the fleet", func(r *planner.Rollout) { r.Nodes = r.Nodes[:2] }, ""},
		{"a node deferred now", func(r *planner.Rollout) { r.Nodes[2].Deferred = true }, ""},
		{"a node added", func(r *planner.Rollout) { r.Nodes = append(r.Nodes, node("w3", write, restart)) }, "node.w3 would now be started"},
		{"steps grown", func(r *planner.Rollout) { r.Nodes[0].Steps = []model.Step{write, restart, reboot} }, "node.w0: steps"},
		{"steps done since", func(r *planner.Rollout) { r.Nodes[0].Steps = []model.Step{restart} }, ""},
		{"an earlier update to the target finished since, its last step left", func(r *planner.Rollout) {
			r.Nodes[1].Steps, r.Nodes[1].From = []model.Step{restart}, "rendered-worker-b"
		}, ""},
		{"a step added amid those shown", func(r *planner.Rollout) { r.Nodes[0].Steps = []model.Step{cordon, write, restart} }, "node.w0: steps"},
		{"a step twice", func(r *planner.Rollout) { r.Nodes[0].Steps = []model.Step{write, write} }, "node.w0: steps"},
		{"a step changed", func(r *planner.Rollout) { r.Nodes[0].Steps = []model.Step{step(model.StepWrite, "/etc/motd"), restart} }, "node.w0: steps"},
		{"runs another config now", func(r *planner.Rollout) { r.Nodes[2].From = "rendered-worker-z" }, "node.w2: it runs rendered-worker-z now, rendered-worker-a when"},
		{"steps reordered", func(r *planner.Rollout) { r.Nodes[0].Steps = []model.Step{restart, write} }, "node.w0: steps"},
		{"another target", func(r *planner.Rollout) { r.Nodes[2].To = "rendered-worker-c" }, "node.w2: to"},
		{"another action", func(r *planner.Rollout) { r.Nodes[2].Action = planner.NodeResume }, "node.w2: action"},
		{"NotReady now", func(r *planner.Rollout) { r.Nodes[2].NotReady = true }, "node.w2: not_ready"},
		{"a reason reworded", func(r *planner.Rollout) {
			r.Nodes[0].Steps = []model.Step{write, step(model.StepRestart, "chronyd.service")}
			r.Nodes[0].Steps[1].Reason = "other words"
		}, ""},
		{"a pool paused since", func(r *planner.Rollout) { r.Pools[0].Paused = true }, "pool.worker: paused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := moreThanShown(shown, derive(tc.f))
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("moreThanShown = %q, want %q", got, tc.want)
			}
		})
	}
	paused := derive(func(r *planner.Rollout) { r.Pools[0].Paused = true })
	if got := moreThanShown(paused, shown); !strings.Contains(got, "pool.worker: paused") {
		t.Errorf("a pool the plan shown kept paused (its pointer kept), unpaused now: %q", got)
	}
	deferred := derive(func(r *planner.Rollout) { r.Nodes[2].Deferred = true })
	if got := moreThanShown(deferred, shown); !strings.Contains(got, "node.w2 would now be started") || !strings.Contains(got, "the plan shown deferred") {
		t.Errorf("a node the plan shown deferred, started now: %q", got)
	}
}
