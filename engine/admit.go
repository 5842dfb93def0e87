package engine

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/providers"
)

// The gates of a pool (planner.Gates, docs/decisions.md "Admission is a list of gates")
// are asked in two rounds: those about the pool's run and the clock (planner.PoolGates)
// without a slot, so that a node waiting for its window or for alerts to stop holds no
// slot of the global parallelism; then, once it holds one, all of them again — the first
// round may have waited long — with a fresh look at the pool for the node's own gates
// (planner.NodeGates: hold, claim, lock, budget). When all let the node pass it is
// claimed (take) and starts.

// admission is the asking about one node: since when it waits on which gate, and what it
// said it waits for last.
type admission struct {
	r     *poolRun
	node  planner.NodePlan
	rest  int                  // the pool's nodes left to start, node with them
	since map[string]time.Time // gate → when the node began waiting on it (wall clock)
	said  string
	// backedOff: when node first gave its claim back (take), for -budget-wait.
	backedOff time.Time
}

// admit waits until the gates let node n start, and returns the verdict that lets it (its
// global slot held, it counted busy in the pool and claimed) or the one that does not (a
// Skip or a Stop). rest counts the pool's nodes left to start, n with them.
func (r *poolRun) admit(n planner.NodePlan, rest int) planner.Verdict {
	q := &admission{r: r, node: n, rest: rest, since: map[string]time.Time{}}
	for {
		if r.ctx.Err() != nil {
			return planner.Verdict{Kind: planner.Stop} // the interruption is reported already
		}
		v := planner.Admit(planner.PoolGates, q.facts())
		if v.Passes() {
			v = q.withSlot()
			if v.Passes() {
				return v
			}
		}
		if v.Kind != planner.Wait {
			return v
		}
		q.wait(v)
	}
}

// withSlot takes a slot of the global parallelism, asks every gate with a fresh look at
// the pool, and claims the node when they let it start (the slot and the node's budget
// kept); else gives the slot back and returns why not.
func (q *admission) withSlot() planner.Verdict {
	r := q.r
	r.global <- struct{}{}
	v := q.ask(planner.Gates, false)
	if v.Passes() {
		r.mu.Lock()
		r.busy[q.node.Name] = "updating"
		r.mu.Unlock()
		if v = q.take(); v.Passes() {
			return v
		}
		r.mu.Lock()
		delete(r.busy, q.node.Name)
		r.mu.Unlock()
	}
	<-r.global
	return v
}

// facts are what the pool's gates look at for q's node now, without a look at the pool
// (look adds it).
func (q *admission) facts() *planner.Facts {
	r := q.r
	o := r.a.opts
	wall := time.Now()
	f := &planner.Facts{Node: q.node.Name, Pool: &r.pp, Disruptive: q.node.Disruptive(), Now: r.clock().Now(), Wall: wall, Windows: r.windows,
		Waited: map[string]time.Duration{},
		Policy: planner.Policy{NoWait: o.NoWait, BudgetWait: o.BudgetWait, Poll: o.BudgetPoll, AlertPoll: o.AlertPoll}}
	for g, t := range q.since {
		f.Waited[g] = wall.Sub(t)
	}
	if open, _, _ := planner.WindowState(r.windows, f.Now); open || len(r.windows) == 0 {
		r.hadWindow = true
	}
	f.Run = q.runFacts(f.Now)
	if r.pp.AlertGate != nil && !f.Run.Stopped {
		f.Alerts = r.alerts.look(r, wall)
	}
	return f
}

// runFacts are what the run has seen that the gates ask: the pool stopped, its window
// had, its canaries. The canaries' turn is taken here, once, by the first of the others
// that asks after every canary ended: a failure then is a canary's; otherwise their soak
// begins.
func (q *admission) runFacts(now time.Time) planner.RunFacts {
	r := q.r
	r.mu.Lock()
	defer r.mu.Unlock()
	rf := planner.RunFacts{Stopped: r.stopped || r.alertStop != nil, HadWindow: r.hadWindow, Canary: q.node.Canary, Rest: q.rest}
	if a := r.alertStop; a != nil {
		rf.StopReason, rf.StopFailed = a.Reason, a.Failed
	}
	c := &r.canary
	rf.CanariesRunning = c.running
	if !q.node.Canary && len(c.started) > 0 && c.running == 0 && !c.turned {
		c.turned, c.failed = true, r.failures > 0
		if soak := r.pp.CanarySoak; soak > 0 && !c.failed && r.alertStop == nil {
			c.soakUntil = now.Add(soak)
			c.soakWhy = fmt.Sprintf("canary soak %s after %s: the others start at %s", model.ShortDuration(soak),
				strings.Join(c.started, ", "), c.soakUntil.Format("15:04:05 MST"))
		}
	}
	if c.failed {
		rf.CanaryFailed = strings.Join(c.started, ", ")
	}
	rf.SoakUntil, rf.SoakWhy = c.soakUntil, c.soakWhy
	return rf
}

// look is facts with the pool observed now, for the node's own gates: its hold and claim,
// the state lock (without it; fresh: looked at now), and the budget, counting the nodes
// this apply updates or soaks and those another live apply holds. A pool that cannot be
// observed stops it (a non-nil verdict).
func (q *admission) look(fresh bool) (*planner.Facts, *planner.Verdict) {
	r := q.r
	observed, err := r.a.observe(r.ctx, r.members)
	if err != nil {
		if r.ctx.Err() != nil {
			return nil, &planner.Verdict{Kind: planner.Stop}
		}
		return nil, &planner.Verdict{Kind: planner.Stop, Failed: true,
			Reason: fmt.Sprintf("pool %s: not starting node %s: observing the pool: %v", r.pp.Name, q.node.Name, err)}
	}
	r.mu.Lock()
	busy := r.a.claims.others(r.busy, q.node.Name, observed)
	r.mu.Unlock()
	delete(busy, q.node.Name) // the node itself is counted apart (planner.RoomFor)
	// The clock is read after the pool was: a slot a soak freed meanwhile is seen with the
	// time it freed at (a window may have closed by then).
	f := q.facts()
	f.Observed, f.Busy = observed, busy
	f.Claim = r.a.claims.facts(q.node.Name, observed)
	if r.a.opts.Lock.NoLock {
		f.LockedApply = r.a.claims.lockedApply(r.ctx, fresh)
	}
	return f, nil
}

