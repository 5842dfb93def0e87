package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// NotStarted says why a node the plan changes was not started (ApplyResult.NotStarted):
// for people reading the end of apply only, nothing decides anything on it.
type NotStarted struct {
	Why string
	// Held is true when another apply would not start the node either until a person
	// acts: it was put on hold after the plan was made, or its pool is paused.
	Held bool
}

// notStarted records why the nodes were not started.
func (r *ApplyResult) notStarted(ns NotStarted, nodes ...string) {
	if r.NotStarted == nil {
		r.NotStarted = map[string]NotStarted{}
	}
	for _, n := range nodes {
		r.NotStarted[n] = ns
	}
}

// deferredWhy says why the plan deferred node n of pool pp: paused, or no room in its
// budget, which its nodes out of service took.
func deferredWhy(plan *planner.Rollout, pp planner.PoolPlan, n *planner.NodePlan) NotStarted {
	switch {
	case pp.Pause != nil && pp.Pause.Mode == model.PauseDisruptive && n.Disruptive():
		return NotStarted{Why: fmt.Sprintf("deferred by the plan: pool %s is paused for disruptive changes (paused = \"disruptive\") and the node's steps drain or reboot it", pp.Name), Held: true}
	case pp.Paused:
		return NotStarted{Why: fmt.Sprintf("deferred by the plan: pool %s is paused", pp.Name), Held: true}
	}
	var out []string
	for _, n := range plan.Nodes {
		if n.Pool == pp.Name && n.Condition != "" {
			out = append(out, n.Name)
		}
	}
	why := fmt.Sprintf("deferred by the plan: no room in pool %s's max_unavailable of %d when it was made", pp.Name, pp.MaxUnavailable)
	if len(out) > 0 {
		why += fmt.Sprintf(" (%d out of service: %s)", len(out), strings.Join(out, ", "))
	}
	return NotStarted{Why: why}
}

// stoppedWhy says why a pool's nodes were not started when what stopped it was reported
// elsewhere (skip with a nil reason): apply was interrupted or lost its lock, or the pool
// stopped after failed nodes.
func stoppedWhy(ctx context.Context, pool string) NotStarted {
	switch cause := context.Cause(ctx); {
	case cause == nil:
		return NotStarted{Why: fmt.Sprintf("pool %s stopped after its failed nodes", pool)}
	case errors.Is(cause, context.Canceled):
		return NotStarted{Why: "apply was interrupted"}
	default:
		return NotStarted{Why: "apply stopped: " + cause.Error()}
	}
}
