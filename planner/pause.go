package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpfleet/mcp/model"
)

// holdPaused defers the changing nodes the pool's pause holds (PausedGate, asked of each
// as apply asks it), says so in the pool's blockers and fills in what its pause holds.
func holdPaused(pp *PoolPlan, nodes []NodePlan) {
	p := pp.Pause
	if p == nil {
		return
	}
	seen := map[string]bool{}
	for k := range nodes {
		n := &nodes[k]
		if !n.Changed() {
			continue
		}
		held := n.Steps
		v := (PausedGate{}).Ask(&Facts{AtPlan: true, Node: n.Name, Pool: pp, Disruptive: n.Disruptive()})
		switch {
		case v.Kind == Defer:
			n.Deferred = true
		case n.Interim != nil:
			p.Passing, p.Interim = append(p.Passing, n.Name), append(p.Interim, n.Name)
			held = n.Interim.Waiting
		default:
			p.Passing = append(p.Passing, n.Name)
			continue
		}
		p.Waiting = append(p.Waiting, n.Name)
		for _, s := range held {
			p.Disruptive = p.Disruptive || s.Kind.Disruptive()
			if k := s.Key(); !seen[k] && s.Kind != model.StepCordon && s.Kind != model.StepUncordon {
				seen[k] = true
				p.Steps = append(p.Steps, k)
			}
		}
	}
	if p.Mode == model.PauseAll {
		p.Passing = nil
	}
	if len(p.Waiting) == 0 {
		return
	}
	pp.Paused = true
	msg := fmt.Sprintf("pool %s is paused: %s deferred", pp.Name, nodeChanges(len(p.Waiting)))
	if p.Mode == model.PauseDisruptive {
		var parts []string
		if deferred := len(p.Waiting) - len(p.Interim); deferred > 0 {
			parts = append(parts, fmt.Sprintf("%s deferred (%s)", nodeChanges(deferred), disruptiveNodes(nodes)))
		}
		if len(p.Interim) > 0 {
			parts = append(parts, fmt.Sprintf("%s split (what disrupts nothing now, on an interim config; what drains or reboots waits)", nodeChanges(len(p.Interim))))
		}
		msg = fmt.Sprintf("pool %s is paused for disruptive changes: %s", pp.Name, strings.Join(parts, "; "))
		if whole := len(p.Passing) - len(p.Interim); whole > 0 {
			msg += fmt.Sprintf("; %s let through (no drain or reboot)", nodeChanges(whole))
		}
	}
	pp.Blockers = append(pp.Blockers, Blocker{Kind: BlockPaused, Message: msg})
}

// disruptiveNodes says which deferred nodes drain or reboot, and how: "w-1 reboots, w-2
// drains".
func disruptiveNodes(nodes []NodePlan) string {
	var out []string
	for i := range nodes {
		n := &nodes[i]
		switch {
		case !n.Deferred:
		case n.Reboot:
			out = append(out, n.Name+" reboots")
		case n.Disruptive():
			out = append(out, n.Name+" drains")
		}
	}
	return strings.Join(out, ", ")
}

// Pauses is what each paused pool of in holds now, planned as a plan would (status shows
// it): only the paused pools and their nodes are planned.
func Pauses(in Input) (map[string]*PauseStatus, error) {
	d := *in.Desired
	d.Pools = slices.DeleteFunc(slices.Clone(d.Pools), func(p model.Pool) bool { return !p.Paused.On() })
	if len(d.Pools) == 0 {
		return nil, nil
	}
	in.Desired = &d
	in.Targets, in.Exclude = nil, nil
	p, err := MakePlan(in)
	if err != nil {
		return nil, err
	}
	out := map[string]*PauseStatus{}
	for _, pp := range p.Pools {
		out[pp.Name] = pp.Pause
	}
	return out, nil
}
