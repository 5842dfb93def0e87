package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// Apply records, at the engine's clock, when each node reached its target; a later apply's
// refresh extends the run of a node still on it and marks one that went Degraded, in the
// state it writes.
func TestApplyRecordsWhereConfigsRan(t *testing.T) {
	f := newFake(map[string]int{"worker": 2})
	w, st := newTestWorkspace(t, f)
	w.Desired = &model.Desired{Pools: []model.Pool{{Name: "worker", NodeSelector: map[string]string{"node-role.kubernetes.io/worker": ""}}}}
	p := planFor(f, map[string]int{"worker": 2}, rebootSteps())
	target := p.Pools[0].Rendered
	tr := newClockTrace("2026-12-07T10:00:00Z")
	t0 := tr.clock.Now()
	if _, err := w.carryOutPlanned(context.Background(), st, p, tr.opts()); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"worker-0", "worker-1"} {
		if r := st.Ran[target].Nodes[n]; !r.Since.Equal(t0) || r.Soaked() != 0 || r.Unhealthy != "" {
			t.Fatalf("after the apply, %s on %s: %+v; want since %s", n, target, r, t0)
		}
	}

	tr.clock.now = t0.Add(time.Hour)
	f.fleet.Nodes[1].State, f.fleet.Nodes[1].Reason = model.StateDegraded, "chronyd failed"
	fleet, _ := f.Refresh(context.Background())
	later := &Plan{File: saved(t, w, st, &planner.Rollout{}), Observed: &Observed{Nodes: fleet.Nodes}}
	if _, _, err := w.carryOut(context.Background(), st, later, tr.opts()); err != nil {
		t.Fatal(err)
	}
	written, err := w.Backend.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	runs := written.Ran[target].Nodes
	if runs["worker-0"].Soaked() != time.Hour || runs["worker-0"].Unhealthy != "" {
		t.Errorf("worker-0, still on %s an hour later: %+v; want 1h soaked, healthy", target, runs["worker-0"])
	}
	if runs["worker-1"].Unhealthy != "went Degraded: chronyd failed" || runs["worker-1"].Soaked() != 0 {
		t.Errorf("worker-1, Degraded an hour later: %+v; want it unhealthy, its run not extended", runs["worker-1"])
	}
}

// A node that fails its health gates on its target marks the target unhealthy there; the
// node that passed is recorded healthy.
func TestApplyRecordsAFailedHealthGate(t *testing.T) {
	f := &checkingProvider{fakeProvider: newFake(map[string]int{"worker": 2}), fail: "worker-1"}
	w, st := newTestWorkspace(t, f.fakeProvider)
	w.Provider = f
	p := planFor(f.fakeProvider, map[string]int{"worker": 2}, rebootSteps())
	p.Pools[0].HealthChecks = []model.HealthCheck{brokenCheck}
	if _, err := w.carryOutPlanned(context.Background(), st, p, ApplyOptions{}); err == nil {
		t.Fatal("apply: no error; want worker-1 failed by its health gate")
	}
	runs := st.Ran[p.Pools[0].Rendered].Nodes
	if runs["worker-0"].Unhealthy != "" || !strings.Contains(runs["worker-1"].Unhealthy, `failed its health gates: node worker-1: health gate "not-broken" did not pass`) {
		t.Errorf("records after a failed health gate: %+v", runs)
	}
}
