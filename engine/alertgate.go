package engine

import (
	"context"
	"fmt"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// The alert gate (model.AlertGate): a pool-level gate on the alerts firing at a Prometheus
// server, as kured's. Before each node of the pool starts, apply waits up to the gate's
// timeout for no counted alert to fire, and else does not start it nor the pool's nodes
// after it; once a node finished, one look: a counted alert firing then stops the pool's
// rollout (docs/decisions.md, "Alert gate"). Prometheus not answering holds the pool as a
// firing alert does — the gate fails closed — but is an error (exit 1), not a wait.

// holding asks the gate's Prometheus which alerts fire and returns those the gate counts.
func (a *applier) holding(ctx context.Context, g model.AlertGate) ([]model.Alert, error) {
	if a.w.Alerts == nil {
		return nil, fmt.Errorf("this mcp cannot ask Prometheus at %s (no alert source was built into it)", g.PrometheusURL)
	}
	firing, err := a.w.Alerts.Firing(ctx, g.PrometheusURL)
	if err != nil {
		return nil, err
	}
	return g.Select(firing), nil
}

// alertsAfter looks at the gate once node has finished, when nodes of the pool are left to
// start: a counted alert firing, or Prometheus not answering, stops the pool's rollout
// (the node itself stays updated: its own health gates passed).
func (r *poolRun) alertsAfter(node string) {
	g := r.pp.AlertGate
	if g == nil || r.ctx.Err() != nil || !r.moreToStart() {
		return
	}
	holding, err := r.a.holding(r.ctx, *g)
	if err == nil && len(holding) == 0 || r.ctx.Err() != nil {
		return
	}
	why := fmt.Sprintf("%s, after node %s finished", planner.AlertWords(*g, holding, err), node)
	r.mu.Lock()
	r.stopped = true
	if r.alertStop == nil {
		r.alertStop = &planner.Verdict{Reason: why, Failed: err != nil}
	}
	r.mu.Unlock()
	r.a.emit(Event{Kind: EventAlertsFiring, Pool: r.pp.Name, Node: node, Alerts: holding,
		Reason: why + ": no more nodes of the pool start"})
}

// moreToStart says whether nodes of the pool are left to start.
func (r *poolRun) moreToStart() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.starts < r.total
}
