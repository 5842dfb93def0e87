package engine

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/state"
)

// A fresh plan (one this apply made and showed) is derived again from a refresh of its own
// before the first node; the fleet may have moved on meanwhile — a node's agent reporting
// Done, an earlier update finishing — and the plan derived again is carried out when it does
// no more than the plan shown (moreThanShown). Otherwise nothing starts (startedNothing),
// and the error says what moved (docs/decisions.md, "An apply's own plan, derived again").

// errChangedSincePlan marks the refusal of a fresh plan the fleet or the state moved on
// from before its first node (sincePlanError).
var errChangedSincePlan = errors.New("changed since this apply's plan")

// sincePlanError is a fresh plan refused before its first node: what says what moved.
// It is not planfile.ErrStale: no plan file is refused, and running apply again is the
// answer (exit 2).
type sincePlanError struct{ what string }

func (e *sincePlanError) Error() string {
	return e.what + ": no node was started; run mcp apply again"
}

func (e *sincePlanError) Is(target error) bool { return target == errChangedSincePlan }

// stateMovedSincePlan refuses a fresh plan made from another state than st: an apply
// (without the lock, or this process's earlier one) wrote the state since, and some of the
// plan's steps may be done.
func stateMovedSincePlan(pf *planfile.File, st *state.State) error {
	switch {
	case pf.CheckState(st) == nil:
		return nil
	case pf.Lineage != st.Lineage && pf.Lineage != "" && st.Lineage != "":
		return &sincePlanError{fmt.Sprintf("the state changed between this apply's plan and its first node (lineage %s then, %s now)", pf.Lineage, st.Lineage)}
	}
	return &sincePlanError{fmt.Sprintf("the state changed between this apply's plan and its first node (serial %d then, %d now: another apply wrote it)", pf.Serial, st.Serial)}
}

// didMore refuses a fresh plan whose plan derived again (more says how) would do more than
// the plan shown.
func didMore(more string) error {
	return &sincePlanError{"the fleet changed between this apply's plan and its first node, and the plan derived again does more than the plan shown: " + more}
}

// moreThanShown names the first thing in which derived, the plan derived again from a
// fresh refresh before the first node, would do more than shown, the plan this apply showed
// ("" when it does no more). Every node derived starts must start in shown too, with the
// same pool, action, target (and interim target) and readiness (a NotReady node's
// built-in health gates are skipped); its steps (kind and target: a reason is for people)
// must be steps shown for it, in the order shown — some may be done since —, and the
// config it runs the one shown, or its target now (an earlier update to it finished).
// Nodes may drop out (at their target now, held, deferred, claimed). Pools must
// act alike (their pointers, pause, gates and pacing; not their counts of the fleet: apply
// re-counts budgets live), boot images alike but for the nodes they name, and every
// rendered config derived must be one shown.
func moreThanShown(shown, derived *planner.Rollout) string {
	if len(shown.Pools) != len(derived.Pools) {
		return fmt.Sprintf("it has %d pools, the plan shown %d", len(derived.Pools), len(shown.Pools))
	}
	for i := range derived.Pools {
		if d := fieldDiff(poolActs(shown.Pools[i]), poolActs(derived.Pools[i])); d != "" {
			return "pool." + derived.Pools[i].Name + ": " + d
		}
	}
	if len(shown.BootImages) != len(derived.BootImages) {
		return fmt.Sprintf("it has %d boot images, the plan shown %d", len(derived.BootImages), len(shown.BootImages))
	}
	for i := range derived.BootImages {
		s, d := shown.BootImages[i], derived.BootImages[i]
		s.Lagging, d.Lagging = nil, nil // the nodes it names: for people
		if diff := fieldDiff(s, d); diff != "" {
			return "boot image of pool." + d.Pool + ": " + diff
		}
	}
	for _, name := range slices.Sorted(maps.Keys(derived.Rendered)) {
		if shown.Rendered[name] == nil {
			return "rendered config " + name + " is not in the plan shown"
		}
		if d := fieldDiff(shown.Rendered[name], derived.Rendered[name]); d != "" {
			return "rendered config " + name + ": " + d
		}
	}
	was := make(map[string]*planner.NodePlan, len(shown.Nodes))
	for i := range shown.Nodes {
		was[shown.Nodes[i].Name] = &shown.Nodes[i]
	}
	for i := range derived.Nodes {
		n := &derived.Nodes[i]
		if !starts(n) {
			continue
		}
		s := was[n.Name]
		if s == nil || !starts(s) {
			return fmt.Sprintf("node.%s would now be started (%s to %s), which the plan shown %s", n.Name, n.Action, n.To, notStartedBy(s))
		}
		if d := fieldDiff(nodeActs(s), nodeActs(n)); d != "" {
			return "node." + n.Name + ": " + d
		}
		if was, now := stepKeys(s), stepKeys(n); !inOrderWithin(now, was) {
			type steps struct {
				Steps []string `json:"steps"`
			}
			return "node." + n.Name + ": " + fieldDiff(steps{was}, steps{now})
		}
		if n.From != s.From && n.From != n.To {
			return fmt.Sprintf("node.%s: it runs %s now, %s when the plan was shown", n.Name, configWord(n.From), configWord(s.From))
		}
	}
	return ""
}

