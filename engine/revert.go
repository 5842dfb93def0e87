package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/state"
)

// PoolRevert is what a pool's on_failure = "revert" did after a failure stopped its
// rollout: the nodes this apply changed in it, put back on the config the pool ran before.
type PoolRevert struct {
	Pool string
	// To is the rendered config the nodes went back to: the pool's boot config before this
	// apply ("" when it had none mcp stored: nothing could be reverted).
	To string
	// Why is the failure that stopped the pool (a node's error, the alerts that fired).
	Why string
	// Reverted nodes run To again, verified and past their health gates (or needed nothing:
	// a failed node that never left it).
	Reverted []string
	// NotReverted are the nodes this apply changed that are not back on To, with why.
	NotReverted map[string]string
	// nothing says why there is no To.
	nothing string
}

// EventReverting: a failure stopped a pool whose on_failure is "revert"; Reason says which
// nodes go back to which config, and why.
const EventReverting EventKind = "reverting"

// poolStop is a pool a failure stopped, with what it was and the nodes this apply changed
// in it (updated, failed, not confirmed).
type poolStop struct {
	why     string
	touched []string
}

// noteStop records a pool a failure stopped (runPool's stoppedBy).
func (a *applier) noteStop(pool string, pr poolResult) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stops == nil {
		a.stops = map[string]poolStop{}
	}
	touched := slices.Concat(pr.Updated, pr.Failed, pr.Unconfirmed)
	slices.Sort(touched)
	a.stops[pool] = poolStop{why: pr.stoppedBy, touched: touched}
}

// reverts are the pools to revert: stopped by a failure, on_failure "revert", with nodes
// this apply changed; each with the config it goes back to (its boot config before).
func (a *applier) reverts() []PoolRevert {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []PoolRevert
	for _, pp := range a.plan.Pools {
		s, ok := a.stops[pp.Name]
		if !ok || !pp.OnFailure.Reverts() {
			continue
		}
		prev, touched := a.revertsTo(pp), s.touched
		if prev != pp.Rendered {
			touched = slices.Concat(touched, a.onFailed(pp))
		}
		if len(touched) == 0 {
			continue
		}
		r := PoolRevert{Pool: pp.Name, Why: s.why, NotReverted: map[string]string{}}
		switch {
		case prev == pp.Rendered:
			r.nothing = "the pool's config did not change in this apply: there is no other to go back to"
		case a.st.Rendered[prev] == nil:
			r.nothing = "the pool ran no config mcp stored before this apply: there is nothing to go back to"
		default:
			r.To = prev
		}
		for _, n := range touched {
			r.NotReverted[n] = "not reverted yet" // each is settled by revert
		}
		out = append(out, r)
	}
	return out
}

// revertsTo is the config a failure of pp's rollout reverts to: the pool's boot config
// before this apply; or, when this apply found the pointer already on the failed config and
// still moves nodes to it (an earlier apply of the rollout was interrupted, or stopped
// without reverting), the config the pool ran before that one (its pointer history).
func (a *applier) revertsTo(pp planner.PoolPlan) string {
	if pp.Previous != pp.Rendered || !slices.ContainsFunc(a.plan.Nodes, func(n planner.NodePlan) bool {
		return n.Pool == pp.Name && n.To == pp.Rendered && n.From != "" && n.From != pp.Rendered && n.Changed()
	}) {
		return pp.Previous
	}
	if b, ok := a.st.Before(pp.Name); ok {
		return b.Rendered
	}
	return pp.Previous
}

// onFailed are the nodes of pp that already ran the failed config when this apply was
// planned: an earlier apply of the same rollout moved them (one interrupted, or stopped
// by a failure without reverting). The revert takes them back too: the rollout failed.
func (a *applier) onFailed(pp planner.PoolPlan) []string {
	var out []string
	for _, n := range a.plan.Nodes {
		if n.Pool == pp.Name && n.From == pp.Rendered && !n.Changed() {
			out = append(out, n.Name)
		}
	}
	return out
}

