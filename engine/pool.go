package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

type poolResult struct {
	ApplyResult
	errs []error
	// stoppedBy says what failure stopped the pool's rollout ("" none): max_failures
	// nodes failed (the first one's error), or alerts fired after a node (on_failure
	// reads it); firstFailure is the first failed node's error.
	stoppedBy, firstFailure string
}

// reached records a node that reached its target: adopted when its plan only recorded it.
func (pr *poolResult) reached(n planner.NodePlan) {
	if n.Action == planner.NodeAdopt {
		pr.Adopted = append(pr.Adopted, n.Name)
		return
	}
	pr.Updated = append(pr.Updated, n.Name)
}

// poolRun is one pool's part of an apply: it starts the pool's nodes in plan order, each
// once the pool's gates let it (planner.Gates, asked by admit: canaries first and alone,
// then a soak; an open window; no alert firing; no hold; no other apply's claim; room in
// the budget, counted again from a fresh observation), and keeps what the gates ask after
// of the run: failed nodes, soaks, canaries running.
type poolRun struct {
	a       *applier
	ctx     context.Context
	pp      planner.PoolPlan
	members []string // the pool's nodes, as the plan lists them
	windows []model.Window
	global  chan struct{}
	freed   chan struct{} // a node of the pool finished, or its soak ended
	done    chan struct{} // closed when the pool's run ends

	hadWindow bool         // a window of the pool was seen open (window gate): later closings are bounded
	alerts    alertsLooked // the alert gate's last answer (admit's goroutine only)

	total int // the nodes runPool is to start

	mu       sync.Mutex
	busy     map[string]string // started by this apply and not finished, or soaking: why
	failures int
	stopped  bool // max_failures nodes failed, a canary did, or alerts fired after a node
	// canaryFailed: a canary node failed, which stops the pool whatever max_failures says
	// (the canary gate asks canary.failed; this is for on_failure, revert.go).
	canaryFailed bool
	starts       int // nodes started
	canary       canaryRun
	// alertStop: alerts fired (or Prometheus did not answer) after a node finished.
	alertStop *planner.Verdict
	pr        poolResult
}

// canaryRun is what the canary gate asks of the run: the canary nodes started, how many
// still run, and the soak after them.
type canaryRun struct {
	started []string
	running int
	// turned: the first of the others asked after every canary ended; failed: one had.
	turned, failed bool
	soakUntil      time.Time
	soakWhy        string
}

// runPool starts the pool's nodes in plan order, each once admit lets it, and returns
// what became of them. A node the gates skip (a hold, another apply's claim) is not
// started and the pool goes on; one they stop ends the pool's rollout, its nodes left not
// started. Failed nodes stop new starts once they reach max_failures (any failed canary
// does).
func (a *applier) runPool(ctx context.Context, pp planner.PoolPlan, nodes []planner.NodePlan, global chan struct{}) poolResult {
	r := &poolRun{a: a, ctx: ctx, pp: pp, global: global, freed: make(chan struct{}, 1), done: make(chan struct{}),
		busy: map[string]string{}, windows: a.windows(pp.Name), total: len(nodes)}
	defer close(r.done)
	for _, n := range a.plan.Nodes {
		if n.Pool == pp.Name {
			r.members = append(r.members, n.Name)
		}
	}
	lane := r.stageAhead(nodes)
	var wg sync.WaitGroup
	for i, n := range nodes {
		v := r.admit(n, len(nodes)-i)
		switch {
		case v.Kind == planner.Skip && v.Held:
			r.held(n.Name, v.Reason)
			continue
		case v.Kind == planner.Skip:
			r.claimed(n.Name, notStarted(&claimedError{n.Name, v.Reason}))
			continue
		case !v.Passes():
			r.skip(nodes[i:], r.stopErr(v, nodes[i:]))
		}
		if !v.Passes() {
			break
		}
		r.begun(n)
		end := a.started(n.Name)
		wg.Go(func() {
			defer close(end)
			// A node that started finishes its steps even when apply is interrupted:
			// stopping between a drain and an uncordon would leave it out of service.
			nctx := context.WithoutCancel(ctx)
			err := a.claims.hold(nctx, n.Name, func() error { return a.runNode(nctx, n, lane) })
			if err == nil {
				r.alertsAfter(n.Name) // before its slot frees: no node starts before the look
			}
			r.finished(n, err)
		})
	}
	wg.Wait()
	lane.stop()
	if r.stopped || r.canaryFailed {
		r.pr.stoppedBy = r.pr.firstFailure
		if r.pr.stoppedBy == "" && r.alertStop != nil {
			r.pr.stoppedBy = r.alertStop.Reason
		}
	}
	return r.pr
}

// begun counts node n started (a canary among the canaries).
func (r *poolRun) begun(n planner.NodePlan) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts++
	if n.Canary {
		r.canary.started = append(r.canary.started, n.Name)
		r.canary.running++
	}
}

