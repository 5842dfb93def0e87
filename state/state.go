// Package state holds mcp's state — the rendered configs it has applied, the boot-server
// pointer of each pool and the journal of an apply in progress — and the backends that store
// and lock it. The state is the engine's memory between runs, as Terraform's is: lineage
// names one history, serial counts its writes, and a saved plan is only applied to the
// state it was made from.
package state

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/mcpfleet/mcp/model"
)

// FormatVersion is the version of the state's file format. Version 2 stores each rendered
// config's file contents once (its Ignition config is derived from them, ignition/content):
// an mcp that reads only version 1 would take such a config for a damaged one, so it is
// told plainly that a newer mcp wrote the state. Version 3 journals name the apply run of
// each record and open a node's entry before its first action (JournalRecord.Begin), which
// an mcp that reads 2 would refuse as damage. Version 4 records where each rendered config
// ran, and for how long (Ran), which an mcp that reads 3 does not know. Versions 1 to 3
// are read (and written back as 4); a state of 3 has no records yet: they start from the
// first refresh that sees the nodes.
const FormatVersion = 4

// State is what mcp remembers.
type State struct {
	Version int    `json:"version"`
	Lineage string `json:"lineage"`
	Serial  int64  `json:"serial"`
	// Pointers maps a pool to the rendered config a node of the pool boots now.
	Pointers map[string]string `json:"pointers,omitempty"`
	// BootImages maps a pool to the boot image apply last made its new nodes boot (its
	// machine templates' and `mcp fleet add`'s): what a plan's boot_image resources change.
	BootImages map[string]model.BootImageDef `json:"boot_images,omitempty"`
	// Journal holds, per node, the steps an unfinished apply completed.
	Journal map[string]model.JournalEntry `json:"journal,omitempty"`
	// Ran records, per rendered config, on which nodes it ran, for how long and whether
	// they stayed healthy: what a later stage's soak gate reads (ran.go).
	Ran map[string]*Ran `json:"ran,omitempty"`
	// Rendered holds the rendered configs by name. Backends may store them apart from the
	// rest (they are immutable and large).
	Rendered map[string]*model.Rendered `json:"-"`
}

// New returns an empty state with a fresh lineage.
func New() *State {
	return &State{Version: FormatVersion, Lineage: newLineage(), Pointers: map[string]string{},
		Journal: map[string]model.JournalEntry{}, Rendered: map[string]*model.Rendered{}}
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
	c.BootImages = maps.Clone(s.BootImages) // the values' Images maps are never changed in place
	c.Journal = make(map[string]model.JournalEntry, len(s.Journal))
	for k, v := range s.Journal {
		v.Done = slices.Clone(v.Done)
		c.Journal[k] = v
	}
	c.Rendered = maps.Clone(s.Rendered)
	c.Ran = cloneRan(s.Ran)
	if c.Pointers == nil {
		c.Pointers = map[string]string{}
	}
	if c.Rendered == nil {
		c.Rendered = map[string]*model.Rendered{}
	}
	return &c
}

// Unmarshal reads the state JSON a backend stored, refusing another format version. Its
// Rendered is left to the backend. An absent state is the backend's to recognise (there are
// no bytes at all); bytes that are present are never taken for a fresh state, since that
// forgets every pointer and the journal: empty, null, cut off, not an object, and `{}` are
// errors. `{}` too because every state mcp writes has a version and a lineage (apply gives
// a state a lineage before its first write), so `{}` is damage or a hand edit. Unknown fields
// are refused: a state with more fields comes from a newer format, which has another version.
func Unmarshal(b []byte) (*State, error) {
	if err := checkShape(b); err != nil {
		return nil, err
	}
	if err := newerVersion(b); err != nil {
		return nil, err
	}
	s := &State{}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(s); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("it is cut off: its JSON ends after %d bytes, mid-value", len(b))
		}
		return nil, fmt.Errorf("it is not a state: %w", err)
	}
	if rest := bytes.TrimSpace(b[dec.InputOffset():]); len(rest) > 0 {
		return nil, fmt.Errorf("it has %d bytes after the state's JSON object", len(rest))
	}
	if s.Version >= 1 && s.Version < FormatVersion { // 1: its rendered configs may carry their Ignition config: still read
		s.Version = FormatVersion
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	if s.Pointers == nil {
		s.Pointers = map[string]string{}
	}
	return s, nil
}

// newerVersion refuses a state of a newer format before its fields are decoded: they are
// unknown here, and "unknown field" would hide that a newer mcp wrote it.
func newerVersion(b []byte) error {
	var v struct {
		Version int `json:"version"`
	}
	if json.Unmarshal(b, &v) == nil && v.Version > FormatVersion {
		return (&State{Version: v.Version}).Check()
	}
	return nil
}

// checkShape refuses what is not a JSON object before decoding, to say plainly what it is.
func checkShape(b []byte) error {
	t := bytes.TrimSpace(b)
	switch {
	case len(t) == 0:
		return errors.New("it is empty (no bytes, or only white space): a state is a JSON object")
	case bytes.Equal(t, []byte("null")):
		return errors.New("it is JSON null, not a state")
	case t[0] != '{':
		return fmt.Errorf("it is not a JSON object (it starts with %q)", t[:min(len(t), 16)])
	}
	return nil
}

// Check refuses a state that mcp would not have written (and Unmarshal refuses): backends
// check before writing, so that a bug does not store a state no run can read.
func (s *State) Check() error {
	switch {
	case s.Version == 0:
		return errors.New("it has no format version: it is not a state mcp wrote")
	case s.Version != FormatVersion:
		return fmt.Errorf("format version %d; this mcp reads %d and older (a newer mcp wrote it: use that one, or a newer release)", s.Version, FormatVersion)
	case s.Lineage == "":
		return errors.New("it has no lineage, which every state mcp writes has")
	case s.Serial < 0:
		return fmt.Errorf("its serial %d is negative", s.Serial)
	}
	for pool, name := range s.Pointers {
		if pool == "" || name == "" {
			return fmt.Errorf("its pointer %q -> %q names no pool or no rendered config", pool, name)
		}
	}
	for node, e := range s.Journal {
		if node == "" || e.Target == "" {
			return fmt.Errorf("its journal entry of node %q names no node or no target config", node)
		}
	}
	return s.checkRan()
}
