package engine

import (
	"context"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state"

	"github.com/mcpfleet/mcp/planner"
)

// Status observes the fleet once and reads the state, and computes each pool's status and
// each machine template's.
// It takes no lock and changes nothing: it is for watching a rollout another run is
// making, as `oc get mcp` is. It refreshes as plan does, with each node's drift, so that
// a node counts as updated only when what it reports of itself matches its config (on
// the local fleet that reads every managed file).
func (w *Workspace) Status(ctx context.Context) (*planner.Status, error) {
	st, fleet, err := w.readRefreshed(ctx, false)
	if err != nil {
		return nil, err
	}
	s, err := planner.MakeStatus(w.Desired, st.Pointers, st.Variants, fleet)
	if err != nil {
		return nil, err
	}
	if err := w.statusPauses(s, st, fleet); err != nil {
		return nil, err
	}
	for i := range s.Pools {
		if m, ok := st.RolledBack[s.Pools[i].Name]; ok && w.Rendered[s.Pools[i].Name] != nil && w.Rendered[s.Pools[i].Name].Name != m.To {
			s.Pools[i].RolledBack = &m
		}
	}
	s.Templates = planner.MakeTemplateStatus(w.Desired, w.Rendered, st.BootImages, fleet.Templates)
	s.Ran = ranStatus(w.RanSeen(st, fleet.Nodes, time.Now()))
	return s, nil
}

// Drift refreshes the fleet — with each node's disk, kernel arguments and OS image checked
// against the config it runs, as a plan's refresh does — and reports how each differs. It
// takes no lock and writes nothing (state, fleet, the nodes' disks): a drift run must
// neither wait for nor block an apply, and may run as often as it likes.
func (w *Workspace) Drift(ctx context.Context) (*planner.DriftReport, error) {
	st, fleet, err := w.readRefreshed(ctx, true)
	if err != nil {
		return nil, err
	}
	return planner.MakeDriftReport(w.Desired, st.Rendered, fleet)
}

// readRefreshed reads the state, then refreshes the fleet against it (refreshWith).
func (w *Workspace) readRefreshed(ctx context.Context, nodesOnly bool) (*state.State, *model.Fleet, error) {
	st, err := w.ReadState(ctx)
	if err != nil {
		return nil, nil, err
	}
	fleet, err := w.refreshWith(ctx, st, nodesOnly)
	if err != nil {
		return nil, nil, err
	}
	return st, fleet, nil
}

// statusPauses fills in what each paused pool's pause holds, planned from the state and
// the fleet as a plan would (without what only a plan acts on: claims, interrupted
// applies), and since when the state says it is paused.
func (w *Workspace) statusPauses(s *planner.Status, st *state.State, fleet *model.Fleet) error {
	pauses, err := planner.Pauses(planner.Input{Desired: w.Desired, Rendered: w.Rendered, Known: st.Rendered,
		Pointers: st.Pointers, BootImages: st.BootImages, Fleet: fleet, Now: time.Now(), PausedSince: st.PausedSince})
	if err != nil {
		return err
	}
	for i := range s.Pools {
		s.Pools[i].Pause = pauses[s.Pools[i].Name]
	}
	return nil
}
