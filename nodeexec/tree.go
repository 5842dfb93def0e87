package nodeexec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/mcpfleet/mcp/model"
)

// makeDir makes d's directory at rel when it is missing (its parents 0755) and gives it
// d's mode. A file or link mcp wrote at the path (from), or any with d.Overwrite, is
// removed first; anything else that is not a directory is an error: mcp does not delete
// what it did not write. A directory that is there is kept with what it holds.
func (e *Executor) makeDir(r *os.Root, rel string, from *model.Rendered, d *model.Directory) error {
	st, err := r.Lstat(rel)
	wrote := from.Entry(d.Path)
	switch {
	case err == nil && !st.IsDir() && (d.Overwrite || wrote != nil && wrote.Kind() != model.EntryDirectory):
		if err := r.Remove(rel); err != nil {
			return fmt.Errorf("removing the %s mcp wrote there: %w", st.Mode().Type(), err)
		}
	case err == nil && !st.IsDir():
		return fmt.Errorf("a %s is there, which no config of mcp's wrote: remove it, or manage it", typeWord(st.Mode()))
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if err := r.MkdirAll(path.Dir(rel), 0o755); err != nil {
		return err
	}
	if err := r.Mkdir(rel, model.FileMode(d.Mode)&fs.ModePerm); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	// Chmod, not Mkdir's mode alone: the umask narrows that, and an existing directory
	// keeps its own.
	return r.Chmod(rel, model.FileMode(d.Mode))
}

// removeDir removes a directory no config declares any more when it is empty; one that
// holds anything stays as it is (what is in it is not mcp's to delete).
func (e *Executor) removeDir(r *os.Root, p string) error {
	rel, err := e.checkItem(r, p, true)
	if err != nil {
		return err
	}
	st, err := r.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil || !st.IsDir() {
		return err // not a directory any more: someone else's now
	}
	if err := e.save(r, rel); err != nil {
		return fmt.Errorf("remove directory %s: %w", p, err)
	}
	if err := r.Remove(rel); err != nil {
		if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			return nil
		}
		return fmt.Errorf("remove directory %s: %w", p, err)
	}
	return e.syncDir(r, path.Dir(rel))
}

// makeLink makes l's link at rel, replacing a file or link there (a new link beside it,
// renamed over it); a directory there is an error.
func (e *Executor) makeLink(r *os.Root, rel string, l *model.Link) error {
	if st, err := r.Lstat(rel); err == nil && st.IsDir() {
		return errors.New("a directory is there: mcp does not replace a directory by a link")
	}
	if err := r.MkdirAll(path.Dir(rel), 0o755); err != nil {
		return err
	}
	if !l.Hard {
		return symlinkAtomic(r, rel, l.Target)
	}
	trel, err := e.check(r, l.Target)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	return hardLinkAtomic(r, trel, rel)
}

// hardLinkAtomic makes rel another name of the file at target: a new link beside rel,
// renamed over it.
func hardLinkAtomic(r *os.Root, target, rel string) error {
	return replaceAtomic(r, rel, func(tmp string) error { return r.Link(target, tmp) })
}

func typeWord(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return model.SpecialPipe
	case m&fs.ModeSocket != 0:
		return model.SpecialSocket
	case m&fs.ModeDevice != 0:
		return model.SpecialDevice
	}
	return m.Type().String()
}

// checkDir compares the directory at d.Path with d: there, a directory, its mode.
func checkDir(ds *dirs, d *model.Directory) []Drift {
	r, rel := ds.in(d.Path)
	st, err := r.Lstat(rel)
	want := model.FileMode(d.Mode)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return []Drift{{Path: d.Path, Kind: DriftMissing, Expected: "directory"}}
	case err != nil:
		return []Drift{{Path: d.Path, Kind: DriftType, Expected: "directory", Found: err.Error()}}
	case !st.IsDir():
		return []Drift{{Path: d.Path, Kind: DriftType, Expected: "directory", Found: typeWord(st.Mode())}}
	case st.Mode()&model.ModeBits != want:
		return []Drift{{Path: d.Path, Kind: DriftMode, Expected: fmt.Sprintf("%04o", d.Mode), Found: fmt.Sprintf("%04o", model.UnixMode(st.Mode()))}}
	}
	return nil
}

// checkLink compares the link at l.Path with l: there, a link, its target (a symbolic
// link's text; a hard link's file).
func checkLink(ds *dirs, l *model.Link) []Drift {
	r, rel := ds.in(l.Path)
	st, err := r.Lstat(rel)
	kind := "symbolic link"
	if l.Hard {
		kind = "hard link"
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return []Drift{{Path: l.Path, Kind: DriftMissing, Expected: kind + " to " + l.Target}}
	case err != nil:
		return []Drift{{Path: l.Path, Kind: DriftType, Expected: kind, Found: err.Error()}}
	case l.Hard:
		tst, terr := ds.root.Lstat(relOf(l.Target))
		if terr != nil || !os.SameFile(st, tst) {
			return []Drift{{Path: l.Path, Kind: DriftTarget, Expected: l.Target, Found: "another file"}}
		}
	case st.Mode()&fs.ModeSymlink == 0:
		return []Drift{{Path: l.Path, Kind: DriftType, Expected: kind, Found: typeWord(st.Mode())}}
	default:
		if got, err := r.Readlink(rel); err != nil || got != l.Target {
			return []Drift{{Path: l.Path, Kind: DriftTarget, Expected: l.Target, Found: got}}
		}
	}
	return nil
}

func relOf(p string) string { return path.Clean("/" + p)[1:] }

// DriftTarget is model.DriftTarget.
const DriftTarget = model.DriftTarget
