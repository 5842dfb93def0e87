package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

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

// alertWords says what a look at the gate found: the counted alerts firing, or why
// Prometheus could not be asked.
func alertWords(g model.AlertGate, holding []model.Alert, err error) string {
	if err != nil {
		return "alert gate: " + err.Error()
	}
	noun := "alerts"
	if len(holding) == 1 {
		noun = "alert"
	}
	return fmt.Sprintf("alert gate: %d %s firing at %s: %s", len(holding), noun, g.PrometheusURL, model.DescribeAlerts(holding))
}

// alertGateError: the pool's alert gate holds its next node; runPool names the nodes left
// (rest). Failed is true when Prometheus could not be asked: an error, where firing
// alerts only leave the nodes not started.
type alertGateError struct {
	why    string
	failed bool
}

func (e *alertGateError) Error() string { return e.why }

// rest is the error for the pool's nodes left not started.
func (e *alertGateError) rest(pool string, nodes []planner.NodePlan) error {
	if e.failed {
		return restNotStarted(pool, nodes, e.why)
	}
	return poolNotStarted(pool, nodes, e.why)
}

// waitAlerts returns once no alert the pool's gate counts fires, asking every AlertPoll
// up to the gate's timeout; then an *alertGateError says what held the node. A node of
// the pool that finishes meanwhile may stop the pool (alertsAfter): errHalted.
func (r *poolRun) waitAlerts(node string) error {
	g := r.pp.AlertGate
	if g == nil {
		return nil
	}
	deadline := time.Now().Add(g.Timeout)
	said := ""
	for {
		if r.halted() {
			return errHalted
		}
		holding, err := r.a.holding(r.ctx, *g)
		if r.ctx.Err() != nil {
			return r.ctx.Err()
		}
		if err == nil && len(holding) == 0 {
			r.clearAt = time.Now()
			return nil
		}
		why := alertWords(*g, holding, err)
		wait := min(r.a.opts.AlertPoll, time.Until(deadline))
		if wait <= 0 {
			return &alertGateError{failed: err != nil, why: fmt.Sprintf("%s (%s)", why, heldFor(g.Timeout))}
		}
		if why != said {
			r.a.emit(Event{Kind: EventWaiting, Pool: r.pp.Name, Node: node, Alerts: holding,
				Reason: fmt.Sprintf("%s: waiting until %s at most", why, deadline.Format("15:04:05 MST"))})
			said = why
		}
		select {
		case <-r.ctx.Done():
			return r.ctx.Err()
		case <-time.After(wait):
		}
	}
}

// heldFor says how long the gate held a node that is left not started.
func heldFor(timeout time.Duration) string {
	if timeout == 0 {
		return "looked once: the alert_gate's timeout is 0s"
	}
	return "still after " + model.ShortDuration(timeout) + ", the alert_gate's timeout"
}

// alertsClear says, once node has its slot, whether the gate still lets it start: a wait
// for room may have been long. A look made within AlertPoll is not made again.
func (r *poolRun) alertsClear() bool {
	g := r.pp.AlertGate
	if g == nil || time.Since(r.clearAt) < r.a.opts.AlertPoll {
		return true
	}
	holding, err := r.a.holding(r.ctx, *g)
	if err != nil || len(holding) > 0 {
		return false // waitAlerts looks again, and says why
	}
	r.clearAt = time.Now()
	return true
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
	why := fmt.Sprintf("%s, after node %s finished", alertWords(*g, holding, err), node)
	r.mu.Lock()
	r.stopped = true
	if r.alertStop == nil {
		r.alertStop = &alertGateError{why: why, failed: err != nil}
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

// stoppedByAlerts is what alertsAfter stopped the pool for (nil: it did not).
func (r *poolRun) stoppedByAlerts() *alertGateError {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.alertStop
}

// asAlertGate finds an *alertGateError in err.
func asAlertGate(err error) (*alertGateError, bool) {
	var ag *alertGateError
	ok := errors.As(err, &ag)
	return ag, ok
}
