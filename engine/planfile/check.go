package planfile

import (
	"errors"
	"fmt"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/planner"
)

// checkPlan refuses a plan mcp would not have made: rendered configs whose names are not
// their content's or their keys, pools without their config, nodes of no pool, duplicate
// names, unknown actions or step kinds, negative counts. It checks form, not fitness: apply
// checks the plan against the state and the fleet.
func checkPlan(p *planner.Rollout) error {
	for key, r := range p.Rendered {
		if r == nil {
			return fmt.Errorf("rendered config %q is null", key)
		}
		if r.Name != key {
			return fmt.Errorf("rendered config under %q is named %q", key, r.Name)
		}
		if err := content.Check(r); err != nil {
			return err
		}
		// A plan saved by an older mcp carries each config's Ignition config beside its
		// content: settled, it compares with the configs apply derives again.
		content.Settle(r)
	}
	pools := map[string]bool{}
	for _, pp := range p.Pools {
		if err := checkPool(p, pp); err != nil {
			return err
		}
		if pools[pp.Name] {
			return fmt.Errorf("pool %s is in it twice", pp.Name)
		}
		pools[pp.Name] = true
	}
	nodes := map[string]bool{}
	for _, n := range p.Nodes {
		if err := checkNode(n, pools); err != nil {
			return err
		}
		if nodes[n.Name] {
			return fmt.Errorf("node %s is in it twice", n.Name)
		}
		nodes[n.Name] = true
	}
	return nil
}

func checkPool(p *planner.Rollout, pp planner.PoolPlan) error {
	if pp.Name == "" {
		return errors.New("a pool has no name")
	}
	r := p.Rendered[pp.Rendered]
	if r == nil {
		return fmt.Errorf("pool %s's rendered config %q is not in the plan", pp.Name, pp.Rendered)
	}
	if r.Pool != pp.Name {
		return fmt.Errorf("pool %s's rendered config %s is pool %s's", pp.Name, r.Name, r.Pool)
	}
	for what, v := range map[string]int{"size": pp.Size, "max_unavailable": pp.MaxUnavailable,
		"unavailable": pp.Unavailable, "slots": pp.Slots, "updates": pp.Updates, "waves": pp.Waves} {
		if v < 0 {
			return fmt.Errorf("pool %s's %s is negative (%d)", pp.Name, what, v)
		}
	}
	if pp.DrainTimeout < 0 {
		return fmt.Errorf("pool %s's drain_timeout is negative (%s)", pp.Name, pp.DrainTimeout)
	}
	return nil
}

func checkNode(n planner.NodePlan, pools map[string]bool) error {
	if n.Name == "" {
		return errors.New("a node has no name")
	}
	if !pools[n.Pool] {
		return fmt.Errorf("node %s is of pool %q, which is not in the plan", n.Name, n.Pool)
	}
	switch n.Action {
	case planner.NodeNoOp, planner.NodeUpdate, planner.NodeResume, planner.NodeAdopt:
	default:
		return fmt.Errorf("node %s has the unknown action %q", n.Name, n.Action)
	}
	if n.To == "" {
		return fmt.Errorf("node %s has no target config", n.Name)
	}
	if n.Wave < 0 {
		return fmt.Errorf("node %s's wave is negative (%d)", n.Name, n.Wave)
	}
	for _, s := range n.Steps {
		if !s.Kind.Valid() {
			return fmt.Errorf("node %s has a step of unknown kind %d", n.Name, s.Kind)
		}
	}
	return nil
}
