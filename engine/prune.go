package engine

import (
	"context"
	"slices"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state"
)

// Prune says which stored rendered configs nothing uses any more (mcp prune). Rendered
// configs are immutable and every change of a pool's config stores a new one, so without
// pruning they pile up (in the cluster, one Secret each).
type Prune struct {
	Delete []string          // sorted
	Keep   map[string]string // name → why it is kept (the first reason found)
}

// Prunable refreshes the fleet and finds the rendered configs in st that nothing uses. A
// rendered config is kept while a pool's boot pointer names it (nodes booting now get it),
// a node runs it or was told to move to it, an unfinished apply's journal names it, the
// configuration renders it now (the next plan's target), or a pool's pointer history names
// it (what mcp rollback goes back to: the last state.HistoryLimit configs of each pool).
func (w *Workspace) Prunable(ctx context.Context, st *state.State) (*Prune, error) {
	fleet, err := w.observe(ctx, false) // which configs nodes run, not their drift
	if err != nil {
		return nil, err
	}
	variants, err := w.variantsFor(fleet.Nodes)
	if err != nil {
		return nil, err
	}
	return prunable(st, fleet, w.Rendered, variants), nil
}

// prunable: current are the pools' configs rendered now, by pool; variants the nodes' and
// machines' variants of them rendered now (planner.Variants), by "node NAME" and "machine NAME".
func prunable(st *state.State, fleet *model.Fleet, current, variants map[string]*model.Rendered) *Prune {
	p := &Prune{Keep: map[string]string{}}
	keep := func(name, why string) {
		if _, ok := p.Keep[name]; !ok && st.Rendered[name] != nil {
			p.Keep[name] = why
		}
	}
	for pool, name := range st.Pointers {
		keep(name, "boot config of pool "+pool)
	}
	for machine, m := range st.Machines {
		keep(m.Rendered, "boot config of machine "+machine)
	}
	for pool, h := range st.History {
		for _, c := range h {
			keep(c.Rendered, "in the rollback history of pool "+pool)
		}
	}
	for _, n := range fleet.Nodes {
		keep(n.CurrentConfig, "running on node "+n.Name)
		keep(n.DesiredConfig, "desired by node "+n.Name)
	}
	for node, j := range st.Journal {
		keep(j.From, "in the journal of node "+node)
		keep(j.Target, "in the journal of node "+node)
	}
	for pool, r := range current {
		keep(r.Name, "rendered now for pool "+pool)
	}
	for who, r := range variants {
		keep(r.Name, "rendered now for "+who)
	}
	for name := range st.Rendered {
		if _, ok := p.Keep[name]; !ok {
			p.Delete = append(p.Delete, name)
		}
	}
	slices.Sort(p.Delete)
	return p
}