// revert puts the nodes this apply changed in the pools of reverts back on the config each
// pool ran before: a plan of those pools to that stored config (RollingBack), with every
// other node of them left out (-exclude), carried out as any plan — the pools' budgets,
// health gates and the lock — after the rollout's end. The pools' canary, soaks, alert
// gates and windows do not hold a revert back (it is the remedy for what they stop). res
// gains the reverts; the error is runErr with what reverting failed of, and a failure of
// each pool reverted, so that apply exits 1.
func (w *Workspace) revert(ctx context.Context, st *state.State, reverts []PoolRevert, res *ApplyResult, runErr error, opts ApplyOptions) (*state.State, *ApplyResult, error) {
	to, touched := map[string]string{}, map[string]bool{}
	var whys []string
	for _, r := range reverts {
		if r.To == "" {
			continue
		}
		to[r.Pool] = r.To
		whys = append(whys, "pool "+r.Pool+": "+r.Why)
		for n := range r.NotReverted {
			touched[n] = true
		}
		opts.Observer(Event{Time: time.Now(), Kind: EventReverting, Pool: r.Pool,
			Reason: fmt.Sprintf(`on_failure = "revert": %s back to %s after: %s`, planner.NodeCount(len(r.NotReverted)), r.To, r.Why)})
	}
	final, errs := st, []error{runErr}
	var rres *ApplyResult
	if len(to) > 0 {
		var err error
		final, rres, err = w.revertRounds(ctx, st, to, touched, strings.Join(whys, "; "), opts)
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, r := range reverts {
		settleRevert(&r, rres)
		res.Reverts = append(res.Reverts, r)
		errs = append(errs, revertError(r))
	}
	return final, res, errors.Join(errs...)
}

// revertRounds carries out the revert again while a round defers nodes and puts others
// back (as running apply again would): a node the failure left out of service takes the
// pool's budget when the revert is planned, and the nodes behind it are deferred until it
// is back in service. What each node became is its last round's word; one put back in any
// round is reverted.
func (w *Workspace) revertRounds(ctx context.Context, st *state.State, to map[string]string, touched map[string]bool, why string, opts ApplyOptions) (*state.State, *ApplyResult, error) {
	var back []string
	for round := 0; ; round++ {
		next, res, err := w.carryOutRevert(ctx, st, to, touched, why, opts)
		if next != nil {
			st = next
		}
		if res == nil {
			return st, nil, err
		}
		back = append(back, res.Updated...)
		if err != nil && !onlyNotStarted(err) || len(res.Deferred) == 0 || len(res.Updated) == 0 || round >= len(touched) || ctx.Err() != nil {
			res.Updated = back
			return st, res, err
		}
	}
}

// carryOutRevert plans and carries out the revert of the nodes touched in the pools of to.
func (w *Workspace) carryOutRevert(ctx context.Context, st *state.State, to map[string]string, touched map[string]bool, why string, opts ApplyOptions) (*state.State, *ApplyResult, error) {
	rw, err := w.reverting(st, to, why)
	if err != nil {
		return nil, nil, err
	}
	fleet, obs, err := rw.refresh(ctx, st, opts.Lock)
	if err != nil {
		return nil, nil, fmt.Errorf("reverting: %w", err)
	}
	var targets, exclude []string
	for _, pool := range slices.Sorted(maps.Keys(to)) {
		targets = append(targets, "pool."+pool)
	}
	for node, pool := range planner.NodePools(rw.Desired.Pools, fleet.Nodes) {
		if _, ok := to[pool]; ok && !touched[node] {
			exclude = append(exclude, "node."+node)
		}
	}
	slices.Sort(exclude)
	pf, err := rw.planAt(st, fleet, obs, Fingerprint(fleet), targets, exclude, time.Now())
	if err != nil {
		return nil, nil, fmt.Errorf("planning the revert: %w", err)
	}
	return rw.carryOut(ctx, st, &Plan{File: pf, Observed: obs}, opts)
}

// reverting is w rolling the pools of to back (RollingBack), each without what paces or
// holds a rollout (canary, soak, alert gate, windows), and on_failure "stop": a revert
// that fails is reported, not reverted again.
func (w *Workspace) reverting(st *state.State, to map[string]string, why string) (*Workspace, error) {
	rw, err := w.RollingBack(st, to)
	if err != nil {
		return nil, err
	}
	d := *w.Desired
	d.Pools = slices.Clone(d.Pools)
	for i := range d.Pools {
		if p := &d.Pools[i]; to[p.Name] != "" {
			p.Pacing = model.Pacing{MaxFailures: p.Pacing.MaxFailures}
			p.AlertGate, p.Windows, p.OnFailure = nil, nil, model.OnFailureStop
		}
	}
	rw.Desired, rw.rollbackWhy = &d, `on_failure = "revert": `+why
	return rw, nil
}

// settleRevert says of each node r lists whether the revert put it back (rres: the
// revert's result; nil when none ran).
func settleRevert(r *PoolRevert, rres *ApplyResult) {
	for _, n := range slices.Sorted(maps.Keys(r.NotReverted)) {
		why := ""
		switch {
		case r.To == "":
			why = r.nothing
		case rres == nil:
			why = "the revert was not carried out (its error is above)"
		case slices.Contains(rres.Failed, n):
			why = "its revert failed (its error is above)"
		case slices.Contains(rres.Unconfirmed, n):
			why = "its revert's health gates were not confirmed"
		case slices.Contains(rres.Skipped, n) || slices.Contains(rres.Deferred, n):
			why = "its revert was not started: " + rres.NotStarted[n].Why
		}
		if why == "" {
			r.Reverted = append(r.Reverted, n)
			delete(r.NotReverted, n)
			continue
		}
		r.NotReverted[n] = why
	}
}

// revertError is a reverted pool's failure, as apply reports it.
func revertError(r PoolRevert) error {
	if r.To == "" {
		return fmt.Errorf(`pool %s: on_failure = "revert", after: %s; nothing reverted: %s`, r.Pool, r.Why, r.nothing)
	}
	msg := fmt.Sprintf(`pool %s: on_failure = "revert": %d of %d nodes this rollout changed are back on %s, after: %s`,
		r.Pool, len(r.Reverted), len(r.Reverted)+len(r.NotReverted), r.To, r.Why)
	if len(r.NotReverted) > 0 {
		msg += "; not reverted: " + strings.Join(slices.Sorted(maps.Keys(r.NotReverted)), ", ")
	}
	return errors.New(msg)
}
