package localstate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state"
)

const goodLine = `{"node":"w-1","from":"r-a","target":"r-b","step":"cordon"}` + "\n"

func TestLocalJournalErrorNamesFileAndLine(t *testing.T) {
	ctx := context.Background()
	b := &Local{Path: filepath.Join(t.TempDir(), "mcp.state")}
	if err := os.WriteFile(b.journalPath(), []byte(goodLine+"}{\n"+goodLine), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := b.Read(ctx)
	if err == nil {
		t.Fatal("a journal with a bad middle line was read")
	}
	for _, want := range []string{b.journalPath(), "line 2", "mcp plan"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// TestLocalJournalLongLine: a line longer than any record is refused naming the file and
// line, without reading it whole.

func TestLocalJournalLongLine(t *testing.T) {
	ctx := context.Background()
	b := &Local{Path: filepath.Join(t.TempDir(), "mcp.state")}
	long := `{"node":"` + strings.Repeat("x", 2<<20) + `","target":"r","step":"cordon"}` + "\n"
	if err := os.WriteFile(b.journalPath(), []byte(goodLine+long), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := b.Read(ctx)
	if err == nil || !strings.Contains(err.Error(), b.journalPath()) || !strings.Contains(err.Error(), "line 2") ||
		strings.Contains(err.Error(), "token too long") {
		t.Fatalf("long journal line: %v, want an error naming %s and line 2", err, b.journalPath())
	}
}

func TestLocalRoundTripAndJournal(t *testing.T) {
	ctx := context.Background()
	b := &Local{Path: filepath.Join(t.TempDir(), "mcp.state")}
	s, err := b.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Lineage != "" || s.Serial != 0 {
		t.Fatalf("absent state read as %+v", s)
	}
	s = state.New()
	s.Serial = 1
	r := &model.Rendered{Pool: "worker"}
	r.Name = content.Name(r)
	s.Pointers["worker"] = r.Name
	s.Rendered[r.Name] = r
	if err := b.Write(ctx, s); err != nil {
		t.Fatal(err)
	}
	for _, r := range []state.JournalRecord{
		{Node: "w-1", Target: "rendered-worker-abc", Step: "cordon"},
		{Node: "w-1", Target: "rendered-worker-abc", Step: "drain"},
		{Node: "w-2", Target: "rendered-worker-abc", Step: "cordon"},
		{Node: "w-2", Target: "rendered-worker-abc", Finished: true},
	} {
		if err := b.AppendJournal(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	// A crash mid-append leaves a torn last line: it must be ignored, not fail the read.
	f, _ := os.OpenFile(b.journalPath(), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"node":"w-1","tar`)
	f.Close()
	got, err := b.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]model.JournalEntry{"w-1": {Target: "rendered-worker-abc", Done: []string{"cordon", "drain"}}}
	if d := cmp.Diff(want, got.Journal); d != "" {
		t.Errorf("journal (-want +got):\n%s", d)
	}
	if got.Lineage != s.Lineage || got.Pointers["worker"] != r.Name || got.Rendered[r.Name] == nil {
		t.Errorf("state did not round-trip: %+v", got)
	}
	// Writing folds the journal into the state and clears it.
	got.Serial++
	if err := b.Write(ctx, got); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(b.journalPath()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("journal still present after write: %v", err)
	}
	again, _ := b.Read(ctx)
	if d := cmp.Diff(want, again.Journal); d != "" {
		t.Errorf("folded journal (-want +got):\n%s", d)
	}
}

func TestLocalLockNamesHolder(t *testing.T) {
	ctx := context.Background()
	b := &Local{Path: filepath.Join(t.TempDir(), "mcp.state")}
	first := state.NewLockInfo("apply", "test")
	first.Who = "alice@node1"
	u, err := b.Lock(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	_, err = state.LockWait(ctx, b, state.NewLockInfo("plan", "test"), 300*time.Millisecond)
	var le *state.LockError
	if !errors.As(err, &le) {
		t.Fatalf("second lock: %v, want a state.LockError", err)
	}
	for _, s := range []string{"alice@node1", `"apply"`, first.ID, "force-unlock"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("lock error %q does not mention %s", err, s)
		}
	}
	if err := b.ForceUnlock(ctx, "wrong-id"); err == nil {
		t.Error("force-unlock with a wrong ID succeeded")
	}
	if err := u.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	u2, err := b.Lock(ctx, state.NewLockInfo("plan", "test"))
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	u2.Unlock(ctx)
}

func TestLockWaitGetsLockOnceReleased(t *testing.T) {
	ctx := context.Background()
	b := &Local{Path: filepath.Join(t.TempDir(), "mcp.state")}
	u, err := b.Lock(ctx, state.NewLockInfo("apply", "test"))
	if err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(100 * time.Millisecond); u.Unlock(ctx) }()
	u2, err := state.LockWait(ctx, b, state.NewLockInfo("plan", "test"), 10*time.Second)
	if err != nil {
		t.Fatalf("waiting for a released lock: %v", err)
	}
	u2.Unlock(ctx)
}

func TestLocalReadRefusesEmptyStateFile(t *testing.T) {
	b := &Local{Path: filepath.Join(t.TempDir(), "mcp.state")}
	for _, content := range []string{"", "\n", "null", "{}"} {
		if err := os.WriteFile(b.Path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := b.Read(context.Background())
		if err == nil || !strings.Contains(err.Error(), b.Path) {
			t.Errorf("state file %q: %v, want an error naming %s", content, err, b.Path)
		}
	}
}
