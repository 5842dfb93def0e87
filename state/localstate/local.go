// Package localstate is the local state backend (state { backend = "local" }, the
// default): the state in one file written atomically beside a backup of the previous one,
// rendered configs in a directory of their own, an append-only journal fsync'd per record,
// and the lock a file naming its holder (pid, host, operation), whose liveness
// force-unlock checks. Every file is read through internal/boundedfile.
package localstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/internal/atomicfile"
	"github.com/mcpfleet/mcp/internal/boundedfile"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state"
)

// Local is the local backend: a JSON state file, its rendered configs in a directory beside
// it (one immutable file per name), an append-only journal and a lock file:
//
//	mcp.state             lineage, serial, pointers, folded journal
//	mcp.state.backup      the state the last write replaced (see backup)
//	mcp.state.d/rendered/ <name>.json, one per rendered config
//	mcp.state.journal     one JSON line per finished step of a running apply
//	mcp.state.lock        the lock holder (state.LockInfo), created exclusively
type Local struct {
	Path    string
	journal groupAppend
	last    seenState // mcp.state as last read or written here
}

// Bounds of the local state's files. What mcp writes stays far below them (a state of
// 10,000 nodes mid-rollout is a few MiB); a larger file is damage, refused naming it, as is
// anything but a regular file there (a FIFO, a device, a link to one). Rendered configs are
// bounded by model.MaxRenderedSize.
const (
	maxStateSize   = 64 << 20  // mcp.state and mcp.state.backup
	maxJournalSize = 256 << 20 // mcp.state.journal, read a line at a time
	maxLockSize    = 64 << 10  // mcp.state.lock: a few hundred bytes of state.LockInfo
)

// Spec declares the local backend: state { backend = "local", path = "mcp.state" }, its
// path resolved against the configuration's directory.
var Spec = state.BackendSpec{
	BlockSpec: model.BlockSpec{Name: "local", Example: `path = "mcp.state"`, Settings: []model.SettingSpec{
		{Name: "path", Kind: model.SettingPath, Default: "mcp.state", Check: model.NonEmpty},
	}},
	Open: func(s model.Settings) (state.Backend, error) { return Open(s), nil },
}

// Open opens the local backend a state block's settings name (Spec).
func Open(s model.Settings) *Local { return &Local{Path: s.Str("path")} }

func (l *Local) renderedDir() string { return l.Path + ".d/rendered" }
func (l *Local) journalPath() string { return l.Path + ".journal" }
func (l *Local) backupPath() string  { return l.Path + ".backup" }
func (l *Local) lockPath() string    { return l.Path + ".lock" }

// Served reads what the boot server serves: the state file's serial and pools' pointers,
// and the stored rendered configs, each apart: one that does not read (damaged, edited, not
// a regular file) is in unreadable with why, and the others are read, so the boot server
// can serve every pool but the one pointing at it. The journal is not read: it holds no
// pointer, and a damaged one must not stop new machines booting.
func (l *Local) Served(ctx context.Context) (s *state.State, unreadable map[string]error, err error) {
	if s, err = l.readHead(); err != nil {
		return nil, nil, err
	}
	s.Rendered, unreadable, err = l.readRendered()
	return s, unreadable, err
}

// RenderedPath is where the rendered config name is stored (the boot server reads it).
func (l *Local) RenderedPath(name string) string {
	return filepath.Join(l.renderedDir(), name+".json")
}

func (l *Local) Read(ctx context.Context) (*state.State, error) {
	s, err := l.readHead()
	if err != nil {
		return nil, err
	}
	rendered, unreadable, err := l.readRendered()
	if err != nil {
		return nil, err
	}
	if len(unreadable) > 0 { // plan and apply read the whole store: the first that does not read is the error
		return nil, unreadable[slices.Min(slices.Collect(maps.Keys(unreadable)))]
	}
	s.Rendered = rendered
	if err := model.CheckPointers(s.Pointers, s.Rendered); err != nil {
		return nil, fmt.Errorf("reading state %s: %w (%s): the state was damaged or edited%s", l.Path, err, l.renderedDir(), l.restoreHint())
	}
	if err := l.replayJournal(s); err != nil {
		return nil, err
	}
	return s, nil
}

