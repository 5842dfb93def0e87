package local

import (
	"maps"
	"slices"
	"time"

	"github.com/mcpfleet/mcp/model"
)

// pdbIndex counts each PodDisruptionBudget's healthy pods node by node (a pod is healthy
// when it is selected, ready, not evicted and on a Ready node, as Refresh computes it), so
// that a drain counts again only the nodes whose files changed since the last drain —
// and those whose reboot ended meanwhile — instead of reading the whole fleet. It lives
// in the cache, under its lock.
type pdbIndex struct {
	built bool
	specs []pdbSpec
	pdbs  []model.PDB // specs, for Matches
	// per node: its healthy pods per PDB (nil: none)
	nodes   map[string][]int
	healthy []int
	// to count again: changed nodes; nodes whose directory is not watched (always);
	// nodes down for a reboot, at the time it ends
	dirty     map[string]bool
	unwatched map[string]bool
	rebooting map[string]time.Time
}

// changed marks node to be counted again.
func (x *pdbIndex) changed(node string) {
	if x.built {
		x.dirty[node] = true
	}
}

// pdbStatus returns the PDBs of specs with their status now, counting again what changed.
func (c *cache) pdbStatus(specs []pdbSpec, now time.Time) ([]model.PDB, error) {
	x := &c.pdb
	if len(specs) == 0 {
		return nil, nil
	}
	if !slices.EqualFunc(specs, x.specs, equalSpec) {
		x.built = false
	}
	if !x.built {
		if err := c.countAll(specs, now); err != nil {
			return nil, err
		}
	} else {
		for n, until := range x.rebooting {
			if !now.Before(until) {
				x.dirty[n] = true
			}
		}
		for n := range x.unwatched {
			x.dirty[n] = true
		}
		for n := range x.dirty {
			if err := c.count(n, now); err != nil {
				x.built = false
				return nil, err
			}
			delete(x.dirty, n)
		}
	}
	out := make([]model.PDB, len(specs))
	for i, b := range x.pdbs {
		b.SetHealthy(x.healthy[i])
		out[i] = b
	}
	return out, nil
}

// countAll counts every node of the fleet.
func (c *cache) countAll(specs []pdbSpec, now time.Time) error {
	x := &c.pdb
	names, err := nodeNames(c.dir)
	if err != nil {
		return err
	}
	*x = pdbIndex{specs: slices.Clone(specs), nodes: map[string][]int{}, healthy: make([]int, len(specs)),
		dirty: map[string]bool{}, unwatched: map[string]bool{}, rebooting: map[string]time.Time{}}
	for _, s := range specs {
		x.pdbs = append(x.pdbs, model.PDB{Namespace: s.Namespace, Name: s.Name, Selector: s.Selector, MinAvailable: s.MinAvailable})
	}
	for _, n := range names {
		if err := c.count(n, now); err != nil {
			return err
		}
	}
	x.built = true
	return nil
}

// count (re)counts node's healthy pods.
func (c *cache) count(node string, now time.Time) error {
	x := &c.pdb
	for i, k := range x.nodes[node] {
		x.healthy[i] -= k
	}
	delete(x.nodes, node)
	delete(x.rebooting, node)
	if _, kept := c.entry(node); kept {
		delete(x.unwatched, node)
	} else {
		x.unwatched[node] = true
	}
	r, err := c.record(node)
	if err != nil {
		return err
	}
	pods, err := c.pods(node)
	if err != nil {
		return err
	}
	if r.rebooting() && !r.RebootingUntil.IsZero() && now.Before(r.RebootingUntil) {
		x.rebooting[node] = r.RebootingUntil
	}
	if !r.Ready && !r.rebootOver(now) {
		return nil
	}
	var counts []int
	for i := range pods {
		pod := &pods[i]
		if pod.Evicted || !pod.Ready {
			continue
		}
		mp := model.Pod{Namespace: pod.Namespace, Name: pod.Name, Labels: pod.Labels}
		for j := range x.pdbs {
			if x.pdbs[j].Matches(&mp) {
				if counts == nil {
					counts = make([]int, len(x.pdbs))
				}
				counts[j]++
				x.healthy[j]++
			}
		}
	}
	if counts != nil {
		x.nodes[node] = counts
	}
	return nil
}

func equalSpec(a, b pdbSpec) bool {
	return a.Namespace == b.Namespace && a.Name == b.Name && a.MinAvailable == b.MinAvailable &&
		maps.Equal(a.Selector, b.Selector)
}
