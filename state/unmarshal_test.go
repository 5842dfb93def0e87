package state

import (
	"strings"
	"testing"
)

// TestUnmarshalRefusesDamagedState: a present state that is empty, null, cut off, not an
// object, or lacks what every state mcp writes has, is an error saying what is wrong — not a
// fresh state, which would forget every pointer and the journal.
func TestUnmarshalRefusesDamagedState(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "empty"},
		{" \n\t", "empty"},
		{"null", "null"},
		{"[]", "not a JSON object"},
		{`"state"`, "not a JSON object"},
		{"{}", "no format version"},
		{`{"version":1}`, "no lineage"},
		{`{"version":1,"lineage":"abc","serial":4,"poin`, "cut off"},
		{`{"version":6,"lineage":"abc"}`, "format version 6; this mcp reads 5 and older (a newer mcp wrote it"},
		// Its fields are unknown here: the version is what is said.
		{`{"version":6,"lineage":"abc","later":{}}`, "format version 6; this mcp reads 5 and older"},
		{`{"version":4,"lineage":"abc","ran":{"rendered-worker-1":{"pool":"","nodes":{}}}}`, "names no config or no pool"},
		{`{"version":4,"lineage":"abc","ran":{"r":{"pool":"worker","nodes":{"w-1":{"since":"2026-01-01T02:00:00Z","seen":"2026-01-01T01:00:00Z"}}}}}`, "seen before it started"},
		{`{"version":1,"lineage":"abc","serial":-1}`, "serial"},
		{`{"version":1,"lineage":"abc"} {}`, "after"},
		{`{"version":1,"lineage":"abc","journal":{"w-1":{"target":""}}}`, "w-1"},
	} {
		_, err := Unmarshal([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Unmarshal(%q): %v, want an error mentioning %q", c.in, err, c.want)
		}
	}
	s, err := Unmarshal([]byte(`{"version":3,"lineage":"abc","serial":2}`))
	if err != nil || s.Lineage != "abc" || s.Serial != 2 || s.Pointers == nil {
		t.Errorf("a minimal state: %+v, %v", s, err)
	}
	// A version 3 state (no records of where configs ran) is read as version 4, with none.
	if s, err = Unmarshal([]byte(`{"version":4,"lineage":"abc","serial":2,"pointers":{"worker":"rendered-worker-1"}}`)); err != nil || s.Version != FormatVersion || s.History != nil {
		t.Errorf("a version 4 state: %+v, %v; want it read as version %d, no history yet", s, err, FormatVersion)
	}
	if s, err = Unmarshal([]byte(`{"version":3,"lineage":"abc","serial":2}`)); err != nil || s.Version != FormatVersion || s.Ran != nil {
		t.Errorf("a version 3 state: %+v, %v; want it read as version %d", s, err, FormatVersion)
	}
	// A version 2 state (journals that named no apply run) is read as the current version.
	if s, err = Unmarshal([]byte(`{"version":2,"lineage":"abc","serial":2}`)); err != nil || s.Version != FormatVersion {
		t.Errorf("a version 2 state: %+v, %v; want it read as version %d", s, err, FormatVersion)
	}
	// A version 1 state (rendered configs that stored their Ignition config) is read, and
	// is version 2 from then on: what is written back is what this mcp writes.
	s, err = Unmarshal([]byte(`{"version":1,"lineage":"abc","serial":2}`))
	if err != nil || s.Version != FormatVersion {
		t.Errorf("a version 1 state: %+v, %v; want it read as version %d", s, err, FormatVersion)
	}
}

// TestLocalReadRefusesEmptyStateFile: an empty state file is an error naming it (an absent
// one is a fresh state).
