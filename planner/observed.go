package planner

import (
	"fmt"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/steps"
)

// known is the rendered config named from as the state remembers it, or as this plan
// renders it (a lost state on a fleet that runs names mcp made; an interim config this
// plan makes); nil: unknown.
func known(in Input, from string, target *model.Rendered) *model.Rendered {
	if old := in.Known[from]; old != nil {
		return old
	}
	if r := in.Rendered[target.Pool]; r != nil && r.Name == from {
		return r
	}
	if r := in.variants[from]; r != nil {
		return r
	}
	return in.interims.named(from)
}

// ToObserve names, for each node whose current config is absent or unknown (neither in
// known nor one of rendered), the target of its pool it is to be observed against
// (model.Observation): refresh asks the provider, and the plan derives its steps from
// what it carries. A node no pool selects, or two do, is left out (the plan reports it).
func ToObserve(d *model.Desired, rendered, nodeRendered, knownConfigs map[string]*model.Rendered, nodes []model.Node) map[string]*model.Rendered {
	members, _, err := assignPools(d.Pools, nodes)
	if err != nil {
		return nil
	}
	in := Input{Rendered: rendered, NodeRendered: nodeRendered, Known: knownConfigs}
	in.indexVariants()
	out := map[string]*model.Rendered{}
	for pool, ns := range members {
		for _, n := range ns {
			target := in.targetOf(pool, n.Name)
			if target == nil {
				continue
			}
			if n.CurrentConfig == "" || known(in, n.CurrentConfig, target) == nil {
				out[n.Name] = target
			}
		}
	}
	return out
}

// fromObservation derives the steps of a node whose current config is absent or unknown
// from what it carries against target (Node.Observed), by the one derivation of steps:
// exactly the items that differ, each with its own on_change (steps.FromObserved, which is
// steps.Restore with its reasons). ok is false
// without a usable observation: the steps then come from the configs, and warn says why
// the node could not be observed, if it was tried.
func fromObservation(in Input, n *model.Node, target *model.Rendered, h steps.Host) (todo []model.Step, warn string, ok bool) {
	obs := n.Observed
	if n.CurrentConfig != "" && known(in, n.CurrentConfig, target) != nil {
		return nil, "", false
	}
	if !obs.Usable(target.Name) {
		if obs != nil && obs.Reason != "" {
			warn = "the node could not be observed against " + target.Name + ": " + obs.Reason
		}
		return nil, warn, false
	}
	if n.CurrentConfig == "" && carriesNone(obs, target) {
		// A node with nothing of target (a new one): its steps and reasons are those of a
		// move from nothing, as the pool's changes show it; the same steps either way.
		return nil, "", false
	}
	drift := obs.Drift
	if obs.Unlisted > 0 {
		warn = fmt.Sprintf("the node differs from %s in %d more items than observed: every item of it is written, with their on_change policies",
			target.Name, obs.Unlisted)
		drift = append(steps.EveryPath(target), onHost(obs.Drift)...)
	}
	return steps.FromObserved(drift, target, h), warn, true
}

// carriesNone reports whether the observation shows none of target's files, directories,
// links and units on the node as target has them (or more differences than it lists).
func carriesNone(obs *model.Observation, target *model.Rendered) bool {
	if obs.Unlisted > 0 {
		return true
	}
	differs := map[string]bool{}
	for _, d := range obs.Drift {
		differs[d.Path] = true
	}
	for _, e := range target.Entries() {
		if !differs[e.Common().Path] {
			return false
		}
	}
	for _, u := range target.Units {
		if !differs[steps.UnitPath(u.Name)] {
			return false
		}
	}
	return true
}

// onHost is the drift of drift that is of the host (kernel arguments, OS image).
func onHost(drift []model.Drift) []model.Drift {
	var out []model.Drift
	for _, d := range drift {
		if d.OnHost() {
			out = append(out, d)
		}
	}
	return out
}

// adoptStep is the one step of a node that carries its target whole: it checks so itself
// and records it; nothing on it changes.
func adoptStep(target *model.Rendered) model.Step {
	return model.Step{Kind: model.StepAdopt, Reason: "the node carries every item of " + target.Name +
		": it is recorded on it, after checking so itself; nothing on it changes"}
}
