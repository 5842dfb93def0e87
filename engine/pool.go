package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

type poolResult struct {
	ApplyResult
	errs []error
}

// poolRun is one pool's part of an apply: it starts the pool's nodes in plan order, each
// only when the pool's budget, counted again from a fresh observation, has room for it,
// and paced as the pool says: canary nodes first and alone, then a soak; a soak after each
// node before its slot frees; at most max_failures failed nodes; only in an open window.
type poolRun struct {
	a       *applier
	ctx     context.Context
	pp      planner.PoolPlan
	members []string // the pool's nodes, as the plan lists them
	windows []model.Window
	global  chan struct{}
	freed   chan struct{} // a node of the pool finished, or its soak ended
	done    chan struct{} // closed when the pool's run ends

	hadWindow bool      // a window of the pool was seen open (waitWindow): later closings are bounded
	clearAt   time.Time // when the alert gate was last seen clear (start's goroutine only)

	total int // the nodes runPool is to start

	mu       sync.Mutex
	busy     map[string]string // started by this apply and not finished, or soaking: why
	failures int
	stopped  bool // max_failures nodes failed, a canary did, or alerts fired after a node
	starts   int  // nodes started
	// alertStop: alerts fired (or Prometheus did not answer) after a node finished.
	alertStop *alertGateError
	pr        poolResult
}

// runPool starts the pool's nodes in plan order. Before each it waits for an open
// maintenance window, then re-counts, from a fresh observation of the pool, the nodes out
// of service, and starts the node only if the pool stays within max_unavailable
// (planner.Room) — waiting, up to BudgetWait, while it would not. The canary nodes start
// first; the others wait until every canary finished and the canary soak passed. Failed
// nodes stop new starts in the pool once they reach max_failures (any failed canary does).
func (a *applier) runPool(ctx context.Context, pp planner.PoolPlan, nodes []planner.NodePlan, global chan struct{}) poolResult {
	r := &poolRun{a: a, ctx: ctx, pp: pp, global: global, freed: make(chan struct{}, 1), done: make(chan struct{}),
		busy: map[string]string{}, windows: a.windows(pp.Name), total: len(nodes)}
	defer close(r.done)
	for _, n := range a.plan.Nodes {
		if n.Pool == pp.Name {
			r.members = append(r.members, n.Name)
		}
	}
	var wg, canaryWG sync.WaitGroup
	var canaries []string
	for i, n := range nodes {
		if !n.Canary && len(canaries) > 0 {
			canaryWG.Wait()
			err := r.afterCanary(n.Name, canaries, len(nodes)-i)
			canaries = nil
			if err != nil {
				if ag, ok := asAlertGate(err); ok {
					err = ag.rest(r.pp.Name, nodes[i:])
				} else if r.halted() && !errors.Is(err, errCanaryFailed) {
					err = nil // the interruption is reported already
				}
				r.skip(nodes[i:], err)
				break
			}
		}
		if err := r.start(n.Name); err != nil {
			if errors.Is(err, errHeld) {
				r.held(n.Name, err)
				continue
			}
			if errors.As(err, new(*claimedError)) {
				r.claimed(n.Name, err)
				continue
			}
			var wc *windowClosedError
			ag, held := asAlertGate(err)
			if !held {
				ag = r.stoppedByAlerts()
			}
			switch {
			case errors.As(err, &wc):
				err = poolNotStarted(r.pp.Name, nodes[i:], wc.why)
			case ag != nil:
				err = ag.rest(r.pp.Name, nodes[i:])
			case r.halted():
				err = nil // a failed node, or the interruption, is reported already
			}
			r.skip(nodes[i:], err)
			break
		}
		r.mu.Lock()
		r.starts++
		r.mu.Unlock()
		if n.Canary {
			canaries = append(canaries, n.Name)
			canaryWG.Add(1)
		}
		end := a.started(n.Name)
		wg.Go(func() {
			defer close(end)
			if n.Canary {
				defer canaryWG.Done()
			}
			// A node that started finishes its steps even when apply is interrupted:
			// stopping between a drain and an uncordon would leave it out of service.
			err := a.runClaimed(context.WithoutCancel(ctx), n)
			if err == nil {
				r.alertsAfter(n.Name) // before its slot frees: no node starts before the look
			}
			r.finished(n.Name, err)
		})
	}
	wg.Wait()
	return r.pr
}

