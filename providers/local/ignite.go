package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/internal/boundedfile"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec"
)

// ignite does to a new node's root what Ignition does on a machine's first boot with the
// served config raw (any 3.x spec, read back by the ignition room with Ignition's own
// parser): its files stage — directories, files (contents, appends, gzip, hash
// verification, mode, owner), links, systemd units and drop-ins, unit masks (a link to
// /dev/null) and enablement (a line of etc/systemd/system-preset/20-ignition.preset, which
// systemd's preset-all acts on at the first boot, as Ignition leaves it) — and its kargs
// stage, whose result it returns (the kernel arguments the machine comes up with, starting
// from none). Files, units and links are written by the node executor's writer
// (nodeexec.WriteFileIn, SymlinkIn, Chown), as every later update of the node writes them.
//
// It takes what a pool's served config holds. Remote contents, configs to merge, users and
// groups, disks, RAID, filesystems and LUKS are refused, naming the field: a simulated
// machine has no network for them and no disks, and mcp's served configs have none.
func ignite(root string, raw []byte) ([]string, error) {
	cfg, err := ignition.Read(raw)
	if u := (*ignition.UnsupportedError)(nil); errors.As(err, &u) {
		return nil, fmt.Errorf("the served config has %s, which a local fleet's first boot does not do", u.What)
	} else if err != nil {
		return nil, fmt.Errorf("the served config is not one Ignition takes: %w", err)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	for _, e := range cfg.Entries() {
		if err := igniteEntry(r, e); err != nil {
			return nil, fmt.Errorf("%s %s: %w", e.Kind(), e.Common().Path, err)
		}
	}
	if err := igniteUnits(r, cfg.Units); err != nil {
		return nil, err
	}
	return cfg.KernelArgs, nil
}

// rel is an Ignition path (absolute, checked by the parser) inside the root.
func rel(p string) string { return strings.TrimPrefix(path.Clean(p), "/") }

// mkParents makes p's parent directories as Ignition does (0755, root's).
func mkParents(r *os.Root, p string) error {
	if dir := path.Dir(rel(p)); dir != "." {
		return r.MkdirAll(dir, 0o755)
	}
	return nil
}

// igniteEntry makes e as Ignition's files stage makes each filesystem entry: its parents,
// what is in the way cleared (inTheWay), the entry made, its owner set.
func igniteEntry(r *os.Root, e ignition.Entry) error {
	n := e.Common()
	if err := mkParents(r, n.Path); err != nil {
		return err
	}
	p := rel(n.Path)
	kept, err := inTheWay(r, p, e)
	if err != nil {
		return err
	}
	var mode fs.FileMode
	switch e := e.(type) {
	case *ignition.Directory:
		mode = e.Mode
		if !kept {
			err = r.Mkdir(p, e.Mode&fs.ModePerm)
		}
		if err == nil {
			err = r.Chmod(p, e.Mode)
		}
	case *ignition.File:
		mode, err = e.Mode, igniteFile(r, p, e, kept)
	case *ignition.Link:
		if e.Hard {
			err = r.Link(rel(e.Target), p)
		} else {
			err = nodeexec.SymlinkIn(r, p, e.Target, false)
		}
	}
	if err != nil {
		return err
	}
	return nodeexec.ChownFile(r, p, nodeexec.Owner(n.Owner), mode)
}

// inTheWay clears what is at p for e, or keeps it (true): a directory where e is one; a
// file's bytes when e gives no contents, to append to. Else what is there stays only when
// e may not overwrite it, an error.
func inTheWay(r *os.Root, p string, e ignition.Entry) (bool, error) {
	st, err := r.Lstat(p)
	if err != nil {
		return false, nil
	}
	f, isFile := e.(*ignition.File)
	_, isDir := e.(*ignition.Directory)
	switch {
	case e.Common().Overwrite:
		return false, r.RemoveAll(p)
	case isDir && st.IsDir(), isFile && f.Contents == nil:
		return true, nil
	case isDir:
		return false, errors.New("a non-directory is in the way and overwrite is false")
	default:
		return false, errors.New("it exists and overwrite is false")
	}
}

// igniteFile writes f at p: its contents, else the bytes there (kept), then each append.
func igniteFile(r *os.Root, p string, f *ignition.File, kept bool) error {
	var data []byte
	if kept {
		old, err := boundedfile.ReadIn(r, p, model.MaxRenderedSize)
		if err != nil {
			return err
		}
		data = old
	}
	if f.Contents != nil {
		b, err := resource(*f.Contents)
		if err != nil {
			return fmt.Errorf("contents: %w", err)
		}
		data = b
	}
	for i, a := range f.Append {
		b, err := resource(a)
		if err != nil {
			return fmt.Errorf("append %d: %w", i, err)
		}
		data = append(data, b...)
	}
	return nodeexec.WriteFileIn(r, p, data, f.Mode, false)
}

// resource is the bytes of an inline resource: a data URL, decompressed, verified.
func resource(res ignition.Resource) ([]byte, error) {
	b, err := res.Data()
	if ni := (*ignition.NotInlineError)(nil); errors.As(err, &ni) {
		return nil, fmt.Errorf("source %s:…: a local fleet's first boot reads inline data: sources only", ni.Scheme)
	}
	return b, err
}

// presetFile is where Ignition records units to enable or disable.
const presetFile = "etc/systemd/system-preset/20-ignition.preset"

// maxPreset bounds the preset file presetAll reads: a line per unit of a config.
const maxPreset = 1 << 20

func igniteUnits(r *os.Root, units []ignition.Unit) error {
	var preset strings.Builder
	for _, u := range units {
		unit := "etc/systemd/system/" + u.Name
		if u.Contents != nil {
			if err := nodeexec.WriteFileIn(r, unit, []byte(*u.Contents), 0o644, false); err != nil {
				return fmt.Errorf("unit %s: %w", u.Name, err)
			}
		}
		for _, d := range u.Dropins {
			if err := nodeexec.WriteFileIn(r, unit+".d/"+d.Name, []byte(d.Contents), 0o644, false); err != nil {
				return fmt.Errorf("unit %s drop-in %s: %w", u.Name, d.Name, err)
			}
		}
		if u.Mask {
			if err := r.RemoveAll(unit); err != nil {
				return err
			}
			if err := nodeexec.SymlinkIn(r, unit, "/dev/null", false); err != nil {
				return fmt.Errorf("unit %s: masking: %w", u.Name, err)
			}
		}
		if u.Enabled != nil {
			verb := "disable"
			if *u.Enabled {
				verb = "enable"
			}
			fmt.Fprintf(&preset, "%s %s\n", verb, u.Name)
		}
	}
	if preset.Len() == 0 {
		return nil
	}
	return nodeexec.WriteFileIn(r, presetFile, []byte(preset.String()), 0o644, false)
}

// presetAll does what systemd does at a machine's first boot with the preset file Ignition
// left (systemctl preset-all, before any unit of the boot runs): it enables and disables
// the units it names, making or removing their links as systemctl would — so the agent's
// first boot finds units enabled as the config says, as it does on a machine.
func presetAll(root string) error {
	b, err := boundedfile.Read(filepath.Join(root, presetFile), maxPreset, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for line := range strings.Lines(string(b)) {
		verb, unit, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || (verb != "enable" && verb != "disable") {
			continue
		}
		if err := nodeexec.LinkUnit(root, unit, verb == "enable"); err != nil {
			return err
		}
	}
	return nil
}