// stopErr is the error of a Stop verdict for the pool's nodes rest: nil when what stopped
// it is reported elsewhere (a failed node, the interruption).
func (r *poolRun) stopErr(v planner.Verdict, rest []planner.NodePlan) error {
	switch {
	case v.Reason == "":
		return nil
	case v.ListRest && v.Failed:
		return restNotStarted(r.pp.Name, rest, v.Reason)
	case v.ListRest:
		return poolNotStarted(r.pp.Name, rest, v.Reason)
	case v.Failed:
		return errors.New(v.Reason)
	}
	return notStarted(errors.New(v.Reason))
}

func (r *poolRun) halted() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped || r.ctx.Err() != nil
}

// skip reports the nodes not started, with why (nil: reported elsewhere).
func (r *poolRun) skip(rest []planner.NodePlan, why error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ns := stoppedWhy(r.ctx, r.pp.Name)
	if why != nil {
		ns = NotStarted{Why: why.Error()}
		r.pr.errs = append(r.pr.errs, why)
	}
	for _, n := range rest {
		r.pr.Skipped = append(r.pr.Skipped, n.Name)
		r.pr.notStarted(ns, n.Name)
	}
	r.a.emit(Event{Kind: EventPoolStopped, Pool: r.pp.Name})
}

// held reports a node put on hold after the plan was made: it is not started, and the
// pool goes on (the hold is the operator's word, not a failure).
func (r *poolRun) held(node string, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pr.Skipped = append(r.pr.Skipped, node)
	r.pr.notStarted(NotStarted{Why: why, Held: true}, node)
	r.a.emit(Event{Kind: EventHeld, Pool: r.pp.Name, Node: node, Reason: why})
}

// claimed reports a node another apply works on, or worked on since the plan was made:
// it is not started, and the pool goes on.
func (r *poolRun) claimed(node string, why error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pr.Skipped = append(r.pr.Skipped, node)
	r.pr.errs = append(r.pr.errs, why)
	reason := why.Error()
	if ce := new(*claimedError); errors.As(why, ce) {
		reason = "not started: " + (*ce).why
	}
	r.pr.notStarted(NotStarted{Why: reason}, node)
	r.a.emit(Event{Kind: EventClaimed, Pool: r.pp.Name, Node: node, Reason: reason})
}

// finished records a node's end and frees its global slot. Its budget slot frees at once,
// or after the pool's soak when it succeeded; either wakes a node waiting for room. The
// pool stops once max_failures nodes failed.
func (r *poolRun) finished(n planner.NodePlan, err error) {
	<-r.global
	away := errors.As(err, new(*claimedError))
	if away {
		r.claimed(n.Name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if n.Canary {
		r.canary.running--
	}
	var unconfirmed *unconfirmedError
	switch {
	case away:
	case errors.As(err, &unconfirmed):
		// Not a failure: its steps are done; the next apply checks its gates again.
		r.pr.Unconfirmed = append(r.pr.Unconfirmed, n.Name)
		r.pr.errs = append(r.pr.errs, err)
	case err != nil:
		r.failures++
		if r.failures >= max(r.pp.MaxFailures, 1) {
			r.stopped = true
		}
		r.pr.Failed = append(r.pr.Failed, n.Name)
		r.pr.errs = append(r.pr.errs, err)
		r.canaryFailed = r.canaryFailed || n.Canary
		if r.pr.firstFailure == "" {
			r.pr.firstFailure = err.Error()
		}
	case r.pp.Soak > 0:
		r.pr.reached(n)
		r.a.noteReached(n)
		until := r.clock().Now().Add(r.pp.Soak)
		r.busy[n.Name] = "soaking until " + until.Format("15:04:05 MST")
		go r.unsoak(n.Name)
		r.wake() // a canary's end frees the others
		return
	default:
		r.pr.reached(n)
		r.a.noteReached(n)
	}
	delete(r.busy, n.Name)
	r.wake()
}

// wake tells a node waiting for room to look again (r.mu held).
func (r *poolRun) wake() {
	select {
	case r.freed <- struct{}{}:
	default:
	}
}

// unsoak frees a finished node's budget slot once the pool's soak has passed (or the pool's
// run has ended: nothing waits for the slot then).
func (r *poolRun) unsoak(node string) {
	select {
	case <-r.clock().After(r.pp.Soak):
	case <-r.done:
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.busy, node)
	r.wake()
}

func (r *poolRun) clock() Clock { return r.a.opts.Clock }

// observe reads the named nodes as they are now: through the provider's NodeObserver, or
// a whole refresh without it (providers.Adapter).
func (a *applier) observe(ctx context.Context, names []string) ([]model.Node, error) {
	return a.w.provider().ObserveNodes(ctx, names)
}
