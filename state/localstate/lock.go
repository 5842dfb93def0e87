package localstate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mcpfleet/mcp/internal/atomicfile"
	"github.com/mcpfleet/mcp/internal/boundedfile"
	"github.com/mcpfleet/mcp/internal/liveproc"
	"github.com/mcpfleet/mcp/state"
)

// lockCheckEvery is how often a holder of the local lock checks that its lock file is still
// there and still its own.
const lockCheckEvery = time.Second

// Lock creates the lock file exclusively with info in it. The lock it returns is Losable:
// while held, it checks every second that the file still names it, since mcp force-unlock
// (or a hand) can remove it under a live holder and let another run in.
func (l *Local) Lock(ctx context.Context, info state.LockInfo) (state.Unlocker, error) {
	info.Path = l.Path
	if err := os.MkdirAll(filepath.Dir(l.lockPath()), 0o755); err != nil {
		return nil, fmt.Errorf("locking state: %w", err)
	}
	// O_EXCL creates a new file or fails: it opens no FIFO, device or link already there.
	f, err := os.OpenFile(l.lockPath(), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if errors.Is(err, fs.ErrExist) {
		holder, rerr := l.readLock()
		if rerr != nil {
			return nil, fmt.Errorf("state is locked (%s), and its holder cannot be read: %w; "+
				"if no mcp runs on this state, remove the file", l.lockPath(), rerr)
		}
		if holder.ID == "" {
			return nil, &state.LockError{Holder: holder, Note: l.emptyNote()}
		}
		return nil, &state.LockError{Holder: holder}
	}
	if err != nil {
		return nil, fmt.Errorf("locking state: %w", err)
	}
	b, _ := json.MarshalIndent(info, "", "  ")
	_, werr := f.Write(b)
	serr := f.Sync()
	if cerr := f.Close(); werr == nil && serr == nil && cerr != nil {
		werr = cerr
	}
	if err := errors.Join(werr, serr); err != nil {
		os.Remove(l.lockPath())
		return nil, fmt.Errorf("locking state: %w", err)
	}
	l.sweep()
	u := &localLock{l: l, id: info.ID, stop: make(chan struct{}), done: make(chan struct{}), lostCh: make(chan struct{})}
	go u.watch(lockCheckEvery)
	return u, nil
}

// sweep removes the temporary files a writer killed mid-write left beside the state and its
// rendered configs (atomicfile.IsTemp). It runs as the lock is taken, between writes: no
// writer that holds the lock can be writing, and one that does not (apply -lock=false) is
// waited for (lockWrites). It is tidying only — nothing reads a temporary file as a config
// or a state — so what it cannot remove stays, without an error.
func (l *Local) sweep() {
	unlock, err := l.lockWrites()
	if err != nil {
		return
	}
	defer unlock()
	base := filepath.Base(l.Path)
	for _, dir := range []string{filepath.Dir(l.Path), l.renderedDir()} {
		ents, _ := boundedfile.ReadDir(dir)
		for _, e := range ents {
			if n := e.Name(); atomicfile.IsTemp(n) && (dir == l.renderedDir() || strings.HasPrefix(n, "."+base+".")) {
				os.Remove(filepath.Join(dir, n))
			}
		}
	}
}

func (l *Local) readLock() (state.LockInfo, error) {
	var info state.LockInfo
	b, err := boundedfile.Read(l.lockPath(), maxLockSize, 0)
	if err != nil {
		return info, err
	}
	// A holder may be between creating and filling the file: it has no ID yet.
	if len(bytes.TrimSpace(b)) == 0 {
		return state.LockInfo{Who: "another process"}, nil
	}
	return info, json.Unmarshal(b, &info)
}

// emptyNote says what an empty lock file is and what to do about it: there is no ID to
// give force-unlock.
func (l *Local) emptyNote() string {
	return fmt.Sprintf("its lock file %s is empty: another mcp is taking the lock at this moment, or was killed while "+
		"taking it. Run again in a moment; if the file stays empty and no mcp runs on this state, remove it (rm %s)",
		l.lockPath(), l.lockPath())
}

// localLock is a held lock file, watched until Unlock.
type localLock struct {
	l    *Local
	id   string
	stop chan struct{} // closed by Unlock
	done chan struct{} // closed when watch returns
	once sync.Once

	mu     sync.Mutex
	lost   error
	lostCh chan struct{} // closed when lost is set
}

var (
	_ state.Losable       = (*localLock)(nil)
	_ state.LockInspector = (*Local)(nil)
)

// Lost is closed when the lock file was found removed or taken while held.
func (u *localLock) Lost() <-chan struct{} { return u.lostCh }

// LostErr says why the lock was lost (nil while it is held).
func (u *localLock) LostErr() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.lost
}