// errCanaryFailed: a canary node failed, so the others do not start.
var errCanaryFailed = errors.New("a canary node failed")

// afterCanary is the turn from the canary nodes to the others: it stops the pool when a
// canary failed or alerts fired after one (its *alertGateError), else waits the canary soak.
func (r *poolRun) afterCanary(next string, canaries []string, rest int) error {
	r.mu.Lock()
	failed := r.failures > 0
	if failed {
		r.stopped = true
	}
	r.mu.Unlock()
	if failed {
		return fmt.Errorf("pool %s: %w (canary: %s): the other %s not started", r.pp.Name, errCanaryFailed,
			strings.Join(canaries, ", "), nodeCount(rest))
	}
	if ag := r.stoppedByAlerts(); ag != nil {
		return ag // no soak before a pool that starts nothing more
	}
	return r.soakCanary(next, canaries)
}

// start waits until node may start — an open window, no alert holding the pool, then
// room in the budget and a global slot (admit) — and holds the slot. A window that closed,
// or an alert that fired, while the node waited for room sends it back to wait again.
func (r *poolRun) start(node string) error {
	for {
		if err := r.waitWindow(node); err != nil {
			return err
		}
		if err := r.waitAlerts(node); err != nil {
			return err
		}
		if err := r.admit(node); err != nil {
			return err
		}
		if r.windowOpen() && r.alertsClear() {
			return nil
		}
		r.mu.Lock()
		delete(r.busy, node)
		r.mu.Unlock()
		<-r.global
	}
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
func (r *poolRun) held(node string, why error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pr.Skipped = append(r.pr.Skipped, node)
	r.pr.notStarted(NotStarted{Why: why.Error(), Held: true}, node)
	r.a.emit(Event{Kind: EventHeld, Pool: r.pp.Name, Node: node, Reason: why.Error()})
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
func (r *poolRun) finished(node string, err error) {
	<-r.global
	if errors.As(err, new(*claimedError)) {
		r.claimed(node, err)
		r.mu.Lock()
		delete(r.busy, node)
		r.wake()
		r.mu.Unlock()
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var unconfirmed *unconfirmedError
	if errors.As(err, &unconfirmed) {
		// Not a failure: its steps are done; the next apply checks its gates again.
		delete(r.busy, node)
		r.wake()
		r.pr.Unconfirmed = append(r.pr.Unconfirmed, node)
		r.pr.errs = append(r.pr.errs, err)
		return
	}
	if err != nil {
		delete(r.busy, node)
		r.wake()
		r.failures++
		if r.failures >= max(r.pp.MaxFailures, 1) {
			r.stopped = true
		}
		r.pr.Failed = append(r.pr.Failed, node)
		r.pr.errs = append(r.pr.errs, err)
		return
	}
	r.pr.Updated = append(r.pr.Updated, node)
	if r.pp.Soak > 0 {
		until := r.clock().Now().Add(r.pp.Soak)
		r.busy[node] = "soaking until " + until.Format("15:04:05 MST")
		go r.unsoak(node)
		return
	}
	delete(r.busy, node)
	r.wake()
}

// wake tells a node waiting for room to look again (r.mu held).
func (r *poolRun) wake() {
	select {
	case r.freed <- struct{}{}:
	default:
	}
}

// admit waits until node may start: room in its pool's budget and a slot of the global
// parallelism. It holds the slot and counts node busy when it returns nil. The budget is
// looked at once the slot is taken (waiting for a slot may take long); only when there is
// no room is the slot given back while the pool is watched for room. One look per start
// when there is room: a look reads every node of the pool.
func (r *poolRun) admit(node string) error {
	var backedOff time.Time // when node first gave its claim back (take)
	for {
		r.global <- struct{}{}
		err := r.waitRoom(node, 0)
		gaveBack := false
		if err == nil && !r.halted() {
			r.mu.Lock()
			r.busy[node] = "updating"
			r.mu.Unlock()
			if err = r.take(node); err == nil {
				return nil
			}
			r.mu.Lock()
			delete(r.busy, node)
			r.mu.Unlock()
			if gaveBack = errors.Is(err, errNoRoom); gaveBack && backedOff.IsZero() {
				backedOff = time.Now()
			}
		}
		<-r.global
		if r.halted() {
			return errHalted
		}
		if gaveBack {
			// The claim was given back: another apply claimed in the pool at the same
			// moment (each backs off), or one that holds the state lock runs.
			err = r.backOff(node, backedOff)
		}
		if !errors.Is(err, errNoRoom) {
			return err
		}
		// A soaking slot frees by itself within the soak: patience counts from then.
		if err := r.waitRoom(node, r.a.opts.BudgetWait+r.pp.Soak); err != nil {
			return err
		}
	}
}

// errHalted: the pool stopped (a node failed) or apply was interrupted.
var errHalted = errors.New("halted")

// errHeld: the node was put on hold (mcpfleet.io/hold) after the plan was made.
var errHeld = errors.New("put on hold after the plan was made: not started")

// errNoRoom: a single look found no room (the caller looks again, waiting).
var errNoRoom = errors.New("no room in the budget")

// waitRoom observes the pool until node may start within its budget, a node of the pool
// finishing or BudgetPoll passing between looks. It fails when patience passes (errNoRoom
// for a single look, patience 0), the pool is halted (a node failed, or ctx ended:
// interrupted, or the state lock lost) or the pool cannot be observed.
func (r *poolRun) waitRoom(node string, patience time.Duration) error {
	deadline := time.Now().Add(patience)
	said := ""
	for {
		if r.halted() {
			return errHalted
		}
		room, why, err := r.look(node, false)
		if err != nil {
			return err
		}
		if room {
			return nil
		}
		if patience == 0 {
			return errNoRoom
		}
		if why != said {
			r.a.emit(Event{Kind: EventWaiting, Pool: r.pp.Name, Node: node, Reason: why})
			said = why
		}
		wait := min(r.a.opts.BudgetPoll, time.Until(deadline))
		if wait <= 0 {
			return notStarted(fmt.Errorf("pool %s: node %s and the rest not started: no room in the budget within %s: %s",
				r.pp.Name, node, patience, why))
		}
		select {
		case <-r.ctx.Done():
			return r.ctx.Err()
		case <-r.freed:
		case <-time.After(wait):
		}
	}
}

// look observes node's pool once and says whether node may start now within its budget,
// counting the nodes out of service, those this apply updates and those another live
// apply holds; without the state lock, none may while an apply that holds it runs (fresh:
// the lock is looked at now). An error says node must not start at all: the pool cannot
// be observed, node was put on hold, or another apply works on it or did since the plan.
func (r *poolRun) look(node string, fresh bool) (bool, string, error) {
	observed, err := r.a.observe(r.ctx, r.members)
	if err != nil {
		if r.ctx.Err() != nil {
			return false, "", r.ctx.Err()
		}
		return false, "", fmt.Errorf("pool %s: not starting node %s: observing the pool: %w", r.pp.Name, node, err)
	}
	if err := heldNow(node, observed); err != nil {
		return false, "", err
	}
	if err := r.a.claimedSince(node, observed); err != nil {
		if cw, ok := errors.AsType[*claimWaitError](err); ok {
			return false, cw.why, nil
		}
		return false, "", err
	}
	if r.a.opts.Lock.NoLock {
		if why := r.a.lockedApply(r.ctx, fresh); why != "" {
			return false, why, nil
		}
	}
	r.mu.Lock()
	busy := r.a.othersClaims(r.busy, node, observed)
	r.mu.Unlock()
	delete(busy, node) // the node itself is counted apart (planner.RoomFor)
	room, why := planner.RoomFor(r.pp.MaxUnavailable, node, observed, busy)
	return room, why, nil
}

// observe reads the named nodes as they are now: through the provider's NodeObserver, or
// a whole refresh without it (providers.Adapter).
func (a *applier) observe(ctx context.Context, names []string) ([]model.Node, error) {
	return a.w.provider().ObserveNodes(ctx, names)
}

// heldNow fails with errHeld when the look at the pool finds node on hold: a hold set
// during an apply is honoured from the node's start on, as one set before the plan.
func heldNow(node string, observed []model.Node) error {
	for i := range observed {
		if observed[i].Name != node {
			continue
		}
		if why, held := observed[i].HoldReason(); held {
			return fmt.Errorf("%w (%s=%q)", errHeld, model.HoldKey, why)
		}
	}
	return nil
}
