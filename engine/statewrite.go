package engine

import (
	"context"
	"errors"

	"github.com/mcpfleet/mcp/state"
)

// writeState stores a.st with its serial one up. Under the state lock nobody else should
// write the state, and a.st is written as it is. Without it (NoLock) another apply may have
// written the state since this one read it — and an apply run with -lock=false may write
// beside one that holds the lock: then a.st's changes (the pointers, boot images and
// journal entries this apply changed) are merged into the state as it is now (state.Merge).
// A write another writer beat (state.ErrConflict) is made again from a fresh read. What a.st
// is afterwards is what was written.
func (a *applier) writeState(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		next := a.st
		if a.w.NoLock || attempt > 1 {
			theirs, err := a.w.Backend.Read(ctx)
			if err != nil {
				return err
			}
			a.mu.Lock()
			next, err = state.Merge(a.base, a.st, theirs)
			a.mu.Unlock()
			if err != nil {
				return err
			}
		}
		next.Serial++
		err := a.w.Backend.Write(ctx, next)
		if errors.Is(err, state.ErrConflict) && attempt < 5 {
			continue
		}
		if err != nil {
			return err
		}
		a.mu.Lock()
		a.st, a.base = next, next.Clone()
		a.mu.Unlock()
		return nil
	}
}
