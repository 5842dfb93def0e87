package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/state"
)

// ApplyOptions tune an apply.
type ApplyOptions struct {
	// Parallelism bounds the nodes updating at once over all pools (default 10).
	Parallelism int
	// DrainTimeout bounds each drain (default 10m); DrainRetryDelay is the pause after an
	// eviction a PodDisruptionBudget refused (default 5s).
	DrainTimeout    time.Duration
	DrainRetryDelay time.Duration
	// BudgetWait bounds how long a node waits for its pool's budget, re-counted from a
	// fresh observation of the pool before each node starts (default 10m); BudgetPoll is
	// how often it looks again meanwhile (default 1s; a node of the pool finishing looks
	// at once). It bounds too the wait for a maintenance window that closed mid-rollout:
	// when the next opening is further away, the pool's nodes left are not started.
	BudgetWait, BudgetPoll time.Duration
	// HealthTimeout bounds the wait, after a node's steps, for the node and its DaemonSet
	// pods to be Ready (default 10m; engine/health).
	HealthTimeout time.Duration
	// Observer receives progress events; nil discards them.
	Observer func(Event)
	// NoWait: a pool whose maintenance windows are all closed when apply starts is not
	// started at all (nor its boot pointer moved), and apply fails naming the next opening,
	// instead of waiting for it; a window that closes mid-rollout ends the pool's rollout
	// at once (the nodes started finish; the others are not started).
	NoWait bool
	// AlertPoll is the pause between two questions to Prometheus while a pool's alert gate
	// holds a node (default 2s, as a failing health check's retries).
	AlertPoll time.Duration
	// Clock is the time pacing goes by: maintenance windows, canary soak, soak after each
	// node. Nil: the real clock. Tests pass a fake one so that they wait for no real hours.
	Clock Clock
	// Lock is how the caller holds the state lock (Workspace.Lock).
	Lock Locking
}

// EventKind says what an Event reports.
type EventKind string

const (
	EventStepStart   EventKind = "start"
	EventStepDone    EventKind = "done"
	EventStepFailed  EventKind = "failed"
	EventNodeDone    EventKind = "node-done"
	EventNodeFailed  EventKind = "node-failed"
	EventPoolStopped EventKind = "pool-stopped"
	// EventWaiting: a node waits for its pool's budget (Reason says what is out of service),
	// for a canary's soak to end or for a maintenance window to open (Reason says which,
	// and until when).
	EventWaiting EventKind = "waiting"
	// EventHeld: a node put on hold after the plan was made is not started (Reason says so).
	EventHeld EventKind = "held"
	// EventClaimed: a node another apply works on, or worked on since the plan was made,
	// is not started (Reason names that apply).
	EventClaimed EventKind = "claimed"
	// EventSincePlan: a node the plan shown changes has nothing left to do in the plan
	// apply derived again before its first node, and is not started (Reason says why: it
	// reports it runs its target, or was put on hold, since the plan was shown).
	EventSincePlan EventKind = "since-plan"
	// EventChecking: a node's steps are done and its health gates run.
	EventChecking EventKind = "checking"
	// EventNodeWaiting: a node's executor keeps apply waiting (Reason says on what: an
	// agent that has not taken up its update), or has since taken the update up.
	EventNodeWaiting EventKind = "node-waiting"
	// EventUnconfirmed: a node's steps are done, and apply stopped waiting for its health
	// gates (Err says why): neither updated nor failed.
	EventUnconfirmed EventKind = "unconfirmed"
	// EventAlertsFiring: alerts the pool's alert gate counts fire (or Prometheus cannot be
	// asked) after Node finished: no more nodes of the pool start. Alerts lists them.
	EventAlertsFiring EventKind = "alerts-firing"
	// EventTemplate: a machine template's boot image was set (Reason: "ID: from → to"),
	// or could not be (Err).
	EventTemplate EventKind = "template"
)

// Event is one progress report of an apply.
type Event struct {
	Time    time.Time
	Kind    EventKind
	Node    string
	Pool    string
	Step    model.Step
	Err     error
	Elapsed time.Duration
	// Reason says why a node waits or did not start (for people only).
	Reason string
	// Alerts are the firing alerts that hold a node (EventWaiting) or stopped its pool
	// (EventAlertsFiring), as the pool's alert gate counts them.
	Alerts []model.Alert
	// Ahead: Step (a stage) runs ahead of the node's slot, outside the pool's budget (the
	// staging lane, stage.go); the node is not in its slot. A stage that failed ahead is
	// run again in the slot: the node has not failed.
	Ahead bool
}

