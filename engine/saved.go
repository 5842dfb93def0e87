package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/state"
)

// rederive gives the plan apply carries out. A plan file is trusted for nothing it
// carries: the budgets, the rendered configs and every node's steps are derived again from
// this configuration, the state and the fleet just refreshed, and the saved plan is refused
// unless it is exactly that — stale (the state or the fleet moved on), made for another
// configuration directory or by another mcp, or edited by hand.
// The plan returned carries obs, the observation the fleet came with. rule says what else
// than exactly that an Approved or a fresh plan may be.
func (w *Workspace) rederive(st *state.State, fleet *model.Fleet, obs *Observed, pf *planfile.File, rule rederiveRule) (*Plan, error) {
	if pf.MCPVersion != Version {
		return nil, fmt.Errorf("saved plan was made by mcp %s; this is mcp %s: run mcp plan again", pf.MCPVersion, Version)
	}
	if here := canonicalDir(w.Dir); canonicalDir(pf.ConfigDir) != here {
		return nil, fmt.Errorf("saved plan was made for the configuration in %s; this is %s: run mcp plan here, or apply it there (mcp -chdir=DIR apply)", pf.ConfigDir, here)
	}
	if !maps.Equal(pf.Rollback, w.rollback) {
		return nil, fmt.Errorf("saved plan rolls back %s, this apply %s: apply a rollback's plan as it was saved (mcp apply FILE)", rollbackWords(pf.Rollback), rollbackWords(w.rollback))
	}
	// The configs first: the fleet's observation of nodes with unknown configs is made
	// against them, so a plan for other configs would be called stale for it.
	if d := renderedDiff(pf.Rollout, w.Rendered); d != "" {
		return nil, fmt.Errorf("saved plan is not what this configuration, state and fleet give (edited, or made from other inputs): %s; run mcp plan again", d)
	}
	fp := Fingerprint(fleet)
	var check error
	switch rule {
	case asSaved:
		check = pf.CheckFresh(st, fp)
	case sameSteps:
		check = pf.CheckState(st) // the fleet may have moved on: the steps are compared below
	case noMore:
		check = stateMovedSincePlan(pf, st) // and the plans below
	}
	if check != nil {
		return nil, check
	}
	// The saved plan's -target and -exclude, as its variables: the scope reviewed; and its
	// time, so that a window is seen as it was.
	fresh, err := w.planAt(st, fleet, obs, fp, pf.Targets, pf.Exclude, pf.Created)
	if err != nil {
		return nil, err
	}
	switch d := planDiff(pf.Rollout, fresh.Rollout); {
	case d == "":
	case rule == sameSteps:
		return nil, fmt.Errorf("the fleet moved on since the plan was shown, and it now gives another plan: %s; run mcp plan again (%w)", d, planfile.ErrStale)
	case rule == noMore:
		if more := moreThanShown(pf.Rollout, fresh.Rollout); more != "" {
			return nil, didMore(more)
		}
	default:
		// Stale when a node moved on (what it carries, asked again), or edited by hand.
		return nil, staleOrEdited(d)
	}
	return &Plan{File: fresh, Observed: obs}, nil
}

// rederiveRule is what a plan derived again (rederive) must be, beside what it was made
// for (mcp, configuration, rollback, rendered configs).
type rederiveRule int

const (
	// asSaved, a saved plan: made from the same state and fleet, exactly the plan derived.
	asSaved rederiveRule = iota
	// sameSteps, an Approved plan: made from the same state, the same plan derived; the
	// fleet may have moved on in what gives no other plan.
	sameSteps
	// noMore, a fresh plan: made from the same state; the plan derived is carried out when
	// it does no more than the plan shown (moreThanShown), else refused (sincePlanError).
	noMore
)

// rollbackWords says which pools a rollback moves where ("no pool": none).
func rollbackWords(to map[string]string) string {
	if len(to) == 0 {
		return "no pool"
	}
	var out []string
	for _, pool := range slices.Sorted(maps.Keys(to)) {
		out = append(out, "pool "+pool+" to "+to[pool])
	}
	return strings.Join(out, ", ")
}

func canonicalDir(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}

