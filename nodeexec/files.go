package nodeexec

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"strings"

	"github.com/mcpfleet/mcp/internal/atomicfile"
	"github.com/mcpfleet/mcp/internal/boundedfile"
	"github.com/mcpfleet/mcp/model"
)

// makeFile writes f's bytes at rel, of f's mode.
func (e *Executor) makeFile(r *os.Root, rel string, f *model.File) error {
	return e.writeAtomic(r, rel, f.Contents, model.FileMode(f.Mode))
}

// ChownFile is Chown for the regular file rel, written with mode: chown(2) clears a
// regular file's setuid and setgid bits, even root's, so they are set again after it, as
// Ignition chmods after it chowns.
func ChownFile(r *os.Root, rel string, o Owner, mode fs.FileMode) error {
	if err := Chown(r, rel, o); err != nil {
		return err
	}
	return keepSetID(r, rel, mode)
}

// keepSetID sets mode on rel again when it has the setuid or setgid bit, which a chown
// just cleared.
func keepSetID(r *os.Root, rel string, mode fs.FileMode) error {
	if mode&(fs.ModeSetuid|fs.ModeSetgid) == 0 || os.Geteuid() != 0 {
		return nil
	}
	return r.Chmod(rel, mode)
}

// writeAtomic writes rel as every file of the node is written (WriteFileIn).
func (e *Executor) writeAtomic(r *os.Root, rel string, data []byte, mode fs.FileMode) error {
	return WriteFileIn(r, rel, data, mode, !e.NoSync)
}

// WriteFileIn is the one writer of a node's files: it makes rel's directory when it is
// missing (0755) and replaces rel atomically with data, of exactly mode (atomicfile.ReplaceIn;
// sync as there). The directory is opened once, as a root of its own inside r: the
// temporary file and the rename then cost no walk of the path each. The executor writes
// every file and unit through it, and the local fleet's first boot the files and units of
// a served config.
func WriteFileIn(r *os.Root, rel string, data []byte, mode fs.FileMode, sync bool) error {
	dir := path.Dir(rel)
	d, err := r.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := mkdirAll(r, dir); err != nil {
			return err
		}
		d, err = r.OpenRoot(dir)
	}
	if err != nil {
		return err
	}
	defer d.Close()
	return atomicfile.ReplaceIn(d, path.Base(rel), data, mode, sync)
}

// mkdirAll makes dir (0755) and its missing parents. A link on the way whose target is
// missing — a CoreOS /opt before /var/opt exists, which systemd-tmpfiles makes at boot —
// gets its target made first, inside the root as every path here.
func mkdirAll(r *os.Root, dir string) error {
	err := r.MkdirAll(dir, 0o755)
	if !errors.Is(err, fs.ErrExist) {
		return err
	}
	parts := strings.Split(dir, "/")
	for i := range parts {
		p := path.Join(parts[:i+1]...)
		if st, lerr := r.Lstat(p); lerr != nil || st.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		if _, serr := r.Stat(p); !errors.Is(serr, fs.ErrNotExist) {
			continue
		}
		if t, lerr := r.Readlink(p); lerr == nil && !path.IsAbs(t) {
			if merr := r.MkdirAll(path.Join(path.Dir(p), t), 0o755); merr != nil {
				return merr
			}
		}
	}
	return r.MkdirAll(dir, 0o755)
}

// syncDir makes a rename or removal in dir durable, unless the root need not be.
func (e *Executor) syncDir(r *os.Root, dir string) error {
	if e.NoSync {
		return nil
	}
	return atomicfile.SyncDir(r, dir)
}

