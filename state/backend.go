package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"time"

	"github.com/mcpfleet/mcp/internal/liveproc"
	"github.com/mcpfleet/mcp/internal/untrusted"
	"github.com/mcpfleet/mcp/model"
)

// Backend stores and locks the state.
type Backend interface {
	// Read returns the state; an absent state reads as an empty one with no lineage.
	Read(ctx context.Context) (*State, error)
	// Write stores the state: rendered configs first, so that nothing ever names a
	// rendered config the store lacks, then the rest in one atomic step. It folds and
	// clears the journal.
	Write(ctx context.Context, s *State) error
	// AppendJournal durably records one finished step. Apply calls it from several
	// goroutines at once (one per node updating); each call returns once its record is
	// durable.
	AppendJournal(ctx context.Context, r JournalRecord) error
	// Lock takes the state lock once, without waiting; a held lock gives a *LockError.
	Lock(ctx context.Context, info LockInfo) (Unlocker, error)
	// ForceUnlock removes the lock with the given ID whoever holds it.
	ForceUnlock(ctx context.Context, id string) error
	// DeleteRendered deletes stored rendered configs; names not stored are no error. It is
	// for mcp prune, under the lock, with names nothing uses any more.
	DeleteRendered(ctx context.Context, names []string) error
}

// RenderedPublisher is implemented by backends whose rendered store the boot server serves
// agents from (the kubernetes backend: one immutable Secret a config). Refresh publishes a
// pool's target there before it asks the nodes' agents what they carry of it: an agent
// fetches it as for an update. A config is content-named and immutable, so this is no
// rollout: nothing points at it, and mcp prune collects it once nothing renders it.
type RenderedPublisher interface {
	PublishRendered(ctx context.Context, r *model.Rendered) error
}

// OrphanPruner is implemented by backends whose writes, cut off, can leave pieces behind
// that nothing names (the kubernetes backend's state chunks: created before the head that
// would name them). mcp prune deletes them, under the lock; dryRun only lists them.
type OrphanPruner interface {
	PruneOrphans(ctx context.Context, dryRun bool) ([]string, error)
}

// LockInspector is implemented by backends that can tell who holds the lock and whether
// that holder is alive, so that mcp force-unlock asks before it removes a live holder's
// lock (as Terraform's force-unlock asks).
type LockInspector interface {
	// LockStatus returns the lock's holder now, or nil when the state is not locked.
	LockStatus(ctx context.Context) (*LockStatus, error)
}

// LockStatus is the lock's holder and whether it is alive.
type LockStatus struct {
	Holder LockInfo
	// Alive is false only when the holder is known to be gone (its process no longer runs on
	// this host; its Lease expired). A holder that cannot be checked counts as alive.
	Alive bool
	// Unchecked: Alive only because whether the holder runs cannot be checked from here (it
	// runs on another machine, boot or PID namespace, and the lock has no lease to run out).
	Unchecked bool
	// Detail says how Alive was judged, for people: "process 4242 runs on this machine".
	Detail string
}

// Unlocker releases a lock.
type Unlocker interface {
	Unlock(ctx context.Context) error
}

// ErrLockLost is the cause of a run's context when its lock was lost while held: the run
// starts nothing new and does not write the state, which another run may now hold.
var ErrLockLost = errors.New("the state lock was lost")

// Losable is implemented by locks that can be lost while held — a Lease whose renewals
// found it taken or gone, or failed until it expired. Lost is closed then and LostErr says
// why; the holder must start no new work, since another run may now hold the lock.
type Losable interface {
	Lost() <-chan struct{}
	LostErr() error
}

// LockInfo says who holds the lock, as Terraform's does.
type LockInfo struct {
	ID        string `json:"id"`
	Operation string `json:"operation"`
	Who       string `json:"who"`
	// Process is the holder: its machine, boot, PID namespace, PID and start time.
	model.Process
	Version string    `json:"version"`
	Created time.Time `json:"created"`
	Path    string    `json:"path"`
}

// NewLockInfo describes this process taking the lock for operation.
func NewLockInfo(operation, version string) LockInfo {
	who := "unknown"
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	if h, err := os.Hostname(); err == nil {
		who += "@" + h
	}
	return LockInfo{ID: newLineage(), Operation: operation, Who: who, Process: liveproc.Self(),
		Version: version, Created: time.Now().UTC().Truncate(time.Second)}
}

// Shown is i for people: its text fields escaped by untrusted.Line (the ID too: a lock ID
// that needs escaping is no ID mcp made, and no command could name it anyway).
func (i LockInfo) Shown() LockInfo {
	i.ID, i.Operation, i.Who, i.Version, i.Path = untrusted.Line(i.ID), untrusted.Line(i.Operation), untrusted.Line(i.Who),
		untrusted.Line(i.Version), untrusted.Line(i.Path)
	return i
}

// LockError is returned when another holder has the lock.
type LockError struct {
	Holder LockInfo
	// Note, when set, says more about the lock: what it is and when it expires.
	Note string
}

// Error says who holds the lock. What the lock file or Lease says of its holder is
// escaped (package untrusted): whoever wrote it may have put a terminal's control
// sequences or a line break in it.
func (e *LockError) Error() string {
	h := e.Holder.Shown()
	if h.ID == "" { // a holder that has not written who it is yet: no ID to force-unlock
		return fmt.Sprintf("state is locked by %s, which has not said who it is yet; %s", h.Who, untrusted.Line(e.Note))
	}
	note := ""
	if e.Note != "" {
		note = untrusted.Line(e.Note) + "; "
	}
	return fmt.Sprintf("state is locked by %s (pid %d, operation \"%s\", since %s, lock ID %s); %s"+
		"wait for it to finish, or if that process is gone run: mcp force-unlock %s",
		h.Who, h.PID, h.Operation, h.Created.Format(time.RFC3339), h.ID, note, h.ID)
}

// LockWait takes the lock, retrying until timeout while another holder has it.
func LockWait(ctx context.Context, b Backend, info LockInfo, timeout time.Duration) (Unlocker, error) {
	deadline := time.Now().Add(timeout)
	for {
		u, err := b.Lock(ctx, info)
		var le *LockError
		if err == nil || !errors.As(err, &le) || time.Now().After(deadline) {
			return u, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the state lock: %w (last: %v)", ctx.Err(), err)
		case <-time.After(min(250*time.Millisecond, time.Until(deadline)+time.Millisecond)):
		}
	}
}