// planDiff names the first thing in which the saved plan differs from the derived one
// ("" when they are the same).
func planDiff(saved, derived *planner.Rollout) string {
	if saved == nil {
		return "it holds no plan"
	}
	if len(saved.Pools) != len(derived.Pools) {
		return fmt.Sprintf("it has %d pools, the configuration %d", len(saved.Pools), len(derived.Pools))
	}
	for i := range derived.Pools {
		if d := fieldDiff(unestimated(saved.Pools[i]), unestimated(derived.Pools[i])); d != "" {
			return "pool." + derived.Pools[i].Name + ": " + d
		}
	}
	if len(saved.Nodes) != len(derived.Nodes) {
		return fmt.Sprintf("it lists %d nodes, the fleet has %d", len(saved.Nodes), len(derived.Nodes))
	}
	for i := range derived.Nodes {
		if d := fieldDiff(unjudged(saved.Nodes[i]), unjudged(derived.Nodes[i])); d != "" {
			return "node." + derived.Nodes[i].Name + ": " + d
		}
	}
	for _, name := range slices.Sorted(maps.Keys(derived.Rendered)) {
		if d := fieldDiff(saved.Rendered[name], derived.Rendered[name]); d != "" {
			return "rendered config " + name + ": " + d
		}
	}
	if len(saved.Rendered) != len(derived.Rendered) {
		return fmt.Sprintf("it carries %d rendered configs, the configuration renders %d", len(saved.Rendered), len(derived.Rendered))
	}
	if d := fieldDiff(saved.Unmanaged, derived.Unmanaged); d != "" {
		return "unmanaged nodes: " + d
	}
	return ""
}

// renderedDiff names the first pool whose rendered config in the saved plan is not the
// one the configuration renders ("" when none).
func renderedDiff(saved *planner.Rollout, rendered map[string]*model.Rendered) string {
	if saved == nil {
		return ""
	}
	for _, pp := range saved.Pools {
		if r := rendered[pp.Name]; r != nil && r.Name != pp.Rendered {
			return fmt.Sprintf("pool.%s: rendered is %s in the plan, %s here", pp.Name, pp.Rendered, r.Name)
		}
	}
	return ""
}

// unjudged is n without its claim blockers: a judgement of whether another apply ran at
// the moment of a refresh (planner.BlockClaim), which apply makes again, not an input
// the saved plan was made from.
// unestimated is pp without its estimate, which is for people only (planner.Estimate)
// and is not compared: it is made from the state's step times, which the state's serial
// covers already.
func unestimated(pp planner.PoolPlan) planner.PoolPlan {
	pp.Estimate = nil
	return pp
}

func unjudged(n planner.NodePlan) planner.NodePlan {
	n.Blockers = slices.DeleteFunc(slices.Clone(n.Blockers), func(b planner.Blocker) bool { return b.Kind == planner.BlockClaim })
	if len(n.Blockers) == 0 {
		n.Blockers = nil
	}
	return n
}

// fieldDiff compares two values through their JSON and names the top-level fields that
// differ, with both values when they are short.
func fieldDiff(saved, derived any) string {
	a, _ := json.Marshal(saved)
	b, _ := json.Marshal(derived)
	if bytes.Equal(a, b) {
		return ""
	}
	var ma, mb map[string]json.RawMessage
	if json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil {
		return fmt.Sprintf("%s here, %s in the plan", short(b), short(a))
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(mb)) {
		if !bytes.Equal(ma[k], mb[k]) {
			out = append(out, fmt.Sprintf("%s is %s in the plan, %s here", k, short(ma[k]), short(mb[k])))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(ma)) {
		if _, ok := mb[k]; !ok {
			out = append(out, fmt.Sprintf("%s is %s in the plan, absent here", k, short(ma[k])))
		}
	}
	return strings.Join(out, "; ")
}

func short(b []byte) string {
	if len(b) == 0 {
		return "absent"
	}
	if len(b) > 60 {
		return string(b[:57]) + "…"
	}
	return string(b)
}

// staleOrEdited refuses a saved plan whose steps are not those derived now (d says the
// first difference): a node moved on since (what it carries, asked again: not in the
// fleet's fingerprint), or the plan was edited. ErrStale either way: nothing started.
func staleOrEdited(d string) error {
	return fmt.Errorf("saved plan is stale or edited: it is not what this configuration, state and fleet give now: %s; run mcp plan again (%w)", d, planfile.ErrStale)
}
