package engine

import (
	"context"

	"github.com/mcpfleet/mcp/planner"
)

// Status observes the fleet once and reads the state, and computes each pool's status.
// It takes no lock and changes nothing: it is for watching a rollout another run is
// making, as `oc get mcp` is. It checks no disk for drift (that is the plan's job and costs
// a read of every managed file).
func (w *Workspace) Status(ctx context.Context) (*planner.Status, error) {
	st, err := w.ReadState(ctx)
	if err != nil {
		return nil, err
	}
	fleet, err := w.observe(ctx)
	if err != nil {
		return nil, err
	}
	return planner.MakeStatus(w.Desired, st.Pointers, fleet)
}
