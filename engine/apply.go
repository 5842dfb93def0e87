package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/engine/state"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/planner/model"
)

// ApplyOptions tune an apply.
type ApplyOptions struct {
	// Parallelism bounds the nodes updating at once over all pools (default 10).
	Parallelism int
	// DrainTimeout bounds each drain (default 10m); DrainRetryDelay is the pause after an
	// eviction a PodDisruptionBudget refused (default 5s).
	DrainTimeout    time.Duration
	DrainRetryDelay time.Duration
	// Observer receives progress events; nil discards them.
	Observer func(Event)
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
}

// ApplyResult sums up an apply.
type ApplyResult struct {
	Updated  []string // nodes that reached their target
	Failed   []string
	Skipped  []string // not started: their pool stopped, or apply was interrupted
	Deferred []string // deferred by the plan (paused pool, no budget)
	Elapsed  time.Duration
}

// Apply carries out a plan. The caller holds the state lock and passes the state it read
// under it. A saved plan is first checked against a fresh refresh of the fleet and the
// state; a stale one is refused before anything changes. Per-node failures are returned
// together; a failed node stops new starts in its pool while other pools go on.
func (w *Workspace) Apply(ctx context.Context, st *state.State, pf *planfile.File, opts ApplyOptions) (*ApplyResult, error) {
	fleet, err := w.refresh(ctx, st)
	if err != nil {
		return nil, err
	}
	if err := pf.CheckFresh(st, Fingerprint(fleet)); err != nil {
		return nil, err
	}
	a := newApplier(w, st, pf.Plan, opts)
	if err := a.publish(ctx); err != nil {
		return nil, err
	}
	res, runErr := a.run(ctx)
	st.Serial++
	if err := w.Backend.Write(context.WithoutCancel(ctx), a.st); err != nil {
		return res, errors.Join(runErr, fmt.Errorf("saving state after apply: %w", err))
	}
	*st = *a.st
	return res, runErr
}

type applier struct {
	w    *Workspace
	st   *state.State
	plan *planner.Plan
	opts ApplyOptions
	mu   sync.Mutex // guards st.Journal and the journal appends
}

func newApplier(w *Workspace, st *state.State, p *planner.Plan, opts ApplyOptions) *applier {
	if opts.Parallelism <= 0 {
		opts.Parallelism = 10
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 10 * time.Minute
	}
	if opts.DrainRetryDelay <= 0 {
		opts.DrainRetryDelay = 5 * time.Second
	}
	if opts.Observer == nil {
		opts.Observer = func(Event) {}
	}
	if st.Lineage == "" {
		st.Lineage = state.New().Lineage
	}
	return &applier{w: w, st: st, plan: p, opts: opts}
}

// publish stores the plan's rendered configs, then moves the boot pointer of every pool
// whose rollout starts, so that a node booting from now on gets the new config. Rendered
// configs are written before any pointer names them.
func (a *applier) publish(ctx context.Context) error {
	for name, r := range a.plan.Rendered {
		a.st.Rendered[name] = r
	}
	for _, pp := range a.plan.Pools {
		if !pp.Paused {
			a.st.Pointers[pp.Name] = pp.Rendered
		}
	}
	a.st.Serial++
	if err := a.w.Backend.Write(ctx, a.st); err != nil {
		return fmt.Errorf("saving state before apply: %w", err)
	}
	return nil
}

func (a *applier) emit(e Event) {
	e.Time = time.Now()
	a.opts.Observer(e)
}

// run schedules nodes continuously: per pool at most Slots nodes at once, over all pools at
// most Parallelism; a node that finishes frees its slot at once.
func (a *applier) run(ctx context.Context) (*ApplyResult, error) {
	start := time.Now()
	res := &ApplyResult{}
	var resMu sync.Mutex
	global := make(chan struct{}, a.opts.Parallelism)
	var errs []error
	var wg sync.WaitGroup
	for _, pp := range a.plan.Pools {
		var nodes []planner.NodePlan
		for _, n := range a.plan.Nodes {
			switch {
			case n.Pool != pp.Name || !n.Changed():
			case n.Deferred:
				res.Deferred = append(res.Deferred, n.Name)
			default:
				nodes = append(nodes, n)
			}
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
			res.Updated = append(res.Updated, pr.Updated...)
			res.Failed = append(res.Failed, pr.Failed...)
			res.Skipped = append(res.Skipped, pr.Skipped...)
			errs = append(errs, pr.errs...)
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	if ctx.Err() != nil && len(res.Skipped) > 0 {
		errs = append(errs, fmt.Errorf("apply interrupted: %d nodes not started; run mcp apply again to continue", len(res.Skipped)))
	}
	return res, errors.Join(errs...)
}

type poolResult struct {
	ApplyResult
	errs []error
}

func (a *applier) runPool(ctx context.Context, pp planner.PoolPlan, nodes []planner.NodePlan, global chan struct{}) poolResult {
	var (
		mu      sync.Mutex
		pr      poolResult
		stopped bool
		wg      sync.WaitGroup
	)
	slots := make(chan struct{}, max(pp.Slots, 1))
	for i, n := range nodes {
		slots <- struct{}{}
		global <- struct{}{}
		mu.Lock()
		halt := stopped || ctx.Err() != nil
		mu.Unlock()
		if halt {
			<-global
			<-slots
			for _, rest := range nodes[i:] {
				pr.Skipped = append(pr.Skipped, rest.Name)
			}
			a.emit(Event{Kind: EventPoolStopped, Pool: pp.Name})
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-global; <-slots }()
			// A node that started finishes its steps even when apply is interrupted:
			// stopping between a drain and an uncordon would leave it out of service.
			err := a.runNode(context.WithoutCancel(ctx), n)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				stopped = true
				pr.Failed = append(pr.Failed, n.Name)
				pr.errs = append(pr.errs, err)
				return
			}
			pr.Updated = append(pr.Updated, n.Name)
		}()
	}
	wg.Wait()
	return pr
}