// readHead reads the state file: absent is a fresh state with no lineage, present must be a
// state.
func (l *Local) readHead() (*state.State, error) {
	if err := l.checkBackup(); err != nil {
		return nil, err
	}
	b, err := boundedfile.Read(l.Path, maxStateSize, 0)
	if errors.Is(err, fs.ErrNotExist) {
		l.last.note(nil, false)
		return &state.State{Version: state.FormatVersion, Pointers: map[string]string{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading state: %w", err)
	}
	l.last.note(b, true)
	s, err := state.Unmarshal(b)
	if err != nil {
		return nil, fmt.Errorf("reading state %s: %w%s", l.Path, err, l.restoreHint())
	}
	return s, nil
}

// checkBackup refuses a backup that is not a regular file: it is what a damaged state is
// restored from, so it is not left for the moment it is needed.
func (l *Local) checkBackup() error {
	st, err := os.Stat(l.backupPath())
	if err != nil || st.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("state backup %s is %s, not a regular file: remove it (the next write of the state makes a new one)",
		l.backupPath(), boundedfile.Describe(st.Mode()))
}

// restoreHint says how to go back to the backup, when there is a good one.
func (l *Local) restoreHint() string {
	b, err := boundedfile.Read(l.backupPath(), maxStateSize, 0)
	if err != nil {
		return ""
	}
	prev, err := state.Unmarshal(b)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("; the state before the last write (serial %d) is in %s: to go back to it, run "+
		"cp %s %s (what the last write recorded is lost: run mcp plan and look at it before applying)",
		prev.Serial, l.backupPath(), l.backupPath(), l.Path)
}

// backup keeps the state about to be replaced as <path>.backup, as Terraform keeps
// terraform.tfstate.backup: written atomically and fsync'd like the state, with its mode.
// A state that does not read is not kept, so the backup stays the last good state. A
// state another writer put there since this backend read or wrote it is not replaced
// (state.ErrConflict).
func (l *Local) backup() error {
	b, err := boundedfile.Read(l.Path, maxStateSize, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return l.last.check(l.Path, nil, false)
	}
	if err != nil {
		return fmt.Errorf("backing up state: %w", err)
	}
	if _, err := state.Unmarshal(b); err != nil {
		return nil // damage, not another writer's state: replaced, as before
	}
	if err := l.last.check(l.Path, b, true); err != nil {
		return err
	}
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(l.Path); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := atomicfile.Write(l.backupPath(), b, mode); err != nil {
		return fmt.Errorf("backing up state %s to %s: %w", l.Path, l.backupPath(), err)
	}
	return nil
}

// readRendered reads the stored rendered configs by name; one that does not read is in
// unreadable with why, apart from the others (err is the directory's own failure).
func (l *Local) readRendered() (rendered map[string]*model.Rendered, unreadable map[string]error, err error) {
	rendered, unreadable = map[string]*model.Rendered{}, map[string]error{}
	ents, err := boundedfile.ReadDir(l.renderedDir())
	if errors.Is(err, fs.ErrNotExist) {
		return rendered, unreadable, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading rendered configs: %w", err)
	}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() {
			continue
		}
		r, err := readRenderedFile(filepath.Join(l.renderedDir(), e.Name()), name)
		if err != nil {
			unreadable[name] = err
			continue
		}
		rendered[name] = r
	}
	return rendered, unreadable, nil
}

// readRenderedFile reads and verifies one stored rendered config: its name must be its file's
// and its content's (a stored config is served and planned from, so an edited one must not
// pass for the config it was).
func readRenderedFile(p, name string) (*model.Rendered, error) {
	const fix = "delete it and run mcp apply to store it again"
	b, err := boundedfile.Read(p, model.MaxRenderedSize, 0)
	if err != nil {
		return nil, fmt.Errorf("reading rendered config: %w; %s", err, fix)
	}
	r := new(model.Rendered)
	if err := json.Unmarshal(b, r); err != nil {
		return nil, fmt.Errorf("rendered config %s is not a rendered config (%v): it was damaged after it was stored; %s", p, err, fix)
	}
	if r.Name != name {
		return nil, fmt.Errorf("rendered config %s holds the config named %q, not the one its file name says: it was renamed or changed after it was stored; %s", p, r.Name, fix)
	}
	if want := content.Name(r); want != name {
		return nil, fmt.Errorf("rendered config %s does not match its content (which names it %s): it was changed after it was stored; %s", p, want, fix)
	}
	content.Settle(r) // one stored by an older mcp, with its Ignition config beside its content
	return r, nil
}

// replayJournal folds the journal's records into s. A torn last line (a crash mid-append)
// is ignored: its step did not finish durably.
func (l *Local) replayJournal(s *state.State) error {
	f, st, err := boundedfile.Open(l.journalPath(), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading state journal: %w", err)
	}
	defer f.Close()
	if st.Size() > maxJournalSize {
		return fmt.Errorf("reading state journal: %s is %d bytes, more than the %d MiB an apply's journal comes near; "+
			"move it away (the next mcp plan then plans the steps it lists again)", l.journalPath(), st.Size(), maxJournalSize>>20)
	}
	err = s.ReplayJournal(io.LimitReader(f, maxJournalSize))
	var je *state.JournalError
	if errors.As(err, &je) {
		return fmt.Errorf("state journal %s, %w; the journal lists the steps an interrupted "+
			"apply finished, one JSON record per line: fix or delete that line, or move the file "+
			"away (the next mcp plan then no longer knows which steps of those nodes finished and "+
			"plans them again, drains and reboots included)", l.journalPath(), je)
	}
	if err != nil {
		return fmt.Errorf("reading state journal %s: %w", l.journalPath(), err)
	}
	return nil
}

func (l *Local) Write(ctx context.Context, s *state.State) error {
	if err := s.Check(); err != nil {
		return fmt.Errorf("writing state %s: refusing a state that could not be read back: %w", l.Path, err)
	}
	if err := os.MkdirAll(l.renderedDir(), 0o755); err != nil {
		return fmt.Errorf("writing state: %w", err)
	}
	// From the first temporary file to the last rename: the sweep of a killed writer's
	// temporaries (Lock) waits for a live writer, one run with -lock=false included.
	unlock, err := l.lockWrites()
	if err != nil {
		return err
	}
	defer unlock()
	names := make([]string, 0, len(s.Rendered))
	for n := range s.Rendered {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := l.RenderedPath(n)
		if _, err := os.Stat(p); err == nil {
			continue // immutable: same name, same content
		}
		b, err := json.MarshalIndent(s.Rendered[n], "", "  ")
		if err != nil {
			return fmt.Errorf("encoding rendered config %s: %w", n, err)
		}
		if len(b) > model.MaxRenderedSize {
			return fmt.Errorf("storing rendered config %s: refusing %d bytes, more than a rendered config is read back (%d MiB)",
				n, len(b), model.MaxRenderedSize>>20)
		}
		if err := atomicfile.Write(p, b, 0o644); err != nil {
			return fmt.Errorf("storing rendered config %s: %w", n, err)
		}
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding state: %w", err)
	}
	if len(b) >= maxStateSize {
		return fmt.Errorf("writing state %s: refusing %d bytes, more than a state is read back (%d MiB)", l.Path, len(b), maxStateSize>>20)
	}
	if err := l.backup(); err != nil {
		return err
	}
	b = append(b, '\n')
	if err := atomicfile.Write(l.Path, b, 0o644); err != nil {
		return fmt.Errorf("writing state: %w", err)
	}
	l.last.note(b, true)
	// The journal is folded into the state just written.
	l.journal.close()
	if err := os.Remove(l.journalPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("clearing state journal: %w", err)
	}
	return nil
}

// AppendJournal appends r to the journal file, in a group commit with the records other
// goroutines append meanwhile (groupAppend).
func (l *Local) AppendJournal(ctx context.Context, r state.JournalRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := l.journal.append(l.journalPath(), append(b, '\n')); err != nil {
		return fmt.Errorf("appending to state journal: %w", err)
	}
	return nil
}

func (l *Local) DeleteRendered(ctx context.Context, names []string) error {
	for _, n := range names {
		if err := os.Remove(l.RenderedPath(n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("deleting rendered config %s: %w", n, err)
		}
	}
	return nil
}
