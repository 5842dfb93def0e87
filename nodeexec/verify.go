package nodeexec

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/mcpfleet/mcp/internal/boundedfile"
	"github.com/mcpfleet/mcp/model"
)

// Drift is one difference between the disk and a rendered config.
type Drift = model.Drift

// The kinds of drift.
const (
	DriftMissing = model.DriftMissing
	DriftContent = model.DriftContent
	DriftMode    = model.DriftMode
	DriftType    = model.DriftType
	DriftMask    = model.DriftMask
	DriftOwner   = model.DriftOwner
)

// DriftError reports drift: after an update (verify), or before one (the disk no longer
// matches the config the node runs, Config).
type DriftError struct {
	Drift  []Drift
	Config string // set when found before an update
}

func (e *DriftError) Error() string {
	parts := make([]string, len(e.Drift))
	for i, d := range e.Drift {
		parts[i] = d.String()
	}
	if e.Config != "" {
		return fmt.Sprintf("the disk has drifted from %s, and the plan does not restore it: %s; "+
			"refusing to update over it (restore the files, or make a config manage them)", e.Config, strings.Join(parts, "; "))
	}
	return "the node differs from the config: " + strings.Join(parts, "; ")
}

// CheckNode compares the node with target as the verify step does: the disk (Verify), and
// what the host says the running boot runs — every kernel argument of target present,
// each that the update from `from` (nil: nothing managed) removed absent, target's OS image
// booted (model.CheckHost). A host that cannot say is not compared.
func (e *Executor) CheckNode(ctx context.Context, from, target *model.Rendered) ([]Drift, error) {
	drift, err := e.Verify(target)
	if err != nil {
		return nil, err
	}
	kargs, image, err := ObserveHost(ctx, e.Host)
	if err != nil {
		return nil, fmt.Errorf("verify: reading what the host runs: %w", err)
	}
	var removed []string
	if from != nil {
		_, removed = model.DiffArgs(from.KernelArgs, target.KernelArgs)
	}
	return append(drift, model.CheckHost(kargs, image, target, removed)...), nil
}

