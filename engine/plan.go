package engine

import (
	"context"
	"time"

	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/state"
)

// Plan is a plan with what it was made from: a value to hold, show, save and apply. It
// holds no pointer to what made it and nothing that changes after (docs/decisions.md, "A
// plan is a value"), as Terraform's plans.Plan.
//
// A plan Workspace.Plan made is fresh: beside its file it carries what its refresh
// observed that apply acts on and no plan file carries (Observed). A plan read from a file
// (Saved) is not: apply derives it again from a refresh of its own, and refuses it unless
// it is exactly that.
type Plan struct {
	// File is the plan as it is shown and saved.
	File *planfile.File
	// Observed is what the refresh of a fresh plan saw beside the fleet; nil: saved.
	Observed *Observed
	// approved: made and shown in this run, applied later in it (Approved).
	approved bool
}

// Approved is a plan made and shown in this run, approved as shown, and applied later in
// it: a later stage of an apply across clusters, whose clusters' pods come and go while the
// stages before run. Apply derives it again as a saved plan, from the same state, and takes
// it when that gives the same steps (planDiff) though the fleet moved on; a saved plan
// must find the fleet as it was (its fingerprint).
func Approved(pf *planfile.File) *Plan { return &Plan{File: pf, approved: true} }

// Saved is a plan read from a file, to be applied: apply trusts nothing it carries and
// derives it again.
func Saved(pf *planfile.File) *Plan { return &Plan{File: pf} }

// Fresh reports whether p was made by Workspace.Plan (not read from a file).
func (p *Plan) Fresh() bool { return p.Observed != nil }

// Observed is what a refresh saw beside the fleet that a plan made from it acts on: plain
// data, read only once made. It stays in memory (the user_data values hash a token).
type Observed struct {
	// Lock is how the caller held the state lock when the plan was made: the claims were
	// judged so.
	Lock Locking
	// Claims are the nodes' claims as seen, by node, and how they were judged then (nil:
	// the provider keeps none).
	Claims map[string]ClaimSeen
	// InFlight are the updates interrupted applies left on the nodes, as they recorded
	// them (model.InFlight): what the planner resumed.
	InFlight []model.InFlight
	// Observations counts the nodes the refresh asked what they carry (observeConfigs),
	// and ObserveRequests the API requests it made for that (-1: not counted).
	Observations    int
	ObserveRequests int64
	// Pointers are the pools' pointer configs for their user_data Secrets, built at the
	// refresh (the CA and token files read then).
	Pointers map[string][]byte
	// UserData are the digests of the user_data Secrets' values as read, whole: what their
	// writes are conditional on.
	UserData map[string]string
	// Nodes are the nodes as the refresh saw them: apply records from them where each
	// rendered config runs still (state.Ran).
	Nodes []model.Node
}

// ClaimSeen is a node's claim as a refresh saw it, and how it was judged then: whether its
// apply still ran, as far as could be told, and how that was judged.
type ClaimSeen struct {
	planner.JudgedClaim
	// Seen is when the claim was first seen with its expiry (zero: not judged by it): a
	// lease counts from then (model.Claim.LeaseEnd), in apply too.
	Seen time.Time
	// Gone: its apply was judged gone for good — its process ended, the state lock it was
	// taken under lost — which no renewal brings back.
	Gone bool
}

// Locking is how the caller of Plan and Apply holds the state lock. It decides how the
// nodes' claims are judged and taken; it is the caller's, told to each call, not a
// property of the Workspace.
type Locking struct {
	// NoLock: the caller does not hold the state lock (apply -lock=false). Apply then
	// claims each node, and looks at its pool again, before its first step; it writes the
	// state over what it finds (docs/decisions.md, "One apply per node").
	NoLock bool
	// ID is the ID of the state lock the caller holds (Workspace.Lock), which apply's
	// claims name ("": none is named).
	ID string
}

// PlanOptions scope a plan.
type PlanOptions struct {
	// Targets and Exclude scope the plan (-target, -exclude: see planner.Input); a saved
	// plan is applied with its own.
	Targets, Exclude []string
	// Lock is how the caller holds the state lock.
	Lock Locking
}

// Plan refreshes the fleet and plans against the state st.
func (w *Workspace) Plan(ctx context.Context, st *state.State, opts PlanOptions) (*Plan, error) {
	before, t0 := w.apiRequests(), time.Now()
	fleet, obs, err := w.refresh(ctx, st, opts.Lock)
	if err != nil {
		return nil, err
	}
	rs := &model.RefreshStats{Nodes: len(fleet.Nodes), Pods: len(fleet.Pods), PDBs: len(fleet.PDBs),
		APIRequests: -1, Duration: time.Since(t0)}
	if before >= 0 {
		rs.APIRequests = w.apiRequests() - before
	}
	if rs.Observed = obs.Observations; obs.ObserveRequests >= 0 && rs.APIRequests >= 0 {
		rs.ObserveRequests = obs.ObserveRequests
		rs.APIRequests -= obs.ObserveRequests
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
	return &Plan{File: pf, Observed: obs}, nil
}

// startedNothing is the result of a fresh plan refused before its first node (why, a
// sincePlanError, says what moved): the plan this apply just made and showed no longer
// holds, and what it would do now is more than was shown. Nothing started, so nothing
// failed either: run again (exit 2), as for a node another apply holds.
func startedNothing(p *Plan, why error) (*ApplyResult, error) {
	res := &ApplyResult{Skipped: changedNodes(p.File.Rollout)}
	res.notStarted(NotStarted{Why: why.Error()}, res.Skipped...)
	return res, notStarted(why)
}
