package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/mcpfleet/mcp/state"
)

// writeState stores a.st with its serial one up. Under the state lock nobody else should
// write the state, and a.st is written as it is. Without it (Locking.NoLock) another apply may have
// written the state since this one read it — and an apply run with -lock=false may write
// beside one that holds the lock: then a.st's changes (the pointers, boot images and
// journal entries this apply changed) are merged into the state as it is now (state.Merge).
// A write another writer beat (state.ErrConflict) is made again from a fresh read, after a
// random pause that grows: another apply's nodes append to the journal at every step, and
// on a loaded machine a fresh read can take long enough for a few of them to land, so a
// fixed handful of immediate retries lost to a busy neighbour. What a.st is afterwards is
// what was written.
func (a *applier) writeState(ctx context.Context) error {
	pause := conflictPause.first
	for attempt := 1; ; attempt++ {
		next := a.st
		if a.opts.Lock.NoLock || attempt > 1 {
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
		if errors.Is(err, state.ErrConflict) && attempt < conflictAttempts {
			select {
			case <-ctx.Done():
				return err
			case <-time.After(pause/2 + rand.N(pause)):
			}
			pause = min(2*pause, conflictPause.most)
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

// conflictAttempts bounds writeState's retries: with its pauses (conflictPause: 20ms doubling
// to 1s, each 0.5–1.5× at random) about 15 s of losing to other writers before it gives up.
const conflictAttempts = 20

var conflictPause = struct{ first, most time.Duration }{20 * time.Millisecond, time.Second}
