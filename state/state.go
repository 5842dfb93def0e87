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
	"time"

	"github.com/mcpfleet/mcp/model"
)

// FormatVersion is the version of the state's file format. Version 2 stores each rendered
// config's file contents once (its Ignition config is derived from them, ignition/content):
// an mcp that reads only version 1 would take such a config for a damaged one, so it is
// told plainly that a newer mcp wrote the state. Version 3 journals name the apply run of
// each record and open a node's entry before its first action (JournalRecord.Begin), which
// an mcp that reads 2 would refuse as damage. Version 4 records where each rendered config
// ran, and for how long (Ran), which an mcp that reads 3 does not know. Version 5 keeps
// each pool's pointer history and rollback mark, since when it is paused, its step
// times, and the pointers of its chosen nodes' variants and machines: an mcp that reads 4
// would drop them on its next write (a rollback forgotten, a machine booting the pool's
// config), so it is told a newer mcp wrote the state. Versions 1 to 4 are read (and
// written back as 5); a state of 3 has no records yet: they start from the first refresh
// that sees the nodes, as a state of 4 starts its history at the next apply.
const FormatVersion = 5

// State is what mcp remembers.
type State struct {
	Version int    `json:"version"`
	Lineage string `json:"lineage"`
	Serial  int64  `json:"serial"`
	// Pointers maps a pool to the rendered config a node of the pool boots now.
	Pointers map[string]string `json:"pointers,omitempty"`
	// Variants maps a pool to the variants of its config for chosen nodes that apply last
	// pointed it at (configs with nodes or node_selector), beside Pointers. Absent when
	// none: a configuration without such configs.
	Variants map[string][]model.VariantPointer `json:"variants,omitempty"`
	// Machines maps a machine block to the rendered config the boot server gives it at
	// first boot, with its selectors (MAC, UUID, hostname): its variant of its pool's
	// config. Absent for configurations without machine blocks.
	Machines map[string]model.MachinePointer `json:"machines,omitempty"`
	// BootImages maps a pool to the boot image apply last made its new nodes boot (its
	// machine templates' and `mcp fleet add`'s): what a plan's boot_image resources change.
	BootImages map[string]model.BootImageDef `json:"boot_images,omitempty"`
	// Journal holds, per node, the steps an unfinished apply completed.
	Journal map[string]model.JournalEntry `json:"journal,omitempty"`
	// Ran records, per rendered config, on which nodes it ran, for how long and whether
	// they stayed healthy: what a later stage's soak gate reads (ran.go).
	Ran map[string]*Ran `json:"ran,omitempty"`
	// PausedSince records, per paused pool, when the first apply that saw it paused
	// started; the first apply that sees it unpaused (or no longer declared) forgets it
	// (pause.go). One time per pool: bounded by the pools.
	PausedSince map[string]time.Time `json:"paused_since,omitempty"`
	// StepTimes records, per pool, how long the steps and health gates of the nodes apply
	// finished there took (bounded: model.MaxStepSamples per step kind): what a plan
	// estimates the pool's next rollout from (steptimes.go).
	StepTimes map[string]*model.StepTimes `json:"step_times,omitempty"`
	// History is, per pool, the rendered configs its boot pointer was moved to, oldest
	// first, at most HistoryLimit of them (history.go): what mcp rollback goes back to, and
	// what mcp prune keeps.
	History map[string][]model.PointerChange `json:"history,omitempty"`
	// RolledBack marks the pools a rollback moved off what the configuration rendered then:
	// plan and status warn until the configuration renders the same again (history.go).
	RolledBack map[string]model.RolledBack `json:"rolled_back,omitempty"`
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
	c.Machines = maps.Clone(s.Machines)     // the values' slices are never changed in place
	c.Variants = maps.Clone(s.Variants)     // replaced whole, never changed in place
	c.BootImages = maps.Clone(s.BootImages) // the values' Images maps are never changed in place
	c.Journal = make(map[string]model.JournalEntry, len(s.Journal))
	for k, v := range s.Journal {
		v.Done = slices.Clone(v.Done)
		c.Journal[k] = v
	}
	c.Rendered = maps.Clone(s.Rendered)
	c.Ran = cloneRan(s.Ran)
	c.PausedSince = maps.Clone(s.PausedSince)
	c.StepTimes = cloneStepTimes(s.StepTimes)
	if s.History != nil {
		c.History = make(map[string][]model.PointerChange, len(s.History))
		for k, v := range s.History {
			c.History[k] = slices.Clone(v)
		}
	}
	c.RolledBack = maps.Clone(s.RolledBack)
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
	for m, p := range s.Machines {
		if m == "" || p.Pool == "" || p.Rendered == "" {
			return fmt.Errorf("its machine pointer %q names no machine, pool or rendered config", m)
		}
	}
	for node, e := range s.Journal {
		if node == "" || e.Target == "" {
			return fmt.Errorf("its journal entry of node %q names no node or no target config", node)
		}
	}
	if err := s.checkStepTimes(); err != nil {
		return err
	}
	if err := s.checkHistory(); err != nil {
		return err
	}
	return s.checkRan()
}
