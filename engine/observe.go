package engine

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/providers"
	"github.com/mcpfleet/mcp/state"
)

// knownConfig is the rendered config named name as the state remembers it, or as this
// workspace renders it (a state lost on a fleet that runs names mcp made: the names are
// content digests, so the same name is the same config); nil when neither has it.
func (w *Workspace) knownConfig(st *state.State, name string) *model.Rendered {
	if name == "" {
		return nil
	}
	if r := st.Rendered[name]; r != nil {
		return r
	}
	for _, r := range w.Rendered {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// observeConfigs asks the provider what each node whose current config is absent or
// unknown carries against its pool's target (providers.ConfigObserver; planner.ToObserve
// names them), so that the plan derives their steps from it. A node that cannot be
// observed is planned as without an observation, the reason in its plan; only an
// interrupted refresh is an error.
func (w *Workspace) observeConfigs(ctx context.Context, st *state.State, fleet *model.Fleet) error {
	co := w.provider()
	if !co.Has(providers.CapConfigObserver) {
		return nil
	}
	todo := planner.ToObserve(w.Desired, w.Rendered, st.Rendered, fleet.Nodes)
	var g errgroup.Group
	g.SetLimit(8)
	for i := range fleet.Nodes {
		n := &fleet.Nodes[i]
		target := todo[n.Name]
		if target == nil {
			continue
		}
		g.Go(func() error {
			o, err := co.ObserveConfig(ctx, n.Name, target)
			if err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("observing node %s: %w", n.Name, err)
				}
				o = model.Observation{Target: target.Name, Reason: err.Error()}
			}
			w.explain(ctx, n.Name, target, o.Drift)
			n.Observed = &o
			return nil
		})
	}
	return g.Wait()
}
