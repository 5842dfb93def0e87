package localstate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mcpfleet/mcp/state"
)

// Appends from many goroutines at once all land, each record whole, and replay to what
// they recorded.
func TestConcurrentAppendJournal(t *testing.T) {
	b := &Local{Path: filepath.Join(t.TempDir(), "mcp.state")}
	var wg sync.WaitGroup
	for n := 0; n < 20; n++ {
		wg.Go(func() {
			for i := 0; i < 10; i++ {
				r := state.JournalRecord{Node: fmt.Sprintf("w-%d", n), From: "a", Target: "b", Step: fmt.Sprintf("write /etc/%d", i)}
				if err := b.AppendJournal(context.Background(), r); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	f, err := os.Open(b.journalPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := state.New()
	if err := s.ReplayJournal(f); err != nil {
		t.Fatal(err)
	}
	for n := 0; n < 20; n++ {
		e := s.Journal[fmt.Sprintf("w-%d", n)]
		if len(e.Done) != 10 || e.Done[9] != "write /etc/9" {
			t.Errorf("w-%d: %v", n, e.Done)
		}
	}
}

// The journal file is kept open between appends; a Write, which folds and removes the
// journal, must not leave later appends going to the removed file.
func TestAppendAfterWriteLandsInNewJournal(t *testing.T) {
	ctx := context.Background()
	b := &Local{Path: filepath.Join(t.TempDir(), "mcp.state")}
	if err := b.Write(ctx, state.New()); err != nil {
		t.Fatal(err)
	}
	first := state.JournalRecord{Node: "w-1", From: "a", Target: "b", Step: "cordon"}
	if err := b.AppendJournal(ctx, first); err != nil {
		t.Fatal(err)
	}
	s, err := b.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Serial++
	if err := b.Write(ctx, s); err != nil {
		t.Fatal(err)
	}
	second := state.JournalRecord{Node: "w-2", From: "a", Target: "b", Step: "cordon"}
	if err := b.AppendJournal(ctx, second); err != nil {
		t.Fatal(err)
	}
	got, err := (&Local{Path: b.Path}).Read(ctx) // another reader: what is on disk
	if err != nil {
		t.Fatal(err)
	}
	if e := got.Journal["w-2"]; len(e.Done) != 1 || e.Done[0] != "cordon" {
		t.Errorf("the append after the write is not in the journal on disk: %+v", got.Journal)
	}
	if e := got.Journal["w-1"]; len(e.Done) != 1 {
		t.Errorf("the folded record is not in the state: %+v", got.Journal)
	}
}
