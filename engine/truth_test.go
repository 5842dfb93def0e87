package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/providers"
	"github.com/mcpfleet/mcp/state"
)

// gatedFake is a fakeProvider whose health gates do not answer until their context ends,
// as when the API server stops answering (the real apiserver case of issue 21: the Lease
// lost while a node's gates were being watched).
type gatedFake struct {
	*fakeProvider
	gating  chan string // a node's gate began
	marked  []string    // nodes marked Degraded
	release chan struct{}
}

func (g *gatedFake) WaitHealthy(ctx context.Context, node string, _ time.Duration) error {
	g.gating <- node
	select {
	case <-ctx.Done():
		return &providers.GateError{Gate: providers.GateReady, Output: "not seen Ready when apply stopped waiting"}
	case <-g.release:
		return &providers.GateError{Gate: providers.GateReady, Output: "node is not Ready (NotReady)"}
	}
}

func (g *gatedFake) NodeAddress(context.Context, string) (string, error) { return "127.0.0.1", nil }

func (g *gatedFake) MarkDegraded(_ context.Context, node, _ string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.marked = append(g.marked, node)
	return nil
}

// A node whose steps all finished is never "failed" because apply stopped waiting for its
// gates: it is unconfirmed, not marked Degraded, its journal entry stays open for the next
// apply to check its gates again, and the apply's outcome is not complete.
func TestApplyStoppedDuringGatesLeavesNodesUnconfirmed(t *testing.T) {
	f := &gatedFake{fakeProvider: newFake(map[string]int{"worker": 2}), gating: make(chan string, 2), release: make(chan struct{})}
	w, st := newTestWorkspace(t, f.fakeProvider)
	w.Provider = f
	p := planFor(f.fakeProvider, map[string]int{"worker": 1}, rebootSteps())
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		<-f.gating // the first node's steps are done, its gate waits
		cancel(fmt.Errorf("%w: the Lease was not renewed", state.ErrLockLost))
	}()
	res, err := w.carryOutPlanned(ctx, st, p, ApplyOptions{})
	if len(res.Failed) != 0 || len(res.Unconfirmed) != 1 || len(res.Updated) != 0 {
		t.Fatalf("failed %v, unconfirmed %v, updated %v: want the gated node unconfirmed", res.Failed, res.Unconfirmed, res.Updated)
	}
	node := res.Unconfirmed[0]
	if !slices.Equal(f.trace[node], []string{"cordon", "drain", "write /etc/a", "reboot", "verify", "uncordon"}) {
		t.Errorf("%s ran %v", node, f.trace[node])
	}
	if len(f.marked) != 0 {
		t.Errorf("nodes marked Degraded for a gate nobody finished watching: %v", f.marked)
	}
	if after, _ := w.Backend.Read(context.Background()); after.Journal[node].Target == "" {
		t.Errorf("%s's journal entry was closed: the next apply would not check its gates", node)
	}
	if err == nil || !strings.Contains(err.Error(), "health gates were not confirmed") || Outcome(res, err) == Complete {
		t.Errorf("error %v, outcome %v", err, Outcome(res, err))
	}
	// The same gate answering "not Ready" is a failure, and the node is marked.
	f2 := &gatedFake{fakeProvider: newFake(map[string]int{"worker": 1}), gating: make(chan string, 1), release: make(chan struct{})}
	close(f2.release)
	w2, st2 := newTestWorkspace(t, f2.fakeProvider)
	w2.Provider = f2
	res, err = w2.carryOutPlanned(context.Background(), st2, planFor(f2.fakeProvider, map[string]int{"worker": 1}, rebootSteps()), ApplyOptions{})
	if len(res.Failed) != 1 || !slices.Equal(f2.marked, []string{"worker-0"}) || Outcome(res, err) != Failed {
		t.Errorf("a gate that answered not Ready: failed %v, marked %v, err %v", res.Failed, f2.marked, err)
	}
}