// ApplyResult sums up an apply. Each node the plan changes is in exactly one list.
type ApplyResult struct {
	// Updated nodes reached their target: every step done, the node reported it runs the
	// target, verified, and passed its health gates.
	Updated []string
	// Adopted nodes were recorded on their target with nothing on them changed: the plan's
	// adopt action (planner.NodeAdopt), the node having verified it carries the target.
	// Not counted in Updated.
	Adopted []string
	// Failed nodes: a step failed, the node reported Degraded, or a health gate did not
	// pass (the node is then marked Degraded on itself: providers.DegradedMarker).
	Failed []string
	// Unconfirmed nodes finished every step and report the target, but apply stopped
	// waiting for their health gates (interrupted, or the state lock lost): neither
	// updated nor failed; the next apply checks their gates again.
	Unconfirmed []string
	// Skipped nodes were not started: their pool stopped, no room in the budget in time,
	// put on hold, a window closed, or apply was interrupted.
	Skipped []string
	// Deferred nodes were deferred by the plan: their pool is paused, or there was no room
	// in its budget when the plan was made.
	Deferred []string
	// NotStarted says why each node of Skipped and Deferred was not started.
	NotStarted map[string]NotStarted
	// Interim names the nodes the plan moved to an interim config (planner.Interim; each is
	// also in one list above): the rest of their move waits for their pool's pause, so
	// the apply is not Complete.
	Interim []string
	// Reverts are the pools whose on_failure = "revert" put the nodes this apply changed
	// back on the config they ran before, after a failure stopped them (revert.go). Their
	// nodes stay in the lists above, as the rollout left them.
	Reverts []PoolRevert
	Elapsed time.Duration
	// APIRequests is the number of API requests the rollout made (after the refresh and the
	// plan); -1: the provider does not count them (providers.RequestCounter).
	APIRequests int64
}

// ErrNotStarted is wrapped by the errors that only say why planned nodes were not started
// (no room in the budget in time, a closed maintenance window): an apply whose errors are
// all of this kind did nothing wrong, but is not complete (Outcome).
var ErrNotStarted = errors.New("not started")

// notStarted wraps err as ErrNotStarted.
func notStarted(err error) error { return &notStartedError{err} }

type notStartedError struct{ err error }

func (e *notStartedError) Error() string        { return e.err.Error() }
func (e *notStartedError) Unwrap() error        { return e.err }
func (e *notStartedError) Is(target error) bool { return target == ErrNotStarted }

// OutcomeKind is how an apply ended, as its exit code says it.
type OutcomeKind int

const (
	// Complete: every node change the plan included is done and verified.
	Complete OutcomeKind = iota
	// Incomplete: nothing failed, but planned node changes were not done — deferred
	// (a paused pool, no room in the budget), not started (budget wait, hold, window), or
	// their health not confirmed. Running apply again continues.
	Incomplete
	// Failed: a node failed, or apply itself did (lock, state, interruption).
	Failed
)

// Outcome classifies an apply from its result and error.
func Outcome(res *ApplyResult, err error) OutcomeKind {
	switch {
	case res == nil || len(res.Failed) > 0 || (err != nil && !onlyNotStarted(err)):
		return Failed
	case err != nil || len(res.Skipped)+len(res.Deferred)+len(res.Unconfirmed)+len(res.Interim) > 0:
		return Incomplete
	}
	return Complete
}

// onlyNotStarted reports whether every error joined in err is ErrNotStarted.
func onlyNotStarted(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs := j.Unwrap()
		for _, e := range errs {
			if !onlyNotStarted(e) {
				return false
			}
		}
		return len(errs) > 0
	}
	return errors.Is(err, ErrNotStarted)
}

