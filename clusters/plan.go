package clusters

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state"
)

// PlanOptions tune a plan across clusters.
type PlanOptions struct {
	// Limit is how many clusters are refreshed and planned at once (1 or more).
	Limit int
	// Lock: take each cluster's state lock while planning it, waiting up to LockTimeout.
	Lock        bool
	LockTimeout time.Duration
	// Targets and Exclude scope every cluster's plan (-target, -exclude).
	Targets, Exclude []string
	// OnForce, when set, is handed each lock's release while it is held, and returns what
	// takes it back: a forced quit (cmd's second interrupt) still releases every lock.
	OnForce func(release func(context.Context)) (drop func())
}

// Planned is one cluster's plan, or why it has none.
type Planned struct {
	*Member
	Plan *engine.Plan // nil when Err is set
	// Err is why the cluster could not be planned (its fleet unreachable, its state
	// locked…): the cluster is unknown.
	Err error
	// LockHolder names who held the cluster's state lock when it could not be taken.
	LockHolder string
	// State is the cluster's state the plan was made from (nil when Err is set).
	State *state.State
}

// PlanAll refreshes and plans every loaded member concurrently, at most opts.Limit at
// once; the result is in the members' order, one per member, a failure kept as the
// member's Err.
func PlanAll(ctx context.Context, ms []Member, opts PlanOptions) []Planned {
	out := make([]Planned, len(ms))
	var g errgroup.Group
	g.SetLimit(max(opts.Limit, 1))
	for i := range ms {
		out[i].Member = &ms[i]
		if out[i].Err = notLoaded(&ms[i]); out[i].Err != nil {
			continue
		}
		g.Go(func() error {
			planOne(ctx, &out[i], opts)
			return nil
		})
	}
	g.Wait()
	return out
}

// planOne plans p's cluster under its state lock (unless opts.Lock is false), as mcp plan
// does for a configuration of one cluster.
func planOne(ctx context.Context, p *Planned, opts PlanOptions) {
	ws := p.Workspace
	lock := engine.Locking{NoLock: true}
	if opts.Lock {
		u, held, err := ws.Lock(ctx, "plan", opts.LockTimeout)
		if err != nil {
			var le *state.LockError
			if errors.As(err, &le) {
				p.LockHolder = le.Holder.Shown().Who
			}
			p.Err = err
			return
		}
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		if l, ok := u.(state.Losable); ok {
			// A lost lock (another run took the Lease) ends this cluster's plan.
			go func() {
				select {
				case <-l.Lost():
					cancel(fmt.Errorf("%w: %v", state.ErrLockLost, l.LostErr()))
				case <-ctx.Done():
				}
			}()
		}
		var once sync.Once
		release := func(ctx context.Context) (err error) {
			once.Do(func() { err = u.Unlock(ctx) })
			return err
		}
		if opts.OnForce != nil {
			defer opts.OnForce(func(ctx context.Context) { release(ctx) })()
		}
		defer func() {
			if err := release(context.WithoutCancel(ctx)); err != nil && p.Err == nil {
				p.Plan, p.Err = nil, fmt.Errorf("releasing the state lock: %w", err)
			}
		}()
		lock = held
	}
	st, err := ws.ReadState(ctx)
	if err != nil {
		p.Err = err
		return
	}
	p.Plan, p.Err = ws.Plan(ctx, st, engine.PlanOptions{Targets: opts.Targets, Exclude: opts.Exclude, Lock: lock})
	if p.Err == nil {
		p.State = st
	}
}

// notLoaded is why m has no workspace to refresh (nil: it has one).
func notLoaded(m *Member) error {
	switch {
	case m.Unreachable != nil:
		return unreachable(m.Unreachable)
	case m.Workspace == nil:
		return errors.New("the configuration did not load for this cluster")
	}
	return nil
}

// unreachable is the error of a cluster whose provider or backend could not be built.
func unreachable(d *model.Diagnostic) error {
	at := ""
	if d.Subject != nil {
		at = fmt.Sprintf(" (%s:%d,%d)", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column)
	}
	return fmt.Errorf("%s%s: %s", strings.ToLower(d.Summary[:1])+d.Summary[1:], at, d.Detail)
}
