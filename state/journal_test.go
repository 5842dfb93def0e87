package state

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

const goodLine = `{"node":"w-1","from":"r-a","target":"r-b","step":"cordon"}` + "\n"

// TestReplayJournalRefusesBadLines: only a torn last line (no newline: a crash mid-append)
// may be skipped; a bad line anywhere else would drop the records after it, so it is an
// error with its line number.
func TestReplayJournalRefusesBadLines(t *testing.T) {
	for _, c := range []struct{ name, journal, want string }{
		{"garbage in the middle", goodLine + "not json\n" + goodLine, "line 2"},
		{"torn line followed by more", goodLine + `{"node":"w-1","tar` + goodLine, "line 2"},
		{"no node", goodLine + `{"target":"r-b","step":"cordon"}` + "\n", "line 2"},
		{"no target", `{"node":"w-1","step":"drain"}` + "\n", "line 1"},
		{"no step", `{"node":"w-1","target":"r-b"}` + "\n", "line 1"},
		{"unknown step", `{"node":"w-1","target":"r-b","step":"explode"}` + "\n", "line 1"},
		{"unknown field", `{"node":"w-1","target":"r-b","step":"drain","nodes":"w-2"}` + "\n", "line 1"},
		{"null", "null\n" + goodLine, "line 1"},
		{"two records on a line", strings.TrimSuffix(goodLine, "\n") + goodLine, "line 1"},
		{"complete but bad last line", goodLine + `{"node":"w-1"}`, "line 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := New()
			err := s.ReplayJournal(strings.NewReader(c.journal))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("replay: %v, want an error naming %s", err, c.want)
			}
		})
	}
}

func TestReplayJournalTornLastLine(t *testing.T) {
	for _, torn := range []string{`{"node":"w-1","tar`, `{`, "   "} {
		s := New()
		if err := s.ReplayJournal(strings.NewReader(goodLine + torn)); err != nil {
			t.Fatalf("torn last line %q: %v", torn, err)
		}
		want := map[string]model.JournalEntry{"w-1": {From: "r-a", Target: "r-b", Done: []string{"cordon"}}}
		if d := cmp.Diff(want, s.Journal); d != "" {
			t.Errorf("torn last line %q: journal (-want +got):\n%s", torn, d)
		}
	}
	// A last line complete but for its newline was recorded: its step finished.
	s := New()
	if err := s.ReplayJournal(strings.NewReader(goodLine + strings.Replace(strings.TrimSuffix(goodLine, "\n"), "cordon", "drain", 1))); err != nil {
		t.Fatal(err)
	}
	if got := s.Journal["w-1"].Done; !cmp.Equal(got, []string{"cordon", "drain"}) {
		t.Errorf("complete last line without newline: done %q", got)
	}
}

// TestLocalJournalErrorNamesFileAndLine: the local backend's error names the journal file
// and the line and says what can be done.
