package engine

import (
	"context"
	"errors"
	"time"

	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state"
)

// Plan is a plan with what it was made from: a value to hold, show, save and apply, which
// no later plan of the same Workspace changes (docs/decisions.md, "A plan is a value").
//
// A plan Workspace.Plan made is fresh: beside its file it carries its refresh's
// observation, which apply acts on and no plan file carries — the nodes' claims as seen
// and judged then, the user_data pointer configs to write and the digests of the Secrets'
// values read. A plan read from a file (Saved) is not: apply derives it again from a
// refresh of its own, and refuses it unless it is exactly that.
type Plan struct {
	// File is the plan as it is shown and saved.
	File *planfile.File

	w   *Workspace   // the workspace that made it; nil: saved
	obs *observation // what its refresh saw; nil: saved
}

// Saved is a plan read from a file, to be applied: apply trusts nothing it carries and
// derives it again.
func Saved(pf *planfile.File) *Plan { return &Plan{File: pf} }

// Fresh reports whether p was made by Workspace.Plan in this process (not read from a file).
func (p *Plan) Fresh() bool { return p.obs != nil }

// observation is what a refresh saw beside the fleet that a plan made from it acts on.
// It is read only once made.
type observation struct {
	// judge judged the claims, and judges them again as the plan is carried out.
	judge *claimJudge
	// claims are the nodes' claims as seen (nil: the provider keeps none).
	claims map[string]claimSeen
	// pointers are the pools' pointer configs for their user_data Secrets, built at the
	// refresh (the CA and token files read then).
	pointers map[string][]byte
	// userData are the digests of the user_data Secrets' values as read, whole: what
	// their writes are conditional on.
	userData map[string]string
}

func (w *Workspace) newObservation(lineage string) *observation {
	return &observation{judge: newClaimJudge(w, lineage)}
}

// PlanOptions scope a plan.
type PlanOptions struct {
	// Targets and Exclude scope the plan (-target, -exclude: see planner.Input); a saved
	// plan is applied with its own.
	Targets, Exclude []string
}

// Plan refreshes the fleet and plans against the state st.
func (w *Workspace) Plan(ctx context.Context, st *state.State, opts PlanOptions) (*Plan, error) {
	before, t0 := w.apiRequests(), time.Now()
	fleet, obs, err := w.refresh(ctx, st)
	if err != nil {
		return nil, err
	}
	rs := &model.RefreshStats{Nodes: len(fleet.Nodes), Pods: len(fleet.Pods), PDBs: len(fleet.PDBs),
		APIRequests: -1, Duration: time.Since(t0)}
	if before >= 0 {
		rs.APIRequests = w.apiRequests() - before
	}
	// The digest (a fifth of a plan's time at 100,000 nodes) is taken beside the planning:
	// both only read the sorted fleet.
	sortFleet(fleet)
	fp := make(chan string, 1)
	go func() { fp <- digest(fleet) }()
	pf, err := w.planAt(st, fleet, obs, "", opts.Targets, opts.Exclude, time.Now())
	digested := <-fp
	if err != nil {
		return nil, err
	}
	pf.FleetFingerprint = digested
	pf.Refresh = rs
	return &Plan{File: pf, w: w, obs: obs}, nil
}

// errChangedSincePlan: a fresh plan went stale before its first node.
var errChangedSincePlan = errors.New("the fleet or the state changed between this apply's plan and its first node (an apply without the lock, or a node): no node was started; run mcp apply again")

// startedNothing is the result of a fresh plan gone stale before its first node: the plan
// this apply just made and showed no longer holds — an apply without the lock (or a node)
// changed the fleet or the state meanwhile. Doing it anyway would not be what was shown;
// nothing started, so nothing failed either: run again (exit 2), as for a node another
// apply holds.
func startedNothing(p *Plan) (*ApplyResult, error) {
	res := &ApplyResult{Skipped: changedNodes(p.File.Rollout)}
	res.notStarted(NotStarted{Why: errChangedSincePlan.Error()}, res.Skipped...)
	return res, notStarted(errChangedSincePlan)
}
