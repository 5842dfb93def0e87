package engine

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state"
)

// publisher is a state backend whose rendered store the agents fetch from
// (state.RenderedPublisher), recording what refresh publishes there, or refusing it.
type publisher struct {
	state.Backend
	fail      error
	mu        sync.Mutex
	published []string
}

func (p *publisher) PublishRendered(_ context.Context, r *model.Rendered) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.published = append(p.published, r.Name)
	return p.fail
}

// TestObservationPublishesTheTargetFirst: before the nodes are asked what they carry, each
// pool's target is published, once, to the state's rendered store; when that is refused
// (read-only credentials), the nodes are planned without an observation, the refusal their
// reason, and nothing is adopted.
func TestObservationPublishesTheTargetFirst(t *testing.T) {
	dir := quickstart(t)
	w := load(t, dir)
	if _, err, _ := apply(t, w, PlanOptions{}, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"infra-0", "infra-1", "worker-0", "worker-1", "worker-2", "worker-3"} {
		setNodeJSON(t, filepath.Join(dir, "fleet/nodes", n, "node.json"), "current_config", "rendered-foreign-"+n)
	}
	pub := &publisher{Backend: w.Backend}
	w.Backend = pub
	_, pf := planned(t, w, PlanOptions{})
	var targets []string
	for _, r := range w.Rendered {
		targets = append(targets, r.Name)
	}
	slices.Sort(targets)
	slices.Sort(pub.published)
	if !slices.Equal(pub.published, targets) {
		t.Errorf("published %v, want each pool's target once: %v", pub.published, targets)
	}
	if n := countAction(pf, "adopt"); n != 6 {
		t.Errorf("%d nodes to adopt, want 6", n)
	}
	pub.fail, pub.published = errors.New("secrets is forbidden"), nil
	_, pf = planned(t, w, PlanOptions{})
	if n := countAction(pf, "adopt"); n != 0 {
		t.Errorf("%d nodes to adopt with the target unpublished, want none", n)
	}
	for _, n := range pf.File.Rollout.Nodes {
		if !slices.ContainsFunc(n.Warnings, func(w string) bool { return strings.Contains(w, "secrets is forbidden") }) {
			t.Errorf("node %s: warnings %q, want the refusal named", n.Name, n.Warnings)
		}
	}
}

func countAction(pf *Plan, action string) int {
	n := 0
	for _, np := range pf.File.Rollout.Nodes {
		if string(np.Action) == action {
			n++
		}
	}
	return n
}
