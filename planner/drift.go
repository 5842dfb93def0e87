package planner

import (
	"cmp"
	"slices"
	"strings"

	"github.com/mcpfleet/mcp/model"
)

// DriftReport is what a drift run found (mcp drift): per node, how it differs from the
// rendered config it runs. It plans nothing.
type DriftReport struct {
	Pools []DriftPool `json:"pools"` // by name
	// Nodes lists every node of the fleet, by name.
	Nodes []DriftNode `json:"nodes"`
}

// DriftPool counts one pool's drift.
type DriftPool struct {
	Name    string        `json:"name"`
	OnDrift model.OnDrift `json:"on_drift"`
	Size    int           `json:"size"`
	// Drifted counts the pool's nodes with drift or on a config the state lacks; Paths
	// the differences they reported (files, units, kernel arguments, OS image, unlisted).
	Drifted int `json:"drifted"`
	Paths   int `json:"paths"`
	// Changed counts the pool's nodes whose Outside lists something: changed since the
	// rollout in what the configuration does not manage.
	Changed int `json:"changed,omitempty"`
}

// DriftStatus is how a node stands against the config it runs.
type DriftStatus string

const (
	DriftClean DriftStatus = "clean" // as its config has it
	// DriftUnconfigured: the node runs no config of mcp's yet: nothing to compare (its
	// first config is a change for plan, not drift).
	DriftUnconfigured DriftStatus = "unconfigured"
	DriftDrifted      DriftStatus = "drifted"
	DriftUnmanaged    DriftStatus = "unmanaged" // no pool selects the node
	// DriftUnknownConfig: the node runs a rendered config the state does not hold, so
	// what it should look like is not known.
	DriftUnknownConfig DriftStatus = "unknown-config"
	// DriftChanged: the node is as its config has it, but differs from what was rolled
	// out in what the config does not manage (DriftNode.Outside): information.
	DriftChanged DriftStatus = "changed"
)

// Counts reports whether the status is a finding: what makes mcp drift exit 2. A change
// in what the configuration does not manage is one: the run says everything that differs
// from what was rolled out, though no plan acts on it (docs/decisions.md).
func (s DriftStatus) Counts() bool {
	return s == DriftDrifted || s == DriftUnmanaged || s == DriftUnknownConfig || s == DriftChanged
}

// DriftNode is one node's part of a drift report.
type DriftNode struct {
	Name          string        `json:"name"`
	Pool          string        `json:"pool,omitempty"`
	CurrentConfig string        `json:"current_config,omitempty"`
	Status        DriftStatus   `json:"status"`
	Drift         []model.Drift `json:"drift,omitempty"`
	// DriftUnlisted counts drifted paths the node reported without listing them.
	DriftUnlisted int `json:"drift_unlisted,omitempty"`
	// Outside lists how the node differs from what it ran at its rollout in what its
	// config does not manage (model.Node.Outside): reported, never restored.
	Outside []model.Drift `json:"outside,omitempty"`
}

// Paths is how many differences the node reported.
func (n *DriftNode) Paths() int { return len(n.Drift) + n.DriftUnlisted }

// HasDrift reports whether any node is a finding (DriftStatus.Counts).
func (r *DriftReport) HasDrift() bool {
	return slices.ContainsFunc(r.Nodes, func(n DriftNode) bool { return n.Status.Counts() })
}

// MakeDriftReport sorts a refreshed fleet (its nodes' Drift filled in against the configs
// they run) into a drift report: known holds the rendered configs the state has, by name.
// Only pool membership comes from the configuration; what a node should look like comes
// from the config it runs, as a drift check on the node itself would see it. It fails only
// on an ambiguous fleet (a node selected by two pools), as MakePlan does.
func MakeDriftReport(d *model.Desired, known map[string]*model.Rendered, fleet *model.Fleet) (*DriftReport, error) {
	members, _, err := assignPools(d.Pools, fleet.Nodes)
	if err != nil {
		return nil, err
	}
	poolOf := map[string]int{}
	r := &DriftReport{Pools: make([]DriftPool, len(d.Pools)), Nodes: make([]DriftNode, 0, len(fleet.Nodes))}
	for i, p := range d.Pools {
		r.Pools[i] = DriftPool{Name: p.Name, OnDrift: cmp.Or(p.OnDrift, model.OnDriftRestore), Size: len(members[p.Name])}
		for _, n := range members[p.Name] {
			poolOf[n.Name] = i
		}
	}
	for i := range fleet.Nodes {
		n := &fleet.Nodes[i]
		dn := DriftNode{Name: n.Name, CurrentConfig: n.CurrentConfig, Drift: n.Drift, DriftUnlisted: n.DriftUnlisted,
			Outside: n.Outside}
		pi, inPool := poolOf[n.Name]
		switch {
		case !inPool:
			dn.Status = DriftUnmanaged
		case n.CurrentConfig == "":
			dn.Status = DriftUnconfigured
		case known[n.CurrentConfig] == nil:
			dn.Status = DriftUnknownConfig
		case dn.Paths() > 0:
			dn.Status = DriftDrifted
		case len(dn.Outside) > 0:
			dn.Status = DriftChanged
		default:
			dn.Status = DriftClean
		}
		if inPool {
			dn.Pool = r.Pools[pi].Name
			if dn.Status == DriftDrifted || dn.Status == DriftUnknownConfig {
				r.Pools[pi].Drifted++
				r.Pools[pi].Paths += dn.Paths()
			}
			if len(dn.Outside) > 0 {
				r.Pools[pi].Changed++
			}
		}
		r.Nodes = append(r.Nodes, dn)
	}
	slices.SortFunc(r.Nodes, func(a, b DriftNode) int { return strings.Compare(a.Name, b.Name) })
	return r, nil
}