// Apply carries out plan p against st, the state the caller read (under the state lock,
// unless opts.Lock says it holds none), and returns the state that follows: st itself is
// not changed. The plan is derived again from a fresh refresh of the fleet, the state and
// the configuration, and carried out with that refresh's observation; a saved plan that is
// not exactly that is refused before anything changes (rederive). A fresh plan's is carried
// out when it does no more than the plan shown — nodes may have dropped out, at their
// target now (EventSincePlan) —, else it starts no node and says what moved
// (startedNothing). Per-node failures are returned together; a failed node stops new
// starts in its pool while other pools go on.
//
// Without the state lock, a fresh plan made without it too is carried out as it was made,
// with the observation of its own refresh, without a second one: another apply may be
// changing the fleet meanwhile, which would make every overlap a refusal; each node is
// checked as it starts instead (its claim, its pool's budget, a hold). A saved plan is
// derived again all the same. A fresh plan is refused when it was made for another
// configuration (another directory, or other rendered configs).
//
// What it writes: through the provider, the pools' command health checks (PublishChecks),
// the machine templates and user_data Secrets the plan changes, and on each node it starts
// its claim with its intent before each action (providers.Claimer), the cordon, the drain's
// evictions, the hand-over of its steps, the uncordon, a Degraded mark when a health gate
// fails, and the claim's release; through the state backend, the state when the rollout
// starts (the plan's rendered configs, the pools' boot pointers and boot images) and when
// it ends (the journal folded in), and a journal record before each node's first action
// and after each step it finishes. The state returned is the last one written (st, copied,
// when none was; nil when apply refused the plan before).
func (w *Workspace) Apply(ctx context.Context, st *state.State, p *Plan, opts ApplyOptions) (*state.State, *ApplyResult, error) {
	if p == nil || p.File == nil || p.File.Rollout == nil {
		return nil, nil, errors.New("apply: no plan")
	}
	if p.Fresh() {
		if err := w.madeHere(p.File); err != nil {
			return nil, nil, err
		}
	}
	if p.Fresh() && opts.Lock.NoLock && p.Observed.Lock.NoLock {
		// Not derived again (each node is checked as it starts), but made from st as it
		// was then: a state written since (this process's last apply) may have done some
		// of its steps already.
		if err := stateMovedSincePlan(p.File, st); err != nil {
			res, err := startedNothing(p, err)
			return nil, res, err
		}
		return w.carryOut(ctx, st, p, opts)
	}
	fleet, obs, err := w.refresh(ctx, st, opts.Lock)
	if err != nil {
		return nil, nil, err
	}
	rule := asSaved
	switch {
	case p.approved:
		rule = sameSteps
	case p.Fresh():
		rule = noMore
	}
	derived, err := w.rederive(st, fleet, obs, p.File, rule)
	if err != nil {
		if p.Fresh() && errors.Is(err, errChangedSincePlan) {
			res, err := startedNothing(p, err)
			return nil, res, err
		}
		return nil, nil, err
	}
	if p.Fresh() {
		droppedSincePlan(p.File.Rollout, derived.File.Rollout, opts.Observer)
	}
	return w.carryOut(ctx, st, derived, opts)
}

// madeHere refuses a plan made for another configuration than w's: another directory, or
// a pool's rendered config that w does not render.
func (w *Workspace) madeHere(pf *planfile.File) error {
	if pf.ConfigDir != "" {
		if here := canonicalDir(w.Dir); canonicalDir(pf.ConfigDir) != here {
			return fmt.Errorf("apply: the plan was made for the configuration in %s; this is %s", pf.ConfigDir, here)
		}
	}
	for _, pp := range pf.Rollout.Pools {
		if r := w.Rendered[pp.Name]; r != nil && r.Name != pp.Rendered {
			return fmt.Errorf("apply: the plan renders pool %s as %s, this configuration as %s: plan again", pp.Name, pp.Rendered, r.Name)
		}
	}
	return nil
}

// changedNodes are the names of the nodes plan changes.
func changedNodes(plan *planner.Rollout) []string {
	var names []string
	for i := range plan.Nodes {
		if plan.Nodes[i].Changed() {
			names = append(names, plan.Nodes[i].Name)
		}
	}
	return names
}

// carryOut does p, fresh: made by Plan or re-derived by Apply, with the observation of
// the refresh it was made from. It returns the state it last wrote (applier.written).
func (w *Workspace) carryOut(ctx context.Context, st *state.State, p *Plan, opts ApplyOptions) (*state.State, *ApplyResult, error) {
	if err := refuse(p.File.Rollout); err != nil {
		return nil, nil, err
	}
	a := newApplier(w, st, p, opts)
	if a.opts.NoWait {
		a.closed = a.closedPools()
	}
	if err := a.publish(ctx); err != nil {
		return nil, nil, err
	}
	res, runErr := a.run(ctx)
	if cause := context.Cause(ctx); errors.Is(cause, state.ErrLockLost) {
		// Another run may hold the state now: writing ours over it would lose its work.
		return a.written(), res, errors.Join(runErr, fmt.Errorf("the state was not saved: %w; the steps that finished are in the journal, and the next plan shows what is left", cause))
	}
	if err := a.writeState(context.WithoutCancel(ctx)); err != nil {
		return a.written(), res, errors.Join(runErr, fmt.Errorf("saving state after apply: %w", err))
	}
	if reverts := a.reverts(); len(reverts) > 0 && ctx.Err() == nil {
		return w.revert(ctx, a.written(), reverts, res, runErr, opts)
	}
	return a.written(), res, runErr
}