// ask asks gates with a look at the pool (look; fresh: at the state lock too).
func (q *admission) ask(gates []planner.Gate, fresh bool) planner.Verdict {
	f, stop := q.look(fresh)
	if stop != nil {
		return *stop
	}
	return planner.Admit(gates, f)
}

// wait waits as a Wait verdict says — until its time on the pacing clock, its poll on the
// wall clock, a node of the pool finishing, or the end of apply — saying what it waits for
// when that changed. How long the node has waited on the verdict's gate counts on; on
// every other gate it starts again.
func (q *admission) wait(v planner.Verdict) {
	r := q.r
	for g := range q.since {
		if g != v.Gate {
			delete(q.since, g)
		}
	}
	if _, ok := q.since[v.Gate]; !ok {
		q.since[v.Gate] = time.Now()
	}
	if v.Reason != "" && v.Reason != q.said {
		e := Event{Kind: EventWaiting, Pool: r.pp.Name, Node: q.node.Name, Reason: v.Reason}
		if v.Gate == "alerts" && r.alerts.last != nil {
			e.Alerts = r.alerts.last.Holding
		}
		r.a.emit(e)
		q.said = v.Reason
	}
	var until, poll <-chan time.Time
	if !v.Until.IsZero() {
		until = r.clock().After(v.Until.Sub(r.clock().Now()))
	}
	if v.Poll > 0 {
		poll = time.After(v.Poll)
	}
	select {
	case <-r.ctx.Done():
	case <-r.freed:
	case <-until:
	case <-poll:
	}
}

// alertsLooked is the alert gate's last answer: a look made within AlertPoll is not made
// again (a node's admission asks the gate twice, and a node finishing wakes it).
type alertsLooked struct {
	at   time.Time
	last *planner.AlertFacts
}

func (l *alertsLooked) look(r *poolRun, now time.Time) *planner.AlertFacts {
	if l.last != nil && now.Sub(l.at) < r.a.opts.AlertPoll {
		return l.last
	}
	holding, err := r.a.holding(r.ctx, *r.pp.AlertGate)
	l.at, l.last = now, &planner.AlertFacts{Holding: holding, Err: err}
	return l.last
}

// take claims q's node for this apply once the gates let it start. A live other apply's
// claim leaves the node not started (a Skip, as the claim gate's). Without the state lock,
// the node's gates are asked again once the claim is on the node, with a fresh look at the
// pool and the lock: another apply may have claimed a node of the pool at the same moment,
// and of two that did, at least one sees the other; when there is no room the claim is
// given back as it was, and the node backs off (backOff).
func (q *admission) take() planner.Verdict {
	r, node := q.r, q.node.Name
	cl, ok := r.a.claims.claimer()
	if !ok {
		return planner.Verdict{}
	}
	inFlight := r.a.inFlightOf(node)
	c := r.a.claims.newClaim(q.node, inFlight != nil && inFlight.Cordoned)
	prev, err := cl.Claim(r.ctx, node, c, r.a.claims.judge.live)
	var ce *providers.ClaimedError
	switch {
	case errors.As(err, &ce):
		return planner.Verdict{Gate: "claim", Kind: planner.Skip, Reason: fmt.Sprintf("%s works on it (%s)", &ce.Holder, ce.Why)}
	case err != nil:
		return planner.Verdict{Gate: "claim", Kind: planner.Stop, Reason: fmt.Sprintf("pool %s: node %s not started: claiming it: %v", r.pp.Name, node, err)}
	}
	r.a.claims.keep(node, c)
	if !r.a.opts.Lock.NoLock {
		return planner.Verdict{}
	}
	v := q.ask(planner.NodeGates, true)
	if v.Passes() {
		return v
	}
	r.a.claims.drop(node)
	if rerr := cl.Release(context.WithoutCancel(r.ctx), node, c, prev); rerr != nil {
		return planner.Verdict{Gate: "claim", Kind: planner.Stop, Failed: true, Reason: fmt.Sprintf("%s; and giving node %s's claim back: %v", v.Reason, node, rerr)}
	}
	if v.Kind != planner.Wait {
		return v
	}
	return q.backOff(v.Reason)
}

// backOff is the wait of a node whose claim was given back, for a random part of
// BudgetPoll, so that two applies that claimed at one moment do not claim at one moment
// again. A node that keeps backing off for BudgetWait is not started, nor the rest of its
// pool.
func (q *admission) backOff(why string) planner.Verdict {
	r := q.r
	if q.backedOff.IsZero() {
		q.backedOff = time.Now()
	}
	if time.Since(q.backedOff) > r.a.opts.BudgetWait {
		return planner.Verdict{Gate: "back-off", Kind: planner.Stop, Reason: fmt.Sprintf("pool %s: node %s and the rest not started: no room in the budget beside other applies within %s",
			r.pp.Name, q.node.Name, r.a.opts.BudgetWait)}
	}
	return planner.Verdict{Gate: "back-off", Kind: planner.Wait, Reason: why, Poll: mrand.N(r.a.opts.BudgetPoll/2 + 1)}
}
