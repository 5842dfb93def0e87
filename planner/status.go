package planner

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/model"
)

// Status is what `mcp status` shows: each pool's machine counts, as `oc get mcp` shows
// a MachineConfigPool's, and each node's place in its rollout. It is computed from the
// configuration (pools), the state (each pool's config: its boot pointer) and one
// observation of the fleet, and decides nothing.
type Status struct {
	Pools []PoolStatus
	Nodes []NodeStatus // by pool (configuration order), then name; unmanaged nodes last
	// Templates are the machine templates (MakeTemplateStatus), by ID.
	Templates []TemplateStatus
	// Ran is where each rendered config ran in this cluster, as its state records it with
	// the nodes seen now folded in (engine's Status), the most recent first.
	Ran []RanStatus
}

// RanStatus is where one rendered config ran: on how many nodes, since when, the longest
// a node ran it, and, when a node failed on it, how.
type RanStatus struct {
	Rendered, Pool string
	Nodes          int
	Since          time.Time     // when the first of them started running it
	Longest        time.Duration // the longest a node ran it, healthy, as seen
	Unhealthy      string        // how the first node that failed on it failed ("": none did)
}

// PoolStatus is one pool's counts. A node counts once in Machines and in any of the
// others that hold for it.
type PoolStatus struct {
	Name string
	// Config is the pool's rendered config in the state (its boot pointer: apply moves it when
	// the pool's rollout starts); "" before the first apply.
	Config   string
	Machines int
	// Updated: the node runs Config, its agent reports Done (not Working, not Degraded),
	// and what it reports of itself matches Config: no drift of its files, units, kernel
	// arguments or OS image.
	Updated int
	// Drifted: the node runs Config and is settled, but differs from it (its drift).
	Drifted int
	// Updating: the node's agent is Working, or it was told to move to a config it does
	// not run yet (the "updating" of Condition).
	Updating int
	Degraded int // its agent reports Degraded
	Held     int // held (the mcpfleet.io/hold label)
	// Ready: updated and in service (Ready, schedulable; Condition ""), the MCO's
	// ReadyMachineCount.
	Ready  int
	Paused bool
	// Pause is what the pool's pause holds (nil: the pool is not paused): since when, the
	// nodes that wait, their steps, whether one drains or reboots (engine.Status fills it).
	Pause *PauseStatus
	// RolledBack: a rollback moved the pool to RolledBack.To, and the configuration renders
	// another config (engine's Status sets it): a plain apply goes forward again.
	RolledBack *model.RolledBack
	// Created is when the pool's oldest node was created (zero: the pool has none): the
	// pool's AGE, as it has no object of its own to date.
	Created time.Time
}

// Conditions are the pool's conditions as `oc get mcp` shows them beside its counts.
// Updated: every node is updated (none on another config, updating, Degraded, drifted
// or held back); Updating: a node is updating; Degraded: a node is Degraded.
func (p *PoolStatus) Conditions() (updated, updating, degraded bool) {
	return p.Updated == p.Machines, p.Updating > 0, p.Degraded > 0
}

// NodeStatus is one node's row.
type NodeStatus struct {
	Name string
	Pool string // "" for a node no pool selects
	// Current is the config the node runs, Desired the one it was told to move to (Current
	// when it was told nothing).
	Current, Desired string
	// Target is the config the state's pointers give the node: its pool's, or its
	// variant for chosen nodes ("" before the first apply).
	Target     string
	State      string // the agent's report: Done, Working or Degraded ("" before any)
	Reason     string
	Held       bool
	HoldReason string
	// Drift is how the node differs from the config it runs (its disk, kernel arguments,
	// OS image), and DriftUnlisted the differences it reported without listing them.
	Drift         []model.Drift
	DriftUnlisted int
	// Condition says how the node is out of service ("" when in service): see Condition.
	Condition string
	// LastFailure is why the last apply that worked on the node failed it (its claim's
	// record), "" when it did not: a drain refused, a step, a health gate.
	LastFailure string
	Created     time.Time
	// Staged: the node staged an update for Desired ahead of its slot (model.Node.Staging)
	// and runs Current, in service.
	Staged bool
}

// MakeStatus computes the status of the pools of d over fleet (refreshed with each node's
// drift: what it reports of itself against the config it runs); pointers are the state's
// boot pointers by pool. It fails only on an ambiguous fleet (a node in two pools), as
// MakePlan does.
// variants are the state's variants of each pool's config for chosen nodes (a node
// targeted configs apply to is compared with its variant).
func MakeStatus(d *model.Desired, pointers map[string]string, variants map[string][]model.VariantPointer, fleet *model.Fleet) (*Status, error) {
	members, unmanaged, err := assignPools(d.Pools, fleet.Nodes)
	if err != nil {
		return nil, err
	}
	s := &Status{}
	for _, pool := range d.Pools {
		ps := PoolStatus{Name: pool.Name, Config: pointers[pool.Name], Paused: pool.Paused.On()}
		nodes := slices.Clone(members[pool.Name])
		slices.SortFunc(nodes, func(a, b *model.Node) int { return strings.Compare(a.Name, b.Name) })
		for _, n := range nodes {
			ns := nodeStatus(n, pool.Name)
			ps.Machines++
			cond := ns.Condition
			updating := n.Updating()
			want := ps.Config
			if want != "" && len(variants[pool.Name]) > 0 {
				want = model.VariantFor(variants[pool.Name], Chosen(d, pool.Name, n.Name, n.Labels), want)
			}
			ns.Target = want
			switch {
			case n.State == model.StateDegraded:
				ps.Degraded++
			case updating:
				ps.Updating++
			case want != "" && n.CurrentConfig == want && len(n.Drift)+n.DriftUnlisted > 0:
				ps.Drifted++
			case want != "" && n.CurrentConfig == want:
				ps.Updated++
				if cond == "" {
					ps.Ready++
				}
			}
			if ns.Held {
				ps.Held++
			}
			if ps.Created.IsZero() || n.Created.Before(ps.Created) {
				ps.Created = n.Created
			}
			s.Nodes = append(s.Nodes, ns)
		}
		s.Pools = append(s.Pools, ps)
	}
	slices.Sort(unmanaged)
	for i := range fleet.Nodes {
		if _, ok := slices.BinarySearch(unmanaged, fleet.Nodes[i].Name); ok {
			s.Nodes = append(s.Nodes, nodeStatus(&fleet.Nodes[i], ""))
		}
	}
	rest := s.Nodes[len(s.Nodes)-len(unmanaged):]
	slices.SortFunc(rest, func(a, b NodeStatus) int { return cmp.Compare(a.Name, b.Name) })
	return s, nil
}

func nodeStatus(n *model.Node, pool string) NodeStatus {
	ns := NodeStatus{Name: n.Name, Pool: pool, Current: n.CurrentConfig, Desired: n.DesiredConfig,
		State: n.State, Reason: n.Reason, Condition: Condition(n), Drift: n.Drift, DriftUnlisted: n.DriftUnlisted,
		Created: n.Created}
	if c := n.Claim; c != nil && !c.Held() {
		ns.LastFailure = c.Failed
	}
	if ns.Desired == "" {
		ns.Desired = ns.Current
	}
	ns.Staged = n.Staging && n.State == model.StateDone && ns.Desired != ns.Current
	ns.HoldReason, ns.Held = n.HoldReason() // the plan's rule: annotation, else label
	return ns
}
