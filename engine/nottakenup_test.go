package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

// silentAgent is a provider whose node executors never take up what is handed to them, as
// an agent that is not running: RunNodeSteps says so while it waits, and gives up.
type silentAgent struct{ *fakeProvider }

func (s silentAgent) RunNodeSteps(ctx context.Context, node string, _, target *model.Rendered, _ []model.Step, _ func(model.Step)) error {
	providers.WaitNote(ctx, "the agent has not taken up update u1 to "+target.Name)
	return fmt.Errorf("node %s: the agent did not finish update u1 within 30m0s (the agent has not taken up the update; %w; %w)",
		node, providers.ErrNotTakenUp, providers.ErrOutcomeUnknown)
}

// TestAgentThatNeverTakesUpTheUpdate: apply says, while it waits, what it waits for; the
// node stays cordoned (the hand-over stays), and the error does not call it changed
// part-way — nothing on it started.
func TestAgentThatNeverTakesUpTheUpdate(t *testing.T) {
	f := newFake(map[string]int{"worker": 1})
	w, st := newTestWorkspace(t, f)
	w.Provider = silentAgent{f}
	var mu sync.Mutex
	var notes []string
	p := planFor(f, map[string]int{"worker": 1}, rebootSteps())
	_, err := w.carryOutPlanned(context.Background(), st, p, ApplyOptions{Observer: func(e Event) {
		if e.Kind == EventNodeWaiting {
			mu.Lock()
			notes = append(notes, e.Node+": "+e.Reason)
			mu.Unlock()
		}
	}})
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "worker-0: the agent has not taken up update u1") {
		t.Errorf("notes while waiting: %q, want the one the provider gave", notes)
	}
	if err == nil || strings.Contains(err.Error(), "part-way") || !strings.Contains(err.Error(), "nothing on it started") {
		t.Errorf("error %v; want it to say nothing started, not that the node changed part-way", err)
	}
	if tr := f.trace["worker-0"]; len(tr) != 2 || tr[0] != "cordon" || tr[1] != "drain" {
		t.Errorf("worker-0 trace %v, want cordon and drain only: it stays cordoned while the hand-over stands", tr)
	}
}