func (e *Executor) remove(r *os.Root, p string) error {
	rel, err := e.check(r, p)
	if err != nil {
		return err
	}
	if err := e.save(r, rel); err != nil {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	if err := r.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	return e.syncDir(r, path.Dir(rel))
}

func unitPath(name string) string { return UnitDir + "/" + name }

// writeUnit writes u of target, whose previous version (nil: none) is old.
func (e *Executor) writeUnit(ctx context.Context, r *os.Root, target *model.Rendered, old, u *model.Unit) error {
	p := unitPath(u.Name)
	rel, err := e.check(r, p)
	if err != nil {
		return err
	}
	if err := e.save(r, rel); err != nil {
		return fmt.Errorf("write unit %s: %w", u.Name, err)
	}
	switch {
	case u.Mask:
		if err := e.replaceSymlink(r, rel, "/dev/null"); err != nil {
			return fmt.Errorf("mask %s: %w", u.Name, err)
		}
	case u.Contents != "":
		if err := e.writeAtomic(r, rel, []byte(u.Contents), 0o644); err != nil {
			return fmt.Errorf("write unit %s: %w", u.Name, err)
		}
	case old != nil && old.Mask:
		if err := e.remove(r, p); err != nil { // unmasked, and no contents of its own
			return err
		}
	}
	for _, d := range u.Dropins {
		dp := p + ".d/" + d.Name
		drel, err := e.check(r, dp)
		if err != nil {
			return err
		}
		if err := e.save(r, drel); err != nil {
			return fmt.Errorf("write drop-in %s: %w", dp, err)
		}
		if err := e.writeAtomic(r, drel, []byte(d.Contents), 0o644); err != nil {
			return fmt.Errorf("write drop-in %s: %w", dp, err)
		}
	}
	if old != nil {
		for _, d := range old.Dropins {
			if !hasDropin(u.Dropins, d.Name) {
				if err := e.remove(r, p+".d/"+d.Name); err != nil {
					return err
				}
			}
		}
	}
	if u.Enabled == nil {
		return nil
	}
	// The host is asked when the config changes enabled, or when the links disagree with
	// it (drift, or an update that did not finish): writing a unit makes it as its config
	// says, links included.
	changed := old == nil || old.Enabled == nil || *old.Enabled != *u.Enabled
	var links []string
	if !u.Mask {
		d, l, err := checkEnabled(r, u.Name, *u.Enabled, target)
		if err != nil {
			return fmt.Errorf("write unit %s: %w", u.Name, err)
		}
		changed, links = changed || d != nil, l
	}
	if !changed {
		return nil
	}
	return e.enable(ctx, r, u.Name, *u.Enabled, links)
}

// enable asks the host to enable or disable unit, after saving the links it may change
// (relative to UnitDir) so that Rollback puts each back exactly as it was, after asking the
// host for the opposite (which also undoes what the links do not show, such as Also=).
func (e *Executor) enable(ctx context.Context, r *os.Root, unit string, on bool, links []string) error {
	for _, l := range links {
		rel, err := e.check(r, UnitDir+"/"+l)
		if err != nil {
			return err
		}
		if err := e.save(r, rel); err != nil {
			return fmt.Errorf("enablement of %s: %w", unit, err)
		}
	}
	if err := e.Host.EnableUnit(ctx, unit, on); err != nil {
		return err
	}
	e.undo = append(e.undo, undo{unit: unit, enabled: on})
	return nil
}

func hasDropin(ds []model.Dropin, name string) bool {
	for _, d := range ds {
		if d.Name == name {
			return true
		}
	}
	return false
}

func (e *Executor) removeUnit(ctx context.Context, r *os.Root, from *model.Rendered, old *model.Unit) error {
	if old.Enabled != nil && *old.Enabled {
		_, links, err := checkEnabled(r, old.Name, false, from)
		if err != nil {
			return fmt.Errorf("remove unit %s: %w", old.Name, err)
		}
		if err := e.enable(ctx, r, old.Name, false, links); err != nil {
			return err
		}
	}
	for _, d := range old.Dropins {
		if err := e.remove(r, unitPath(old.Name)+".d/"+d.Name); err != nil {
			return err
		}
	}
	return e.remove(r, unitPath(old.Name))
}

func (e *Executor) replaceSymlink(r *os.Root, rel, target string) error {
	return SymlinkIn(r, rel, target, !e.NoSync)
}

// SymlinkIn makes rel a link to target, as the executor links a node's files (a masked
// unit's /dev/null): rel's directory made when missing (0755), a new link beside rel
// renamed over it, and with sync the directory fsync'd.
func SymlinkIn(r *os.Root, rel, target string, sync bool) error {
	if err := r.MkdirAll(path.Dir(rel), 0o755); err != nil {
		return err
	}
	if err := symlinkAtomic(r, rel, target); err != nil {
		return err
	}
	if !sync {
		return nil
	}
	return atomicfile.SyncDir(r, path.Dir(rel))
}

// symlinkAtomic replaces rel by a link to target: a new link beside it, renamed over it.
func symlinkAtomic(r *os.Root, rel, target string) error {
	return replaceAtomic(r, rel, func(tmp string) error { return r.Symlink(target, tmp) })
}

// replaceAtomic puts what create makes at a temporary name beside rel over rel, by a
// rename: rel is the old thing or the new one, never missing.
func replaceAtomic(r *os.Root, rel string, create func(tmp string) error) error {
	tmp := atomicfile.TempName(rel) // swept by that name if a kill leaves it (Sweep)
	if err := create(tmp); err != nil {
		return err
	}
	if err := r.Rename(tmp, rel); err != nil {
		r.Remove(tmp)
		return err
	}
	return nil
}

// Owner is who a node's file belongs to: each of user and group by id, else by name in
// the node's own etc/passwd and etc/group (the node's users, not this machine's); neither
// given, the file is left as created.
type Owner struct {
	UID, GID    *int
	User, Group string
}

// Chown gives rel (itself, not what a link at rel points to) its owner o when running as
// root; otherwise the owner is left as created, since a non-root process cannot give
// files away.
func Chown(r *os.Root, rel string, o Owner) error {
	if os.Geteuid() != 0 || (o.UID == nil && o.GID == nil && o.User == "" && o.Group == "") {
		return nil
	}
	uid, err := ownerID(r, "etc/passwd", o.UID, o.User)
	if err != nil {
		return err
	}
	gid, err := ownerID(r, "etc/group", o.GID, o.Group)
	if err != nil {
		return err
	}
	return r.Lchown(rel, uid, gid)
}

// ownerID is id, else name looked up in the root's account database db; -1 when neither
// is given.
func ownerID(r *os.Root, db string, id *int, name string) (int, error) {
	switch {
	case id != nil:
		return *id, nil
	case name == "":
		return -1, nil
	}
	return LookupID(r, db, name)
}

// LookupID is the id of name in the root's account database db (etc/passwd or etc/group).
func LookupID(r *os.Root, db, name string) (int, error) {
	b, err := boundedfile.ReadIn(r, db, maxAccountDB)
	if err != nil {
		return 0, fmt.Errorf("resolving %q: %w", name, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) >= 3 && f[0] == name {
			var id int
			if _, err := fmt.Sscan(f[2], &id); err == nil {
				return id, nil
			}
		}
	}
	return 0, fmt.Errorf("%q is not in the node's /%s", name, db)
}

// Sweep removes the temporary twins writes cut short left on the node (atomicfile.IsTemp:
// ".<name>.tmp-<12 hex digits>", and ".<name>.mcp-<…>" of links an earlier release made):
// a write is atomic, so nothing half-written is ever at a path, but a kill between making
// the twin and renaming it leaves the twin beside it — a copy of a record or a file, up to
// the size of a rendered config. The agent sweeps before each update and resume
// (Agent.Update, Agent.Resume), in the directories mcp writes in: its own (StateDir, and
// MachineDir where the local fleet's machine records what it runs), those of the files
// and links of from and target (a rollback writes from's), and the unit directory with
// its subdirectories (drop-ins, .wants links). Only names of that pattern are removed, and
// not those from or target manage (a config may name a file so).
func (e *Executor) Sweep(from, target *model.Rendered) error {
	r, err := os.OpenRoot(e.Root)
	if err != nil {
		return err
	}
	defer r.Close()
	unitDir := strings.TrimPrefix(UnitDir, "/")
	dirs := map[string]bool{StateDir: true, MachineDir: true, unitDir: true}
	keep := map[string]bool{} // a managed path of that pattern is a config's file, not a twin
	for _, c := range []*model.Rendered{from, target} {
		if c == nil {
			continue
		}
		maps.Copy(keep, managedPaths(c))
		for _, x := range c.Entries() {
			if x.Kind() != model.EntryDirectory { // made in place, never through a twin
				dirs[path.Dir(strings.TrimPrefix(x.Common().Path, "/"))] = true
			}
		}
	}
	subs, err := sweepDir(r, unitDir, keep)
	if err != nil {
		return err
	}
	for _, d := range subs {
		dirs[path.Join(unitDir, d)] = true
	}
	for d := range dirs {
		if _, err := sweepDir(r, d, keep); err != nil {
			return err
		}
	}
	return nil
}

// sweepDir removes the temporary twins in dir (absent: nothing), but the paths keep holds
// (absolute), and returns the names of its subdirectories.
func sweepDir(r *os.Root, dir string, keep map[string]bool) ([]string, error) {
	f, err := boundedfile.OpenDirIn(r, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return nil, err
	}
	var subs []string
	for _, ent := range ents {
		n := ent.Name()
		switch {
		case ent.IsDir():
			subs = append(subs, n)
		case atomicfile.IsTemp(n) && !keep["/"+path.Join(dir, n)]:
			if err := r.Remove(path.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		}
	}
	return subs, nil
}
