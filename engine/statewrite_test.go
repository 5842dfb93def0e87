package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state"
)

// beaten is a backend whose first writes lose to another writer, as a state Secret does
// while another apply's nodes append to its journal at every step.
type beaten struct {
	state.Backend
	lose, writes int
}

func (b *beaten) Write(ctx context.Context, s *state.State) error {
	b.writes++
	if b.writes <= b.lose {
		return fmt.Errorf("writing state: %w since this run read it; run again", state.ErrConflict)
	}
	return b.Backend.Write(ctx, s)
}

// Without the lock, a write that keeps losing to a busy neighbour is made again (from a
// fresh read, after a pause) well past a handful of times; a writer that never lets go
// still gets an error, and the state is left as it was.
func TestWriteStateOutlastsABusyNeighbour(t *testing.T) {
	saved := conflictPause
	defer func() { conflictPause = saved }()
	conflictPause.first, conflictPause.most = time.Millisecond, 4*time.Millisecond
	for _, tc := range []struct {
		lose    int
		wantErr bool
	}{{lose: 8}, {lose: 1000, wantErr: true}} {
		t.Run(fmt.Sprintf("loses %d", tc.lose), func(t *testing.T) {
			w := load(t, quickstart(t))
			ctx := context.Background()
			if err := w.Backend.Write(ctx, state.New()); err != nil {
				t.Fatal(err)
			}
			st, err := w.Backend.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			b := &beaten{Backend: w.Backend, lose: tc.lose}
			w.Backend = b
			a := &applier{w: w, st: st.Clone(), base: st.Clone(), opts: ApplyOptions{Lock: Locking{NoLock: true}}}
			a.st.BootImages = map[string]model.BootImageDef{"worker": {Name: "test", OSImage: "quay.io/test:1"}}
			err = a.writeState(ctx)
			if tc.wantErr {
				if !errors.Is(err, state.ErrConflict) || b.writes != conflictAttempts {
					t.Fatalf("err %v after %d writes; want ErrConflict after %d", err, b.writes, conflictAttempts)
				}
				return
			}
			if err != nil || b.writes != tc.lose+1 {
				t.Fatalf("err %v after %d writes; want success at write %d", err, b.writes, tc.lose+1)
			}
			got, err := b.Backend.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got.BootImages["worker"].Name != "test" || got.Serial != st.Serial+1 {
				t.Fatalf("stored boot image %+v serial %d; want the change at serial %d", got.BootImages["worker"], got.Serial, st.Serial+1)
			}
		})
	}
}
