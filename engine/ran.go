package engine

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/state"
)

// Where each rendered config ran (state.Ran) is recorded by apply, at the engine's clock
// (ApplyOptions.Clock): as each node reaches its target (verified, health gates passed) or
// fails its health gates there, and, from the refresh the apply started from, which nodes
// still run theirs (extending their runs) or went Degraded. Plans and status record
// nothing: they write no state.

// noteObserved folds the refresh the plan was made from into the records, and bounds them.
func (a *applier) noteObserved() {
	if a.obs == nil || a.obs.Nodes == nil || a.w.Desired == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.st.Observe(a.obs.Nodes, planner.NodePools(a.w.Desired.Pools, a.obs.Nodes), a.opts.Clock.Now())
	a.st.TrimRan()
	pools := make([]string, 0, len(a.w.Desired.Pools))
	for _, p := range a.w.Desired.Pools {
		pools = append(pools, p.Name)
	}
	a.st.TrimStepTimes(pools)
}

// noteReached records n on its target from now.
func (a *applier) noteReached(n planner.NodePlan) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.st.Reached(n.To, n.Pool, n.Name, a.opts.Clock.Now())
}

// noteTimes records how long node n's steps and health gates took, once it passed them:
// what the next plan estimates its pool's rollout from (planner.Estimate).
func (a *applier) noteTimes(n planner.NodePlan, t model.NodeTimes) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.st.RecordTimes(n.Pool, t)
}

// noteFailed records n as having failed on its target (why).
func (a *applier) noteFailed(n planner.NodePlan, why string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.st.Failed(n.To, n.Pool, n.Name, why, a.opts.Clock.Now())
}

// Ran reads the state's records of where each rendered config ran, with a refresh of the
// nodes now folded in (a node still on its config extends its run to now; a Degraded one
// is unhealthy), without writing them: what a later stage's soak gate and status read.
func (w *Workspace) Ran(ctx context.Context, now time.Time) (map[string]*state.Ran, error) {
	st, fleet, err := w.readRefreshed(ctx, true)
	if err != nil {
		return nil, err
	}
	return w.RanSeen(st, fleet.Nodes, now), nil
}

// RanSeen is st's records with nodes, as a refresh saw them at now, folded into a copy:
// st, the backend's, is not changed. A plan across clusters reads an earlier stage's
// records from the refresh its own plan of that cluster made, not from a second one.
func (w *Workspace) RanSeen(st *state.State, nodes []model.Node, now time.Time) map[string]*state.Ran {
	st = st.Clone()
	st.Observe(nodes, planner.NodePools(w.Desired.Pools, nodes), now)
	return st.Ran
}

// ranStatus is st's records, for status: the most recently started first.
func ranStatus(ran map[string]*state.Ran) []planner.RanStatus {
	var out []planner.RanStatus
	for name, r := range ran {
		rs := planner.RanStatus{Rendered: name, Pool: r.Pool, Nodes: len(r.Nodes)}
		for _, node := range slices.Sorted(maps.Keys(r.Nodes)) {
			n := r.Nodes[node]
			if rs.Since.IsZero() || n.Since.Before(rs.Since) {
				rs.Since = n.Since
			}
			rs.Longest = max(rs.Longest, n.Soaked())
			if rs.Unhealthy == "" && n.Unhealthy != "" {
				rs.Unhealthy = "node " + node + " " + n.Unhealthy
			}
		}
		out = append(out, rs)
	}
	slices.SortFunc(out, func(a, b planner.RanStatus) int {
		return cmp.Or(b.Since.Compare(a.Since), cmp.Compare(a.Rendered, b.Rendered))
	})
	return out
}
