package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpfleet/mcp/state"
)

// A pool's pause is recorded by apply (state.PausedSince): the pause takes effect when an
// apply first holds the pool's changes back, as an MCO pool's pause takes effect when the
// controller next syncs it. Apply records it as it publishes (applier.publish), and an
// apply with nothing to change records it too (NotePauses): a pool is paused since the
// first apply that saw it paused, whether a change waited then or not. Plans and status
// only read the record: they write no state.

// NotePauses records the pools' pauses in st, as an apply started at now sees them, when an
// apply has nothing else to do, and writes the state when a record changed: under the
// state lock as lock says (without it, merged into the state as it is now). st is the
// state the caller read; it is not changed. A state never written (no lineage) is left
// alone: the first apply that changes something writes it.
func (w *Workspace) NotePauses(ctx context.Context, st *state.State, lock Locking, now time.Time) error {
	if w.Desired == nil || st.Lineage == "" {
		return nil
	}
	next := st.Clone()
	if !next.NotePauses(w.Desired.Pools, now) {
		return nil
	}
	a := &applier{w: w, st: next, base: st.Clone(), opts: ApplyOptions{Lock: lock}}
	if err := a.writeState(ctx); err != nil {
		return fmt.Errorf("recording the pools' pauses in the state: %w", err)
	}
	return nil
}
