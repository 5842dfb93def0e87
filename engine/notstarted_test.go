package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state"
)

// Every node apply did not start is named with why (issue 33): the end of apply prints
// each, and says "run mcp apply again" only when another apply could start one.
func TestApplySaysWhyEachNodeWasNotStarted(t *testing.T) {
	t.Run("deferred and stopped", func(t *testing.T) {
		f := newFake(map[string]int{"worker": 4, "infra": 2})
		w, st := newTestWorkspace(t, f)
		f.failNode["worker-0"] = "drain"
		p := planFor(f, map[string]int{"worker": 1, "infra": 1}, rebootSteps())
		for i := range p.Nodes {
			if p.Nodes[i].Name == "infra-1" { // infra-0 took the pool's room when the plan was made
				p.Nodes[i].Deferred, p.Nodes[i].Wave = true, 0
			}
		}
		p.Nodes[0].Condition = "NotReady" // infra-0
		res, _ := w.carryOutPlanned(context.Background(), st, p, ApplyOptions{})
		got := map[string]string{}
		for n, ns := range res.NotStarted {
			got[n] = fmt.Sprintf("%s (held %v)", ns.Why, ns.Held)
		}
		want := map[string]string{
			"infra-1":  "deferred by the plan: no room in pool infra's max_unavailable of 1 when it was made (1 out of service: infra-0) (held false)",
			"worker-1": "pool worker stopped after its failed nodes (held false)",
			"worker-2": "pool worker stopped after its failed nodes (held false)",
			"worker-3": "pool worker stopped after its failed nodes (held false)",
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("why not started (-want +got):\n%s", d)
		}
	})
	t.Run("held after the plan", func(t *testing.T) {
		f := newFake(map[string]int{"worker": 3})
		w, st := newTestWorkspace(t, f)
		p := planFor(f, map[string]int{"worker": 1}, rebootSteps())
		f.fleet.Nodes[1].Labels[model.HoldKey] = "kernel-debug"
		res, _ := w.carryOutPlanned(context.Background(), st, p, ApplyOptions{})
		if ns := res.NotStarted["worker-1"]; !ns.Held || !strings.Contains(ns.Why, "hold") || len(res.NotStarted) != 1 {
			t.Errorf("not started: %+v, want worker-1 held", res.NotStarted)
		}
	})
	t.Run("lock lost", func(t *testing.T) {
		f := newFake(map[string]int{"worker": 3})
		w, st := newTestWorkspace(t, f)
		p := planFor(f, map[string]int{"worker": 1}, rebootSteps())
		ctx, cancel := context.WithCancelCause(context.Background())
		obs := func(e Event) {
			if e.Kind == EventNodeDone {
				cancel(fmt.Errorf("%w: removed", state.ErrLockLost))
			}
		}
		res, _ := w.carryOutPlanned(ctx, st, p, ApplyOptions{Observer: obs})
		if len(res.NotStarted) != 2 {
			t.Fatalf("not started %+v, want 2 nodes", res.NotStarted)
		}
		for n, ns := range res.NotStarted {
			if !strings.HasPrefix(ns.Why, "apply stopped: ") || !strings.Contains(ns.Why, "removed") || ns.Held {
				t.Errorf("%s: %+v, want the lost lock named", n, ns)
			}
		}
	})
}
