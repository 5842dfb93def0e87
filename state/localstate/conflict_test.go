package localstate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/state"
)

// A write over a state another writer replaced since this backend read it (two applies,
// one run with -lock=false) is refused with state.ErrConflict; after a fresh read it goes
// through. So do writes of a backend that never read, and over a state that does not read.
func TestWriteOverAnotherWritersStateConflicts(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "mcp.state")
	a, b := &Local{Path: path}, &Local{Path: path}
	s := state.New()
	if _, err := a.Read(ctx); err != nil { // no state yet
		t.Fatal(err)
	}
	if _, err := b.Read(ctx); err != nil {
		t.Fatal(err)
	}
	s.Serial = 1
	if err := b.Write(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := a.Write(ctx, s); !errors.Is(err, state.ErrConflict) {
		t.Fatalf("a's write over b's state: %v, want a conflict", err)
	}
	if _, err := a.Read(ctx); err != nil {
		t.Fatal(err)
	}
	s.Serial = 2
	if err := a.Write(ctx, s); err != nil {
		t.Fatalf("a's write after reading again: %v", err)
	}
	s.Serial = 3
	if err := a.Write(ctx, s); err != nil {
		t.Fatalf("a's write over its own: %v", err)
	}
	if err := (&Local{Path: path}).Write(ctx, s); err != nil {
		t.Fatalf("a backend that never read: %v", err)
	}
}

// A journal another writer's state write removed is opened anew: the records appended
// after are in the file, not lost with the removed one.
func TestJournalRemovedByAnotherWriterIsOpenedAnew(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "mcp.state")
	a, b := &Local{Path: path}, &Local{Path: path}
	rec := func(step string) state.JournalRecord {
		return state.JournalRecord{Node: "worker-0", Target: "rendered-worker-1", Step: step}
	}
	if err := a.AppendJournal(ctx, rec("cordon")); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(ctx, state.New()); err != nil { // folds and removes the journal
		t.Fatal(err)
	}
	if err := a.AppendJournal(ctx, rec("drain")); err != nil {
		t.Fatal(err)
	}
	st, err := (&Local{Path: path}).Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Journal["worker-0"].Done; len(got) != 1 || got[0] != "drain" {
		t.Errorf("journal after the removal: %v, want the record appended after it", got)
	}
}

// The sweep of a killed writer's temporaries, as the lock is taken, waits for a live
// writer (one that runs without the lock), whose temporary file is its write in progress.
func TestSweepWaitsForAWriterWithoutTheLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.state")
	l := &Local{Path: path}
	tmp := filepath.Join(filepath.Dir(path), ".mcp.state.tmp-0123456789ab")
	if err := os.WriteFile(tmp, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	unlock, err := l.lockWrites() // a writer mid-write
	if err != nil {
		t.Fatal(err)
	}
	locked := make(chan error, 1)
	go func() {
		u, err := l.Lock(context.Background(), state.NewLockInfo("apply", "test"))
		if err == nil {
			defer u.Unlock(context.Background())
		}
		locked <- err
	}()
	time.Sleep(50 * time.Millisecond) // give the sweep a chance to run early: it must not
	if _, err := os.Stat(tmp); err != nil {
		t.Fatalf("the sweep removed a live writer's temporary file: %v", err)
	}
	unlock()
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("the temporary file of a writer that is done is left: %v", err)
	}
}
