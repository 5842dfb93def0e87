package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// Clock is the time apply's pacing goes by (ApplyOptions.Clock).
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// windows are the maintenance windows of the pool named pool (none: always open).
func (a *applier) windows(pool string) []model.Window {
	if a.w.Desired == nil {
		return nil
	}
	if p := a.w.Desired.Pool(pool); p != nil {
		return p.Windows
	}
	return nil
}

// closedPools decides once, as apply starts with NoWait, which pools it does not start
// because their windows are all closed: deciding once keeps the boot pointer (publish) and
// the nodes (run) of a pool together.
func (a *applier) closedPools() map[string]error {
	out := map[string]error{}
	now := a.opts.Clock.Now()
	for _, pp := range a.plan.Pools {
		ws := a.windows(pp.Name)
		if len(ws) == 0 || pp.Paused {
			continue
		}
		if open, _, next := planner.WindowState(ws, now); !open {
			out[pp.Name] = notStarted(fmt.Errorf("pool %s: not started (-no-wait): its maintenance window is closed (%s); next opening %s: run mcp apply then, or without -no-wait to wait for it",
				pp.Name, describeWindows(ws), whenFrom(next, now)))
		}
	}
	return out
}

func describeWindows(ws []model.Window) string {
	s := make([]string, len(ws))
	for i, w := range ws {
		s[i] = w.String()
	}
	return strings.Join(s, "; ")
}

// whenFrom writes t in its own zone with how far it is from now:
// "Sat 2026-11-28 02:00 CET (in 4d3h)".
func whenFrom(t, now time.Time) string {
	return fmt.Sprintf("%s (in %s)", t.Format("Mon 2006-01-02 15:04 MST"), roughly(t.Sub(now)))
}

// roughly writes d to the minute, days apart: "4d3h", "2h5m", "40s".
func roughly(d time.Duration) string {
	if d < time.Minute {
		return d.Round(time.Second).String()
	}
	d = d.Round(time.Minute)
	days := d / (24 * time.Hour)
	rest := model.ShortDuration(d % (24 * time.Hour))
	if days == 0 {
		return rest
	}
	if rest == "0s" {
		return fmt.Sprintf("%dd", days)
	}
	return fmt.Sprintf("%dd%s", days, rest)
}

func nodeNames(nodes []planner.NodePlan) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Name
	}
	return out
}

// waitWindow returns once one of the pool's maintenance windows is open, waiting for the
// next opening while they are all closed. A node of the pool that finishes meanwhile
// wakes it to look whether the pool was halted. The first opening is waited for (running
// apply without -no-wait asks for that); once the pool has had its window in this apply,
// a window that closes ends the rollout (windowClosedError) unless the next opening comes
// within BudgetWait — with NoWait, at once.
func (r *poolRun) waitWindow(node string) error {
	var said time.Time
	for {
		if r.halted() {
			return errHalted
		}
		now := r.clock().Now()
		open, _, next := planner.WindowState(r.windows, now)
		if open || len(r.windows) == 0 {
			r.hadWindow = true
			return nil
		}
		if next.IsZero() { // windows without days (the configuration refuses them)
			return notStarted(fmt.Errorf("pool %s: node %s and the rest not started: its maintenance windows never open", r.pp.Name, node))
		}
		if err := r.mayWaitFor(next, now); err != nil {
			return err
		}
		if !next.Equal(said) {
			r.a.emit(Event{Kind: EventWaiting, Pool: r.pp.Name, Node: node,
				Reason: fmt.Sprintf("maintenance window closed (%s): next opening %s", describeWindows(r.windows), whenFrom(next, now))})
			said = next
		}
		select {
		case <-r.ctx.Done():
			return r.ctx.Err()
		case <-r.freed:
		case <-r.clock().After(next.Sub(now)):
		}
	}
}

// mayWaitFor says whether the pool may wait until next, the next opening of its closed
// windows: always before its first opening in this apply; after it, with NoWait never,
// else only within BudgetWait.
func (r *poolRun) mayWaitFor(next, now time.Time) error {
	if !r.hadWindow && !r.a.opts.NoWait {
		return nil
	}
	why := fmt.Sprintf("its maintenance window closed during the rollout (%s); next opening %s", describeWindows(r.windows), whenFrom(next, now))
	switch {
	case r.a.opts.NoWait:
		return &windowClosedError{why + ": -no-wait: not waiting for it; run mcp apply then"}
	case next.Sub(now) > r.a.opts.BudgetWait:
		return &windowClosedError{fmt.Sprintf("%s, later than -budget-wait %s allows waiting: run mcp apply then",
			why, model.ShortDuration(r.a.opts.BudgetWait))}
	}
	return nil
}

// windowClosedError: a window closed mid-rollout and apply may not wait for the next
// opening; runPool names the nodes left (poolNotStarted).
type windowClosedError struct{ why string }

func (e *windowClosedError) Error() string { return e.why }

// poolNotStarted is the error of a pool whose nodes rest are not started, naming them: an
// ErrNotStarted.
func poolNotStarted(pool string, rest []planner.NodePlan, why string) error {
	return notStarted(restNotStarted(pool, rest, why))
}

// restNotStarted names the pool's nodes rest, not started, and why: an error of its own
// (poolNotStarted when it only says they were not started).
func restNotStarted(pool string, rest []planner.NodePlan, why string) error {
	names := nodeNames(rest)
	const shown = 10
	if len(names) > shown {
		names = append(names[:shown], fmt.Sprintf("and %d more", len(names)-shown))
	}
	noun := "nodes"
	if len(rest) == 1 {
		noun = "node"
	}
	return fmt.Errorf("pool %s: %d %s not started (%s): %s", pool, len(rest), noun, strings.Join(names, ", "), why)
}

// windowOpen reports whether the pool may start a node now (no windows: always).
func (r *poolRun) windowOpen() bool {
	if len(r.windows) == 0 {
		return true
	}
	open, _, _ := planner.WindowState(r.windows, r.clock().Now())
	return open
}

// soakCanary waits CanarySoak after the canary nodes finished, before node (the first of
// the others) may start.
func (r *poolRun) soakCanary(node string, canaries []string) error {
	soak := r.pp.CanarySoak
	if soak <= 0 {
		return nil
	}
	until := r.clock().Now().Add(soak)
	r.a.emit(Event{Kind: EventWaiting, Pool: r.pp.Name, Node: node,
		Reason: fmt.Sprintf("canary soak %s after %s: the others start at %s", model.ShortDuration(soak),
			strings.Join(canaries, ", "), until.Format("15:04:05 MST"))})
	for {
		d := until.Sub(r.clock().Now())
		if d <= 0 {
			return nil
		}
		select {
		case <-r.ctx.Done():
			return r.ctx.Err()
		case <-r.clock().After(d):
		}
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
