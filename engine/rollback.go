package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state"
)

// RollbackTargets resolves mcp rollback's pools to the rendered config each goes back to:
// to when given (one pool only: a rendered config is one pool's), else the config the
// pool ran before the one its pointer names now (state.Before). The config must be
// stored in st, and be the pool's; an error names what is there to choose from.
func (w *Workspace) RollbackTargets(st *state.State, pools []string, to string) (map[string]string, error) {
	if len(pools) == 0 {
		return nil, fmt.Errorf("name the pools to roll back (pools: %s)", strings.Join(w.poolNames(), ", "))
	}
	if to != "" && len(pools) > 1 {
		return nil, fmt.Errorf("-to names one rendered config, which is one pool's: roll back one pool with it (given: %s)", strings.Join(pools, ", "))
	}
	out := map[string]string{}
	for _, pool := range pools {
		if !slices.Contains(w.poolNames(), pool) {
			return nil, fmt.Errorf("pool %q is not in the configuration (pools: %s)", pool, strings.Join(w.poolNames(), ", "))
		}
		if why := w.chosenNodes(st, pool); why != "" {
			return nil, fmt.Errorf("pool %s has configs for chosen nodes (%s): a rollback puts every node of the pool on one earlier rendered config, and mcp keeps no earlier config of chosen nodes to put them back on; revert the configuration and apply instead", pool, why)
		}
		name := to
		if name == "" {
			before, ok := st.Before(pool)
			if !ok {
				return nil, fmt.Errorf("pool %s has no earlier rendered config in its history (%s); name one with -to (%s)",
					pool, historyWords(st, pool), storedWords(st, pool))
			}
			name = before.Rendered
		}
		r := st.Rendered[name]
		switch {
		case r == nil && inHistory(st, pool, name):
			return nil, fmt.Errorf("rendered config %s is in pool %s's history but no longer stored; %s", name, pool, storedWords(st, pool))
		case r == nil:
			return nil, fmt.Errorf("rendered config %s is neither in pool %s's history nor stored (%s; %s)", name, pool, historyWords(st, pool), storedWords(st, pool))
		case r.Pool != "" && r.Pool != pool:
			return nil, fmt.Errorf("rendered config %s is pool %s's, not pool %s's (%s)", name, r.Pool, pool, storedWords(st, pool))
		}
		out[pool] = name
	}
	return out, nil
}

// RollingBack is w with the stored rendered config to[pool] as the target of each pool
// named, in place of what the configuration renders: a plan made from it (and the apply
// of that plan) rolls those pools back, through the same planner and engine. The
// configuration is not changed. w itself is not.
func (w *Workspace) RollingBack(st *state.State, to map[string]string) (*Workspace, error) {
	rendered := maps.Clone(w.Rendered)
	for pool, name := range to {
		r := st.Rendered[name]
		if r == nil || rendered[pool] == nil {
			return nil, fmt.Errorf("rollback of pool %s to %s: the state stores no such rendered config, or the configuration no such pool", pool, name)
		}
		rendered[pool] = r
	}
	return &Workspace{Dir: w.Dir, Config: w.Config, Desired: w.Desired, Rendered: rendered, Provider: w.Provider,
		Backend: w.Backend, Alerts: w.Alerts, rollback: maps.Clone(to)}, nil
}

// rollbackPools is the set of pools w rolls back (RollingBack), for the planner.
func (w *Workspace) rollbackPools() map[string]bool {
	if len(w.rollback) == 0 {
		return nil
	}
	out := make(map[string]bool, len(w.rollback))
	for pool := range w.rollback {
		out[pool] = true
	}
	return out
}

// markRollbacks records in st where this apply moved a pool's pointer: the pool's
// history, and its rollback mark — set when a rollback moved it (from is the config it
// ran before), cleared when the pool now points at what the configuration renders.
func markRollbacks(st *state.State, pool, rendered string, rollback bool, why string, at time.Time) {
	from := st.Pointers[pool]
	st.MovePointer(pool, rendered, at, rollback)
	switch {
	case rollback && from != rendered:
		if st.RolledBack == nil {
			st.RolledBack = map[string]model.RolledBack{}
		}
		st.RolledBack[pool] = model.RolledBack{To: rendered, From: from, At: at.UTC().Truncate(time.Second), Why: why}
	case !rollback:
		delete(st.RolledBack, pool)
	}
}

// chosenNodes says why pool has configs for chosen nodes ("" when it has none): a config
// of the configuration targets nodes of it, or its last apply left variants on its nodes.
func (w *Workspace) chosenNodes(st *state.State, pool string) string {
	for i := range w.Desired.Configs {
		if c := &w.Desired.Configs[i]; c.Targeted() && slices.Contains(c.Pools, pool) {
			return "config " + c.Name
		}
	}
	if vs := st.Variants[pool]; len(vs) > 0 {
		return "its nodes run " + vs[0].Rendered
	}
	return ""
}

func (w *Workspace) poolNames() []string {
	out := make([]string, 0, len(w.Desired.Pools))
	for _, p := range w.Desired.Pools {
		out = append(out, p.Name)
	}
	return out
}

func inHistory(st *state.State, pool, name string) bool {
	return slices.ContainsFunc(st.History[pool], func(c model.PointerChange) bool { return c.Rendered == name })
}

// historyWords lists a pool's history, newest first, for an error.
func historyWords(st *state.State, pool string) string {
	h := st.History[pool]
	if len(h) == 0 {
		return "the state records no history of it yet"
	}
	var out []string
	for i := len(h) - 1; i >= 0; i-- {
		when := "when unknown"
		if !h[i].Applied.IsZero() {
			when = h[i].Applied.Format(time.RFC3339)
		}
		cur := ""
		if h[i].Rendered == st.Pointers[pool] && i == len(h)-1 {
			cur = ", current"
		}
		out = append(out, fmt.Sprintf("%s (%s%s)", h[i].Rendered, when, cur))
	}
	return "its history, newest first: " + strings.Join(out, ", ")
}

// storedWords lists the stored rendered configs of a pool, for an error.
func storedWords(st *state.State, pool string) string {
	var names []string
	for name, r := range st.Rendered {
		if r.Pool == pool || r.Pool == "" && strings.HasPrefix(name, "rendered-"+pool+"-") {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return "the state stores no rendered config of pool " + pool
	}
	slices.Sort(names)
	return "stored rendered configs of pool " + pool + ": " + strings.Join(names, ", ")
}
