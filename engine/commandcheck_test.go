package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

// checkingProvider is the fake fleet with command checks: fail says which node's runs exit
// 1, publishErr fails PublishChecks.
type checkingProvider struct {
	*fakeProvider
	fail       string
	publishErr error

	mu        sync.Mutex
	published []map[string][]model.HealthCheck
	runs      []string // node/pool/check
}

func (c *checkingProvider) PublishChecks(_ context.Context, checks map[string][]model.HealthCheck) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.published = append(c.published, checks)
	if len(c.fakeProvider.trace) > 0 {
		return errors.New("published after a node was touched")
	}
	return c.publishErr
}

func (c *checkingProvider) RunCheck(_ context.Context, node, pool string, check model.HealthCheck) (model.CheckResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.runs = append(c.runs, node+"/"+pool+"/"+check.Name)
	if node == c.fail {
		return model.CheckResult{ExitCode: 1, Output: "/etc/broken exists"}, nil
	}
	return model.CheckResult{}, nil
}

var brokenCheck = model.HealthCheck{Name: "not-broken", Command: []string{"/bin/sh", "-c", "test ! -e /etc/broken"}, Timeout: 1}

// TestApplyCommandCheckGatesEachNode: apply publishes the pools' checks before it touches
// a node, runs the pool's command check on each node after its steps, and a node whose
// check fails fails with the check's name and output, stopping its pool.
func TestApplyCommandCheckGatesEachNode(t *testing.T) {
	f := &checkingProvider{fakeProvider: newFake(map[string]int{"worker": 3, "infra": 1}), fail: "worker-1"}
	w, st := newTestWorkspace(t, f.fakeProvider)
	w.Provider = f
	p := planFor(f.fakeProvider, map[string]int{"worker": 1, "infra": 1}, rebootSteps())
	p.Pools[1].HealthChecks = []model.HealthCheck{brokenCheck} // worker (pools sorted: infra, worker)
	res, err := w.carryOutPlanned(context.Background(), st, p, ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), `node worker-1: health gate "not-broken" did not pass: ["/bin/sh" "-c" "test ! -e /etc/broken"]: exit 1: /etc/broken exists`) {
		t.Fatalf("apply: %v; want worker-1 failed by its command check", err)
	}
	if d := cmp.Diff([]map[string][]model.HealthCheck{{"infra": nil, "worker": {brokenCheck}}}, f.published); d != "" {
		t.Errorf("published (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"worker-0/worker/not-broken", "worker-1/worker/not-broken"}, f.runs); d != "" {
		t.Errorf("runs (-want +got):\n%s", d)
	}
	// The pools run side by side: their nodes are listed in the order the pools finished.
	if d := cmp.Diff([]string{"infra-0", "worker-0"}, slices.Sorted(slices.Values(res.Updated))); d != "" {
		t.Errorf("updated (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"worker-2"}, res.Skipped); d != "" {
		t.Errorf("skipped (-want +got):\n%s", d)
	}
}

// TestApplyStopsWhenChecksCannotBePublished: a provider that cannot store the checks (the
// apply identity may not write them) stops apply before anything changes, saying so.
func TestApplyStopsWhenChecksCannotBePublished(t *testing.T) {
	f := &checkingProvider{fakeProvider: newFake(map[string]int{"worker": 2}),
		publishErr: errors.New(`secrets "mcp-health-checks" is forbidden`)}
	w, st := newTestWorkspace(t, f.fakeProvider)
	w.Provider = f
	p := planFor(f.fakeProvider, map[string]int{"worker": 1}, rebootSteps())
	p.Pools[0].HealthChecks = []model.HealthCheck{brokenCheck}
	_, err := w.carryOutPlanned(context.Background(), st, p, ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), `publishing the pools' command health checks: secrets "mcp-health-checks" is forbidden`) {
		t.Fatalf("apply: %v; want it stopped on the checks", err)
	}
	if len(f.trace) != 0 || len(f.runs) != 0 {
		t.Errorf("nodes touched: %v, checks run: %v", f.trace, f.runs)
	}
	st2, err := w.Backend.Read(context.Background())
	if err != nil || st2.Serial != 0 {
		t.Errorf("state serial %d (%v): the state was written", st2.Serial, err)
	}
}