type applier struct {
	w      *Workspace // the parts: provider, backend, alert source, pools' windows
	st     *state.State
	plan   *planner.Rollout
	obs    *Observed   // what the refresh plan was made from saw
	claims *nodeClaims // this apply's claims, and the judgement of others'
	opts   ApplyOptions
	mu     sync.Mutex // guards st
	// stop is apply's own context (interrupt, lost lock): node steps run on without it, a
	// node's health gates stop waiting with it (engine/node.go, gate).
	stop context.Context

	runMu   sync.Mutex
	running map[string]chan struct{} // nodes started by this apply; closed when they end

	id string // this apply run, as its claims name it

	base *state.State // the state as last read or written, for writeState without the lock

	// closed: with NoWait, the pools whose windows were all closed when apply started, each
	// with why it is not started; and pools with skew = "enforce" whose templates could not
	// be set (publishBootImages).
	closed map[string]error
	// bootErrs are the machine templates publish could not set.
	bootErrs []error
	// stops: the pools a failure stopped, with what it was and the nodes this apply
	// changed in them (their on_failure reads it: revert.go).
	stops map[string]poolStop
}

func newApplier(w *Workspace, read *state.State, p *Plan, opts ApplyOptions) *applier {
	if opts.Parallelism <= 0 {
		opts.Parallelism = 10
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 10 * time.Minute
	}
	if opts.DrainRetryDelay <= 0 {
		opts.DrainRetryDelay = 5 * time.Second
	}
	if opts.BudgetWait <= 0 {
		opts.BudgetWait = 10 * time.Minute
	}
	if opts.BudgetPoll <= 0 {
		opts.BudgetPoll = time.Second
	}
	if opts.AlertPoll <= 0 {
		opts.AlertPoll = 2 * time.Second
	}
	if opts.Observer == nil {
		opts.Observer = func(Event) {}
	}
	if opts.Clock == nil {
		opts.Clock = realClock{}
	}
	base := read.Clone() // as read: without a lineage when there was no state yet (state.Merge)
	st := read.Clone()
	if st.Lineage == "" {
		st.Lineage = state.New().Lineage
	}
	judge := newClaimJudge(w.Backend, st.Lineage, opts.Lock)
	judge.seed(p.Observed.Claims)
	id := newApplyID()
	claims := &nodeClaims{id: id, lock: opts.Lock, lineage: st.Lineage, judge: judge, prov: w.provider(), seen: p.Observed.Claims}
	return &applier{w: w, st: st, plan: p.File.Rollout, obs: p.Observed, claims: claims, opts: opts, id: id, base: base}
}

// written is the state this apply last wrote, or the state it read when it wrote none.
func (a *applier) written() *state.State {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.base.Clone()
}

// publish gives the provider the pools' command health checks (providers.CommandChecker:
// on Kubernetes, the Secret the agents read them from), then stores the plan's rendered
// configs and moves the boot pointer of every pool whose rollout starts, so that a node
// booting from now on gets the new config. Rendered configs are written before any pointer
// names them. Nothing is changed when the checks cannot be published.
func (a *applier) publish(ctx context.Context) error {
	checks := make(map[string][]model.HealthCheck, len(a.plan.Pools))
	for _, pp := range a.plan.Pools {
		checks[pp.Name] = pp.HealthChecks
	}
	if err := a.w.provider().PublishChecks(ctx, checks); err != nil {
		return fmt.Errorf("publishing the pools' command health checks: %w", err)
	}
	for name, r := range a.plan.Rendered {
		a.st.Rendered[name] = r
	}
	a.publishBootImages(ctx)
	a.noteObserved()
	if a.w.Desired != nil {
		a.st.NotePauses(a.w.Desired.Pools, a.opts.Clock.Now())
	}
	now := a.opts.Clock.Now()
	for _, pp := range a.plan.Pools {
		if !pp.Paused && !pp.PointerKept && a.closed[pp.Name] == nil { // kept: outside -target
			markRollbacks(a.st, pp.Name, pp.Rendered, pp.Rollback, cmp.Or(a.w.rollbackWhy, "mcp rollback"), now)
			a.pointMachines(pp)
			a.pointVariants(pp)
		}
	}
	if err := a.writeState(ctx); err != nil {
		return fmt.Errorf("saving state before apply: %w", err)
	}
	return nil
}