// Verify compares the root with target's files, directories, links and units: their
// contents, modes, targets, owners, masks, and the enablement links of units with an enabled (enabled.go).
func (e *Executor) Verify(target *model.Rendered) ([]Drift, error) {
	root, err := os.OpenRoot(e.Root)
	if err != nil {
		return nil, fmt.Errorf("opening node root: %w", err)
	}
	r := &dirs{root: root, open: map[string]*os.Root{}}
	defer r.close()
	var out []Drift
	for _, x := range target.Entries() {
		d, err := checkEntry(r, x)
		if err != nil {
			return nil, err
		}
		out = append(out, d...)
	}
	for _, u := range target.Units {
		p := unitPath(u.Name)
		if u.Mask {
			if l, err := r.Readlink(p); err != nil || l != "/dev/null" {
				out = append(out, Drift{Path: p, Kind: DriftMask, Expected: "/dev/null", Found: l})
			}
		} else if u.Contents != "" {
			d, err := checkFile(r, p, []byte(u.Contents), 0o644)
			if err != nil {
				return nil, err
			}
			out = append(out, d...)
		}
		for _, dr := range u.Dropins {
			d, err := checkFile(r, p+".d/"+dr.Name, []byte(dr.Contents), 0o644)
			if err != nil {
				return nil, err
			}
			out = append(out, d...)
		}
		if u.Enabled != nil && !u.Mask {
			d, _, err := checkEnabled(r.root, u.Name, *u.Enabled, target)
			if err != nil {
				return nil, fmt.Errorf("verify %s: %w", p, err)
			}
			if d != nil {
				out = append(out, *d)
			}
		}
	}
	return out, nil
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// dirs opens each directory of the root once, so that checking many files of one directory
// resolves one name each rather than walking the whole path every time (os.Root resolves a
// path a component at a time, safely).
type dirs struct {
	root *os.Root
	open map[string]*os.Root
}

// in returns the root of p's directory and p's name in it. A directory that cannot be
// opened (absent, or not a directory) is left to the whole-path lookup, which reports it.
func (d *dirs) in(p string) (*os.Root, string) {
	rel := strings.TrimPrefix(p, "/")
	dir, name := path.Split(rel)
	if dir == "" {
		return d.root, rel
	}
	sub, ok := d.open[dir]
	if !ok {
		sub, _ = d.root.OpenRoot(strings.TrimSuffix(dir, "/"))
		d.open[dir] = sub
	}
	if sub == nil {
		return d.root, rel
	}
	return sub, name
}

// Readlink reads the link at p.
func (d *dirs) Readlink(p string) (string, error) {
	r, name := d.in(p)
	return r.Readlink(name)
}

func (d *dirs) close() {
	for _, r := range d.open {
		if r != nil {
			r.Close()
		}
	}
	d.root.Close()
}

func checkFile(d *dirs, p string, want []byte, mode fs.FileMode) ([]Drift, error) {
	r, rel := d.in(p)
	st, err := r.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return []Drift{{Path: p, Kind: DriftMissing, Expected: digest(want)}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("verify %s: %w", p, err)
	}
	if !st.Mode().IsRegular() {
		return []Drift{{Path: p, Kind: DriftType, Expected: "regular file", Found: typeWord(st.Mode())}}, nil
	}
	var got []byte
	if st.Size() > maxManaged {
		err = boundedfile.ErrTooLarge // not read at all: a 1 GiB file costs no time
	} else {
		got, err = readManaged(r, rel)
	}
	if errors.Is(err, boundedfile.ErrTooLarge) {
		return []Drift{{Path: p, Kind: DriftContent, Expected: digest(want), Found: fmt.Sprintf("more than %d MiB", maxManaged>>20)}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("verify %s: %w", p, err)
	}
	var out []Drift
	// Comparing the bytes is the check; digests are only for reporting a difference.
	if !bytes.Equal(got, want) {
		out = append(out, Drift{Path: p, Kind: DriftContent, Expected: digest(want), Found: digest(got)})
	}
	if st.Mode()&model.ModeBits != mode&model.ModeBits {
		out = append(out, Drift{Path: p, Kind: DriftMode, Expected: fmt.Sprintf("%04o", model.UnixMode(mode)), Found: fmt.Sprintf("%04o", model.UnixMode(st.Mode()))})
	}
	return out, nil
}

// checkOwner reports a file whose owner is not the config's user and group, resolved in
// the node's own etc/passwd and etc/group. As the writer (Chown), it holds only a
// process running as root to owners, and names that do not resolve to nothing.
func checkOwner(d *dirs, p, user, group string) []Drift {
	if (user == "" && group == "") || os.Geteuid() != 0 {
		return nil
	}
	r, rel := d.in(p)
	st, err := r.Lstat(rel)
	if err != nil {
		return nil
	}
	uid, gid, ok := fileOwner(st)
	if !ok {
		return nil
	}
	wantUID, wantGID := uid, gid
	if user != "" {
		if wantUID, err = LookupID(d.root, "etc/passwd", user); err != nil {
			return nil
		}
	}
	if group != "" {
		if wantGID, err = LookupID(d.root, "etc/group", group); err != nil {
			return nil
		}
	}
	if uid == wantUID && gid == wantGID {
		return nil
	}
	return []Drift{{Path: p, Kind: DriftOwner, Expected: fmt.Sprintf("%d:%d (%s:%s)", wantUID, wantGID, user, group),
		Found: fmt.Sprintf("%d:%d", uid, gid)}}
}

// CheckBeforeUpdate compares the disk with the config the node runs (from) before an
// update to target: drift on a path the steps do not rewrite would be silently kept or
// overwritten by surprise, so it stops the update with a clear reason. Drift on a path the
// steps write is fine: the plan restores it. So is a path already as target has it (written,
// or removed, for target by an update that was interrupted): that is progress, not drift.
func (e *Executor) CheckBeforeUpdate(from, target *model.Rendered, steps []model.Step) error {
	if from == nil {
		return nil
	}
	drift, err := e.Verify(from)
	if err != nil || len(drift) == 0 {
		return err
	}
	written := map[string]bool{}
	for _, s := range steps {
		if s.Kind == model.StepWrite {
			written[s.Target] = true
			if !strings.HasPrefix(s.Target, "/") {
				written[unitPath(s.Target)] = true
			}
		}
	}
	var kept []Drift
	for _, d := range drift {
		unit, _, _ := strings.Cut(strings.TrimPrefix(d.Path, UnitDir+"/"), ".d/")
		if !written[d.Path] && !written[unitPath(unit)] {
			kept = append(kept, d)
		}
	}
	if len(kept) > 0 && target != nil {
		if kept, err = e.withoutProgress(kept, target); err != nil {
			return err
		}
	}
	if len(kept) > 0 {
		return &DriftError{Drift: kept, Config: from.Name}
	}
	return nil
}

// withoutProgress drops from drift (against the config the node runs) the paths that are
// as target has them: a path target manages and the disk matches, or a path target does
// not manage and the disk lacks.
func (e *Executor) withoutProgress(drift []Drift, target *model.Rendered) ([]Drift, error) {
	toTarget, err := e.Verify(target)
	if err != nil {
		return nil, err
	}
	off := map[string]bool{}
	for _, d := range toTarget {
		off[d.Path] = true
	}
	managed := managedPaths(target)
	var kept []Drift
	for _, d := range drift {
		if managed[d.Path] && !off[d.Path] || !managed[d.Path] && d.Kind == DriftMissing {
			continue
		}
		kept = append(kept, d)
	}
	return kept, nil
}

// managedPaths are the paths Verify checks for r.
func managedPaths(r *model.Rendered) map[string]bool {
	m := map[string]bool{}
	for _, x := range r.Entries() {
		m[x.Common().Path] = true
	}
	for _, u := range r.Units {
		m[unitPath(u.Name)] = true
		for _, d := range u.Dropins {
			m[unitPath(u.Name)+".d/"+d.Name] = true
		}
	}
	return m
}
