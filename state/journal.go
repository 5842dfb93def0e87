package state

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/mcpfleet/mcp/model"
)

// JournalRecord is one record of one node's update, appended while apply runs: the update
// begun (Begin, before the apply's first action on the node), a finished step, or the node
// finished.
type JournalRecord struct {
	Node string `json:"node"`
	// Apply names the apply run ("": a record of an mcp that did not name runs).
	Apply  string `json:"apply,omitempty"`
	From   string `json:"from"`
	Target string `json:"target"`
	Step   string `json:"step"` // model.Step.Key; "" with Begin or Finished
	// Begin opens the node's entry before its first action: from then until Finished the
	// update is in flight, whatever the node shows.
	Begin bool `json:"begin,omitempty"`
	// Finished marks the node's last step: its journal entry can be dropped.
	Finished bool `json:"finished,omitempty"`
}

// ApplyRecord folds one journal record into the state's journal. An entry for another
// target or starting config is replaced; a record of another apply for the same update
// (one that took an interrupted update over) keeps its finished steps.
func (s *State) ApplyRecord(r JournalRecord) {
	if s.Journal == nil {
		s.Journal = map[string]model.JournalEntry{}
	}
	if r.Finished {
		delete(s.Journal, r.Node)
		return
	}
	e := s.Journal[r.Node]
	if e.Target != r.Target || e.From != r.From {
		e = model.JournalEntry{From: r.From, Target: r.Target}
	}
	if r.Apply != "" {
		e.Apply = r.Apply
	}
	if !r.Begin {
		e.Done = append(e.Done, r.Step)
	}
	s.Journal[r.Node] = e
}

// MaxJournalLine bounds one journal line. A record is a few hundred bytes (a node name, two
// rendered config names, a step with at most a path); a longer line is damage, and is
// refused without being read whole.
const MaxJournalLine = 64 << 10

// JournalError is a journal line that cannot be replayed. Backends wrap it with where the
// journal is and what to do.
type JournalError struct {
	Line int // 1-based
	Err  error
}

func (e *JournalError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *JournalError) Unwrap() error { return e.Err }

// ReplayJournal folds a journal — one JSON JournalRecord per line — into s. Only a torn last
// line (no newline, not JSON: a crash mid-append, whose step was not recorded) is ignored;
// any other line that is not a well-formed record gives a *JournalError, since skipping it
// would forget finished steps and redo them (drains, reboots). Blank lines drop nothing and
// are skipped.
func (s *State) ReplayJournal(r io.Reader) error {
	return readJournal(r, func(rec JournalRecord) { s.ApplyRecord(rec) })
}

// readJournal calls fn with each record of the journal in r, in order.
func readJournal(r io.Reader, fn func(JournalRecord)) error {
	br := bufio.NewReaderSize(r, MaxJournalLine+1)
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return &JournalError{n, fmt.Errorf("longer than %d bytes, which no journal record is", MaxJournalLine)}
		}
		if err != nil && err != io.EOF {
			return err
		}
		last := err == io.EOF
		if len(bytes.TrimSpace(line)) == 0 {
			if last {
				return nil
			}
			continue
		}
		if last && !json.Valid(line) {
			return nil // torn: the append was cut off
		}
		rec, perr := parseRecord(line)
		if perr != nil {
			return &JournalError{n, perr}
		}
		fn(rec)
		if last {
			return nil
		}
	}
}

// parseRecord reads one line into a record, refusing unknown fields, trailing data and
// records that name no node, target or known step.
func parseRecord(line []byte) (JournalRecord, error) {
	var rec JournalRecord
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return rec, fmt.Errorf("not a journal record: %w", err)
	}
	if rest := bytes.TrimSpace(line[dec.InputOffset():]); len(rest) > 0 {
		return rec, fmt.Errorf("not a journal record: %d bytes after the record (two records on one line?)", len(rest))
	}
	return rec, rec.check()
}

// check refuses a record that replay cannot fold: it must name a node and a target, and a
// step unless it marks the node finished.
func (r JournalRecord) check() error {
	switch {
	case r.Node == "":
		return errors.New("journal record names no node")
	case r.Target == "":
		return fmt.Errorf("journal record of node %s names no target config", r.Node)
	case r.Step == "" && !r.Finished && !r.Begin:
		return fmt.Errorf("journal record of node %s names no step", r.Node)
	case r.Step != "" && (r.Begin || r.Finished):
		return fmt.Errorf("journal record of node %s both begins or finishes the node and names step %q", r.Node, r.Step)
	}
	if r.Step != "" {
		if _, err := model.ParseStepKey(r.Step); err != nil {
			return fmt.Errorf("journal record of node %s: %w", r.Node, err)
		}
	}
	return nil
}