func (a *applier) emit(e Event) {
	e.Time = time.Now()
	a.opts.Observer(e)
}

// run schedules nodes continuously: per pool within its max_unavailable, counted live
// (runPool), over all pools at most Parallelism; a node that finishes frees its slot at once.
func (a *applier) run(ctx context.Context) (*ApplyResult, error) {
	a.stop = ctx
	start, requests := time.Now(), a.w.apiRequests()
	res := &ApplyResult{}
	// Ended after the last node: nodes finish their steps even when apply is stopped.
	defer a.w.provider().ShareWatches(ctx)()
	var resMu sync.Mutex
	global := make(chan struct{}, a.opts.Parallelism)
	errs := append([]error(nil), a.bootErrs...)
	var wg sync.WaitGroup
	for _, pp := range a.plan.Pools {
		var nodes []planner.NodePlan
		for _, n := range a.plan.Nodes {
			switch {
			case n.Pool != pp.Name || !n.Changed():
			case n.Deferred:
				// Under resMu: the pools started before this one write res as they end.
				resMu.Lock()
				res.Deferred = append(res.Deferred, n.Name)
				res.notStarted(deferredWhy(a.plan, pp, &n), n.Name)
				resMu.Unlock()
			default:
				nodes = append(nodes, n)
				if n.Interim != nil {
					resMu.Lock()
					res.Interim = append(res.Interim, n.Name)
					resMu.Unlock()
				}
			}
		}
		if why := a.closed[pp.Name]; why != nil {
			if len(nodes) > 0 || pp.ReRendered {
				resMu.Lock()
				res.Skipped = append(res.Skipped, nodeNames(nodes)...)
				res.notStarted(NotStarted{Why: why.Error()}, nodeNames(nodes)...)
				errs = append(errs, why)
				resMu.Unlock()
				a.emit(Event{Kind: EventPoolStopped, Pool: pp.Name, Reason: why.Error()})
			}
			continue
		}
		if len(nodes) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			pr := a.runPool(ctx, pp, nodes, global)
			resMu.Lock()
			defer resMu.Unlock()
			if pr.stoppedBy != "" {
				a.noteStop(pp.Name, pr)
			}
			res.Updated = append(res.Updated, pr.Updated...)
			res.Adopted = append(res.Adopted, pr.Adopted...)
			res.Failed = append(res.Failed, pr.Failed...)
			res.Unconfirmed = append(res.Unconfirmed, pr.Unconfirmed...)
			res.Skipped = append(res.Skipped, pr.Skipped...)
			for n, ns := range pr.NotStarted {
				res.notStarted(ns, n)
			}
			errs = append(errs, pr.errs...)
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	if requests >= 0 {
		res.APIRequests = a.w.apiRequests() - requests
	} else {
		res.APIRequests = -1
	}
	if ctx.Err() != nil && len(res.Skipped) > 0 {
		errs = append(errs, fmt.Errorf("apply interrupted: %s not started; run mcp apply again to continue", planner.NodeCount(len(res.Skipped))))
	}
	return res, errors.Join(errs...)
}

// pointMachines moves the boot pointers of pool pp's machine blocks with the pool's: each
// to its variant (PoolPlan.Machines), with its selectors; a machine block no longer
// declared for the pool loses its pointer.
func (a *applier) pointMachines(pp planner.PoolPlan) {
	for name, m := range a.st.Machines {
		if _, ok := pp.Machines[name]; m.Pool == pp.Name && !ok {
			delete(a.st.Machines, name)
		}
	}
	for name, rendered := range pp.Machines {
		m := a.w.Desired.Machine(name)
		if m == nil {
			continue
		}
		if a.st.Machines == nil {
			a.st.Machines = map[string]model.MachinePointer{}
		}
		a.st.Machines[name] = model.MachinePointer{Pool: pp.Name, Rendered: rendered, MACs: m.MACs, UUID: m.UUID, Hostname: m.Hostname}
	}
}

// pointVariants records with pool pp's pointer the variants of its config for chosen
// nodes (what status compares those nodes with).
func (a *applier) pointVariants(pp planner.PoolPlan) {
	var vs []model.VariantPointer
	for _, v := range pp.Variants {
		if v.Rendered != "" {
			vs = append(vs, model.VariantPointer{Configs: v.Configs, Rendered: v.Rendered})
		}
	}
	if len(vs) == 0 {
		delete(a.st.Variants, pp.Name)
		return
	}
	if a.st.Variants == nil {
		a.st.Variants = map[string][]model.VariantPointer{}
	}
	a.st.Variants[pp.Name] = vs
}
