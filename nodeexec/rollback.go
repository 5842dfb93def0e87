package nodeexec

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/mcpfleet/mcp/model"
)

// undo is the state of one path before the executor first changed it, or (unit set) a
// unit the executor enabled or disabled.
type undo struct {
	rel      string
	absent   bool
	dir      bool   // a directory (its mode and owner saved, not what it holds)
	link     string // a symlink's target
	content  []byte
	mode     fs.FileMode
	uid, gid int

	unit    string
	enabled bool // what the unit was set to
}

// Begin starts a new update: Rollback will restore the state as it is now.
func (e *Executor) Begin() { e.undo, e.saved, e.staged = nil, nil, false }

// save records rel's state before its first change since Begin, so that
// Rollback can restore it exactly (content, mode, owner, or absence).
func (e *Executor) save(r *os.Root, rel string) error {
	if e.saved == nil {
		e.saved = map[string]bool{}
	}
	if e.saved[rel] {
		return nil
	}
	u := undo{rel: rel}
	st, err := r.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		u.absent = true
	case err != nil:
		return err
	case st.Mode()&fs.ModeSymlink != 0:
		if u.link, err = r.Readlink(rel); err != nil {
			return err
		}
	case st.Mode().IsRegular():
		if u.content, err = readManaged(r, rel); err != nil {
			return err
		}
		u.mode = st.Mode() & model.ModeBits
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			u.uid, u.gid = int(sys.Uid), int(sys.Gid)
		}
	case st.IsDir():
		u.dir, u.mode = true, st.Mode()&model.ModeBits
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			u.uid, u.gid = int(sys.Uid), int(sys.Gid)
		}
	default:
		return fmt.Errorf("/%s is a %s, not a file mcp can manage", rel, typeWord(st.Mode()))
	}
	e.saved[rel] = true
	e.undo = append(e.undo, u)
	return nil
}

// Rollback undoes every change since Begin, newest first: each path the executor changed
// back to its exact prior state, each unit it enabled disabled and the reverse; then it
// reloads systemd when units changed, and discards what kargs and pivot staged. It is for a
// failed update before its reboot: the node goes back to the config it ran. Undoing newest first puts a unit's file back before it is
// enabled again, and disables a unit before its file goes; the links an enablement changed
// were saved before it, so they are restored after the host's reversal, exactly as they
// were (a unit partly enabled before stays so).
func (e *Executor) Rollback(ctx context.Context) error {
	r, err := os.OpenRoot(e.Root)
	if err != nil {
		return fmt.Errorf("rollback: opening node root: %w", err)
	}
	defer r.Close()
	var errs []error
	units := false
	for i := len(e.undo) - 1; i >= 0; i-- {
		u := e.undo[i]
		if u.unit != "" {
			units = true
			if err := e.Host.EnableUnit(ctx, u.unit, !u.enabled); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		units = units || strings.HasPrefix("/"+u.rel, UnitDir+"/")
		if err := e.restore(r, u); err != nil {
			errs = append(errs, fmt.Errorf("restoring /%s: %w", u.rel, err))
		}
	}
	if units {
		if err := e.Host.DaemonReload(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if e.staged {
		// The kernel arguments or image it staged would take effect at the next reboot,
		// however far off: the node would boot an update that failed.
		if err := e.Host.Unstage(ctx); err != nil {
			errs = append(errs, fmt.Errorf("discarding the staged deployment: %w", err))
		}
	}
	e.undo, e.saved, e.staged = nil, nil, false
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("rollback: %w", err)
	}
	return nil
}

// restore puts back what was at a path, whatever kind of entry the update made there: a
// path that was empty emptied; else what was made there since cleared out of the way (a
// directory, which is empty, where a file or link was; a file or link where a directory
// was), then the file, link or directory made again as it was — a directory's mode and
// owner, not what it holds.
func (e *Executor) restore(r *os.Root, u undo) error {
	if u.absent {
		if err := r.Remove(u.rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	if st, err := r.Lstat(u.rel); err == nil && st.IsDir() != u.dir {
		if err := r.Remove(u.rel); err != nil {
			return err
		}
	}
	switch {
	case u.link != "":
		return e.replaceSymlink(r, u.rel, u.link)
	case u.dir:
		if err := r.Mkdir(u.rel, u.mode&fs.ModePerm); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		if err := r.Chmod(u.rel, u.mode); err != nil {
			return err
		}
	default:
		if err := e.writeAtomic(r, u.rel, u.content, u.mode); err != nil {
			return err
		}
	}
	if os.Geteuid() != 0 {
		return nil
	}
	if err := r.Lchown(u.rel, u.uid, u.gid); err != nil {
		return err
	}
	return keepSetID(r, u.rel, u.mode)
}