func (u *localLock) lose(err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.lost == nil {
		u.lost = err
		close(u.lostCh)
	}
}

func (u *localLock) watch(every time.Duration) {
	defer close(u.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-u.stop:
			return
		case <-t.C:
		}
		if err := u.check(); err != nil {
			u.lose(err)
			return
		}
	}
}

// check returns an error when the lock file is gone or no longer this holder's. Our file is
// written and fsync'd before Lock returns, so any other content — another ID, a file being
// filled, unreadable JSON — is another holder's. Errors reading it are tried again.
func (u *localLock) check() error {
	info, err := u.l.readLock()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("lock file %s was removed while this run held it — by mcp force-unlock? "+
			"Another run may hold the state now", u.l.lockPath())
	case err != nil && !isSyntax(err):
		return nil
	case err != nil:
		return fmt.Errorf("lock file %s was replaced while this run held it, by one that does not "+
			"read (%v); another run may hold the state now", u.l.lockPath(), err)
	case info.ID == "":
		return fmt.Errorf("lock file %s was replaced while this run held it, by one another run is writing; "+
			"another run may hold the state now", u.l.lockPath())
	case info.ID != u.id:
		return fmt.Errorf("lock file %s was replaced while this run held it: it is now held by %s "+
			"(pid %d, operation %q, lock ID %s)", u.l.lockPath(), info.Who, info.PID, info.Operation, info.ID)
	}
	return nil
}

func isSyntax(err error) bool {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	return errors.As(err, &se) || errors.As(err, &te) || errors.Is(err, io.ErrUnexpectedEOF)
}

// Unlock stops the watch and removes the lock file if it is still this holder's; a lock
// lost meanwhile is left to whoever has it now, and the error says what happened.
func (u *localLock) Unlock(ctx context.Context) error {
	u.once.Do(func() { close(u.stop) })
	<-u.done
	if err := u.check(); err != nil {
		u.lose(err)
	}
	if err := u.LostErr(); err != nil {
		return fmt.Errorf("unlocking state: %w", err)
	}
	return u.l.ForceUnlock(ctx, u.id)
}

func (l *Local) ForceUnlock(ctx context.Context, id string) error {
	info, err := l.readLock()
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("state %s is not locked", l.Path)
	}
	if err != nil {
		return fmt.Errorf("reading lock %s: %w", l.lockPath(), err)
	}
	if info.ID == "" {
		return fmt.Errorf("state %s is locked, but %s", l.Path, l.emptyNote())
	}
	if info.ID != id {
		return fmt.Errorf("lock ID %q does not match the lock held (ID %s, by %s)", id, info.ID, info.Who)
	}
	return os.Remove(l.lockPath())
}

// LockStatus says who holds the lock file and whether it is alive: a holder on this machine,
// in this boot and this PID namespace is alive while its process runs (liveproc.Judge: not a
// zombie, not a PID reused since). Anywhere else — a container or another host sharing the
// state directory, a lock file that names no process or is being written — whether it runs
// cannot be checked: it counts as alive, and a local lock has no lease to run out, so only
// its holder's unlock or force-unlock -force removes it.
func (l *Local) LockStatus(ctx context.Context) (*state.LockStatus, error) {
	info, err := l.readLock()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading lock %s: %w", l.lockPath(), err)
	}
	alive, known, why := liveproc.Judge(info.Process)
	return &state.LockStatus{Holder: info, Alive: alive, Unchecked: !known, Detail: why}, nil
}
