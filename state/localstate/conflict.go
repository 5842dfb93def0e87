package localstate

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/mcpfleet/mcp/state"
)

// seenState is what this backend last read or wrote as mcp.state (a digest), so that a
// write can tell whether another writer replaced it meanwhile (state.ErrConflict). Under
// the state lock nobody does; an apply run with -lock=false may.
type seenState struct {
	mu      sync.Mutex
	seen    bool // read or written once
	present bool
	sum     [32]byte
}

func (s *seenState) note(b []byte, present bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen, s.present, s.sum = true, present, sha256.Sum256(b)
}

// check refuses to replace b (present: the file exists) when it is not what was seen.
func (s *seenState) check(path string, b []byte, present bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.seen || s.present == present && (!present || s.sum == sha256.Sum256(b)) {
		return nil
	}
	return fmt.Errorf("writing state %s: %w since this run read it; run again", path, state.ErrConflict)
}

// lockWrites serialises the writers of the state, in this process and in others: flock(2)
// on the state's directory, for the moment from the conflict check to the replacement.
func (l *Local) lockWrites() (unlock func(), err error) {
	d, err := os.OpenFile(filepath.Dir(l.Path), os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, fmt.Errorf("writing state: %w", err)
	}
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX); err != nil {
		d.Close()
		return nil, fmt.Errorf("writing state: locking %s: %w", filepath.Dir(l.Path), err)
	}
	return func() { d.Close() }, nil
}
