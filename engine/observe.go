package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"

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
	if w.Variants != nil {
		return w.Variants.Named(name)
	}
	return nil
}

// observeConfigs asks the provider what each node whose current config is absent or
// unknown carries against its pool's target (providers.ConfigObserver; planner.ToObserve
// names them), so that the plan derives their steps from it. A node that cannot be
// observed is planned as without an observation, the reason in its plan; only an
// interrupted refresh is an error.
func (w *Workspace) observeConfigs(ctx context.Context, st *state.State, fleet *model.Fleet) (int, error) {
	co := w.provider()
	if !co.Has(providers.CapConfigObserver) {
		return 0, nil
	}
	nodeR, _, err := w.variants(fleet.Nodes)
	if err != nil {
		return 0, err
	}
	todo := planner.ToObserve(w.Desired, w.Rendered, nodeR, st.Rendered, fleet.Nodes)
	unpublished := w.publishTargets(ctx, todo)
	var g errgroup.Group
	g.SetLimit(8)
	for i := range fleet.Nodes {
		n := &fleet.Nodes[i]
		target := todo[n.Name]
		if target == nil {
			continue
		}
		g.Go(func() error {
			o, err := model.Observation{}, unpublished[target.Name]
			if err == nil {
				o, err = co.ObserveConfig(ctx, n.Name, target)
			}
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
	return len(todo), g.Wait()
}

// publishTargets stores the targets of the nodes to observe where the agents fetch rendered
// configs from, when the state backend is such a store (state.RenderedPublisher): an agent
// asked what it carries of a config fetches it as for an update. It gives the error of each
// target that could not be stored (the identity may not write there: a plan with read-only
// credentials): its nodes are then planned without an observation, that error their reason.
func (w *Workspace) publishTargets(ctx context.Context, todo map[string]*model.Rendered) map[string]error {
	pub, ok := w.Backend.(state.RenderedPublisher)
	if !ok {
		return nil
	}
	failed := map[string]error{}
	done := map[string]bool{}
	for _, node := range slices.Sorted(maps.Keys(todo)) {
		r := todo[node]
		if done[r.Name] {
			continue
		}
		done[r.Name] = true
		if err := pub.PublishRendered(ctx, r); err != nil {
			failed[r.Name] = fmt.Errorf("publishing %s for the node's agent to fetch: %w", r.Name, err)
		}
	}
	return failed
}
