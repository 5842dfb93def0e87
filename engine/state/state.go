// Package state holds mcp's state — the rendered configs it has applied, the boot-server
// pointer of each pool and the journal of an apply in progress — and the backends that store
// and lock it. The state is the engine's memory between runs, as Terraform's is: lineage
// names one history, serial counts its writes, and a saved plan is only applied to the
// state it was made from.
package state

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/planner/model"
)

// FormatVersion is the version of the state's file format.
const FormatVersion = 1

// State is what mcp remembers.
type State struct {
	Version int    `json:"version"`
	Lineage string `json:"lineage"`
	Serial  int64  `json:"serial"`
	// Pointers maps a pool to the rendered config a node of the pool boots now.
	Pointers map[string]string `json:"pointers,omitempty"`
	// Journal holds, per node, the steps an unfinished apply completed.
	Journal map[string]planner.JournalEntry `json:"journal,omitempty"`
	// Rendered holds the rendered configs by name. Backends may store them apart from the
	// rest (they are immutable and large).
	Rendered map[string]*model.Rendered `json:"-"`
}

// New returns an empty state with a fresh lineage.
func New() *State {
	return &State{Version: FormatVersion, Lineage: newLineage(), Pointers: map[string]string{},
		Journal: map[string]planner.JournalEntry{}, Rendered: map[string]*model.Rendered{}}
}

func newLineage() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Clone returns a copy that shares the (immutable) rendered configs.
func (s *State) Clone() *State {
	c := *s
	c.Pointers = maps.Clone(s.Pointers)
	c.Journal = make(map[string]planner.JournalEntry, len(s.Journal))
	for k, v := range s.Journal {
		v.Done = slices.Clone(v.Done)
		c.Journal[k] = v
	}
	c.Rendered = maps.Clone(s.Rendered)
	if c.Pointers == nil {
		c.Pointers = map[string]string{}
	}
	if c.Rendered == nil {
		c.Rendered = map[string]*model.Rendered{}
	}
	return &c
}

// Unmarshal reads the state JSON a backend stored (nil or empty: an empty state),
// refusing another format version. Its Rendered is left to the backend.
func Unmarshal(b []byte) (*State, error) {
	s := &State{Version: FormatVersion}
	if len(b) > 0 {
		if err := json.Unmarshal(b, s); err != nil {
			return nil, err
		}
		if s.Version != FormatVersion {
			return nil, fmt.Errorf("format version %d; this mcp reads %d", s.Version, FormatVersion)
		}
	}
	if s.Pointers == nil {
		s.Pointers = map[string]string{}
	}
	return s, nil
}
