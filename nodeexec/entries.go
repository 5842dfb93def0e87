package nodeexec

import (
	"fmt"
	"io/fs"
	"os"
	"path"

	"github.com/mcpfleet/mcp/model"
)

// Files, directories and links are written alike, as Ignition's files stage creates its
// filesystem entries (model.TreeEntry): the path checked — inside os.Root, under the
// allowed prefixes —, its prior state saved for Rollback, the entry made, its owner set.
// Only the making, and what may be cleared out of its way, is the kind's own (makeFile,
// makeDir, makeLink). Verify checks them alike too (checkEntry).

// writeEntry writes x over what from has at its path (a directory there goes first, when
// empty: a file or link cannot replace one that holds anything).
func (e *Executor) writeEntry(r *os.Root, from *model.Rendered, x model.TreeEntry) error {
	n := x.Common()
	dir := x.Kind() == model.EntryDirectory
	if !dir && from.Directory(n.Path) != nil {
		if err := e.removeDir(r, n.Path); err != nil {
			return err
		}
	}
	rel, err := e.checkItem(r, n.Path, dir)
	if err != nil {
		return err
	}
	if err := e.save(r, rel); err != nil {
		return fmt.Errorf("%s: %w", entryAct(x), err)
	}
	var mode fs.FileMode
	switch x := x.(type) {
	case *model.File:
		mode, err = model.FileMode(x.Mode), e.makeFile(r, rel, x)
	case *model.Directory:
		mode, err = model.FileMode(x.Mode), e.makeDir(r, rel, from, x)
	case *model.Link:
		err = e.makeLink(r, rel, x)
	}
	if err == nil {
		err = ChownFile(r, rel, Owner{User: n.User, Group: n.Group}, mode)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", entryAct(x), err)
	}
	if x.Kind() == model.EntryFile {
		return nil // WriteFileIn synced its directory
	}
	return e.syncDir(r, path.Dir(rel))
}

// entryAct names the writing of x in errors: "write /etc/a", "directory /etc/d",
// "link /etc/l".
func entryAct(x model.TreeEntry) string {
	if x.Kind() == model.EntryFile {
		return "write " + x.Common().Path
	}
	return string(x.Kind()) + " " + x.Common().Path
}

// removeEntry removes old, an entry no config declares any more: a directory only when
// it is empty (removeDir).
func (e *Executor) removeEntry(r *os.Root, old model.TreeEntry) error {
	if old.Kind() == model.EntryDirectory {
		return e.removeDir(r, old.Common().Path)
	}
	return e.remove(r, old.Common().Path)
}

// checkEntry compares the entry at x's path with x: what its kind holds (checkFile,
// checkDir, checkLink), then its owner.
func checkEntry(ds *dirs, x model.TreeEntry) ([]Drift, error) {
	n := x.Common()
	var d []Drift
	var err error
	switch x := x.(type) {
	case *model.File:
		d, err = checkFile(ds, n.Path, x.Contents, model.FileMode(x.Mode))
	case *model.Directory:
		d = checkDir(ds, x)
	case *model.Link:
		d = checkLink(ds, x)
	}
	if err != nil || len(d) > 0 {
		return d, err
	}
	return checkOwner(ds, n.Path, n.User, n.Group), nil
}
