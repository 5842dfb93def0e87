package state

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzUnmarshalState: Unmarshal never panics, and a state it accepts, encoded as the
// backends encode it, reads back as the same state. Seeds: testdata/fuzz/FuzzUnmarshalState.
func FuzzUnmarshalState(f *testing.F) {
	f.Add([]byte(`{"version":1,"lineage":"a","serial":1,"pointers":{"worker":"rendered-worker-1"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Unmarshal(b)
		if err != nil {
			return
		}
		out, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			t.Fatalf("encoding an accepted state: %v", err)
		}
		again, err := Unmarshal(out)
		if err != nil {
			t.Fatalf("an accepted state, re-encoded, does not read: %v\n%s", err, out)
		}
		if d := cmp.Diff(s, again, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("state round trip (-first +again):\n%s", d)
		}
	})
}

// FuzzReplayJournal: replay never panics, and the records of an accepted journal, written
// again as AppendJournal writes them, read back as the same records; the state they fold
// into survives the state's own round trip. Seeds: testdata/fuzz/FuzzReplayJournal.
func FuzzReplayJournal(f *testing.F) {
	f.Add([]byte(goodLine + `{"node":"w-1","from":"r-a","target":"r-b","step":"reboot","finished":true}` + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var recs []JournalRecord
		if readJournal(bytes.NewReader(b), func(r JournalRecord) { recs = append(recs, r) }) != nil {
			return
		}
		var buf bytes.Buffer
		for _, r := range recs {
			line, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			buf.Write(append(line, '\n'))
		}
		var again []JournalRecord
		if err := readJournal(&buf, func(r JournalRecord) { again = append(again, r) }); err != nil {
			t.Fatalf("accepted records, written again, do not read: %v", err)
		}
		if d := cmp.Diff(recs, again, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("journal round trip (-first +again):\n%s", d)
		}
		s := New()
		if err := s.ReplayJournal(bytes.NewReader(b)); err != nil {
			t.Fatalf("readJournal accepted what ReplayJournal refuses: %v", err)
		}
		out, _ := json.Marshal(s)
		folded, err := Unmarshal(out)
		if err != nil {
			t.Fatalf("a state with a replayed journal does not read back: %v\n%s", err, out)
		}
		if d := cmp.Diff(s.Journal, folded.Journal, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("folded journal round trip (-first +again):\n%s", d)
		}
	})
}
