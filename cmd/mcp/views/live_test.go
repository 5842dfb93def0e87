package views

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// The lines' text, from the engine's events (the redrawing itself is mpb's, read back from
// a real terminal in acceptance/live_test.go).
func TestLiveLines(t *testing.T) {
	plan := &planner.Plan{Nodes: []planner.NodePlan{
		{Name: "w-0", Pool: "worker", Action: planner.NodeUpdate},
		{Name: "w-1", Pool: "worker", Action: planner.NodeUpdate},
		{Name: "w-2", Pool: "worker", Action: planner.NodeUpdate},
		{Name: "w-3", Pool: "worker", Action: planner.NodeUpdate, Deferred: true},
		{Name: "i-0", Pool: "infra", Action: planner.NodeNoOp},
	}}
	var out bytes.Buffer
	l := NewLiveProgress(&out, false, plan)
	at := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return at.Add(7 * time.Second) }
	if l.pool["infra"] != nil {
		t.Error("a line for pool infra, which the plan changes nothing in")
	}
	drain := model.Step{Kind: model.StepDrain}
	for _, e := range []engine.Event{
		{Kind: engine.EventStepStart, Node: "w-0", Pool: "worker", Step: drain, Time: at},
		{Kind: engine.EventNodeDone, Node: "w-0", Pool: "worker", Time: at},
		{Kind: engine.EventStepStart, Node: "w-1", Pool: "worker", Step: drain, Time: at},
		{Kind: engine.EventChecking, Node: "w-1", Pool: "worker", Time: at.Add(2 * time.Second)},
		{Kind: engine.EventWaiting, Node: "w-2", Pool: "worker", Reason: "max_unavailable 1: w-1 (updating)", Time: at.Add(2 * time.Second)},
	} {
		l.Event(e)
	}
	lp := l.pool["worker"]
	if got, want := l.poolStatus(lp), "1/3 done, 1 updating, waiting 5s before node.w-2: max_unavailable 1: w-1 (updating)"; got != want {
		t.Errorf("pool line:\n got %q\nwant %q", got, want)
	}
	if got, want := l.nodeStatus(l.node["w-1"]), "  node.w-1: health gates (5s)"; got != want {
		t.Errorf("node line:\n got %q\nwant %q", got, want)
	}
	l.Event(engine.Event{Kind: engine.EventNodeFailed, Node: "w-1", Pool: "worker", Err: errors.New(`health gate "app" did not pass`)})
	l.Event(engine.Event{Kind: engine.EventPoolStopped, Pool: "worker"})
	if got, want := l.poolStatus(lp), "1/3 done, 1 failed, stopped"; got != want {
		t.Errorf("pool line after the failure:\n got %q\nwant %q", got, want)
	}
	if len(l.node) != 0 {
		t.Errorf("lines left for finished nodes: %v", l.node)
	}
	l.Summary(ApplySummary{Updated: 1, Failed: 1, Deferred: 2, Failures: []string{"node w-1: failed"}})
	if !strings.Contains(out.String(), "Apply failed. Nodes: 1 updated, 1 failed, 2 not started.") {
		t.Errorf("no summary after the lines:\n%s", out.String())
	}
}