// inOrderWithin reports whether every step of now is one of was, in was's order: what is
// left of the steps shown when some are done already (an earlier update to the same
// target finished since: its uncordon left).
func inOrderWithin(now, was []string) bool {
	i := 0
	for _, k := range now {
		for i < len(was) && was[i] != k {
			i++
		}
		if i == len(was) {
			return false
		}
		i++
	}
	return true
}

func configWord(name string) string {
	if name == "" {
		return "no config of mcp's"
	}
	return name
}

// starts reports whether apply starts n (it may still not: a claim, the budget, a hold
// seen then).
func starts(n *planner.NodePlan) bool { return n.Changed() && !n.Deferred }

// notStartedBy says how the plan shown had node s not started.
func notStartedBy(s *planner.NodePlan) string {
	switch {
	case s == nil:
		return "did not list"
	case s.Deferred:
		return "deferred"
	case s.Held != "":
		return "held (" + s.Held + ")"
	}
	return "did not change"
}

// poolActs is pp without what it counts of the fleet — its size and budget, nodes out of
// service, updates, waves, blockers, holds, the nodes a pause, a variant or a change names,
// its estimate and warnings — which apply counts again from a fresh observation or does not
// act on: what is left is what apply does with the pool.
func poolActs(pp planner.PoolPlan) planner.PoolPlan {
	pp.Size, pp.MaxUnavailable, pp.Unavailable, pp.Slots, pp.Updates, pp.Waves = 0, 0, 0, 0, 0, 0
	pp.MaxStaging = 0 // by default max_unavailable's, which a percentage resolves by the pool's size
	pp.Held, pp.Untargeted = 0, 0
	pp.Blockers, pp.Pause, pp.Variants, pp.Changes, pp.Warnings, pp.Estimate = nil, nil, nil, nil, nil, nil
	return pp
}

// acts is what must be alike in a node apply starts, beside its steps and the config it
// runs (moreThanShown).
type acts struct {
	Pool     string             `json:"pool"`
	Action   planner.NodeAction `json:"action"`
	To       string             `json:"to"`
	Interim  string             `json:"interim_target,omitempty"`
	NotReady bool               `json:"not_ready"`
}

func nodeActs(n *planner.NodePlan) acts {
	a := acts{Pool: n.Pool, Action: n.Action, To: n.To, NotReady: n.NotReady}
	if n.Interim != nil {
		a.Interim = n.Interim.Target
	}
	return a
}

// stepKeys are n's steps by kind and target, in order (a step's reason is for people).
func stepKeys(n *planner.NodePlan) []string {
	var out []string
	for _, s := range n.Steps {
		out = append(out, s.Key())
	}
	return out
}

// droppedSincePlan tells the observer of each node the plan shown starts that derived,
// the plan carried out instead, does not (no more than shown: moreThanShown), and why.
func droppedSincePlan(shown, derived *planner.Rollout, observe func(Event)) {
	if observe == nil {
		return
	}
	now := make(map[string]*planner.NodePlan, len(derived.Nodes))
	for i := range derived.Nodes {
		now[derived.Nodes[i].Name] = &derived.Nodes[i]
	}
	for i := range shown.Nodes {
		s := &shown.Nodes[i]
		n := now[s.Name]
		if !starts(s) || (n != nil && n.Changed()) {
			continue // deferred or claimed since: apply says so as it says it for any node
		}
		why := "nothing left to do since the plan: the node is no longer in the fleet"
		switch {
		case n != nil && n.Held != "":
			why = "put on hold since the plan (" + n.Held + "): not started"
		case n != nil:
			why = fmt.Sprintf("nothing left to do since the plan: the node reports it runs %s", n.To)
		}
		observe(Event{Kind: EventSincePlan, Node: s.Name, Pool: s.Pool, Reason: why})
	}
}
