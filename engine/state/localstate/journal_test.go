package localstate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mcpfleet/mcp/engine/state"
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
