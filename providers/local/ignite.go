package local

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/coreos/ignition/v2/config/v3_6/types"
	"github.com/vincent-petithory/dataurl"

	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/internal/boundedfile"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec"
)

// ignite does to a new node's root what Ignition does on a machine's first boot with the
// served config raw (any 3.x spec, parsed by Ignition's own parser): its files stage —
// directories, files (contents, appends, gzip, hash verification, mode, owner), links,
// systemd units and drop-ins, unit masks (a link to /dev/null) and enablement (a line of
// etc/systemd/system-preset/20-ignition.preset, which systemd's preset-all acts on at the
// first boot, as Ignition leaves it) — and its kargs stage, whose result it returns (the
// kernel arguments the machine comes up with, starting from none).
//
// It takes what a pool's served config holds. Remote contents, configs to merge, users and
// groups, disks, RAID, filesystems and LUKS are refused, naming the field: a simulated
// machine has no network for them and no disks, and mcp's served configs have none.
func ignite(root string, raw []byte) ([]string, error) {
	cfg, rpt, err := ignition.ParseAny(raw)
	if err != nil {
		if s := strings.TrimSpace(rpt.String()); s != "" {
			err = fmt.Errorf("%w: %s", err, s)
		}
		return nil, fmt.Errorf("the served config is not one Ignition takes: %w", err)
	}
	if err := unsupported(&cfg); err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	for _, d := range cfg.Storage.Directories {
		if err := igniteDir(r, d); err != nil {
			return nil, fmt.Errorf("directory %s: %w", d.Path, err)
		}
	}
	for _, f := range cfg.Storage.Files {
		if err := igniteFile(r, f); err != nil {
			return nil, fmt.Errorf("file %s: %w", f.Path, err)
		}
	}
	for _, l := range cfg.Storage.Links {
		if err := igniteLink(r, l); err != nil {
			return nil, fmt.Errorf("link %s: %w", l.Path, err)
		}
	}
	if err := igniteUnits(r, cfg.Systemd.Units); err != nil {
		return nil, err
	}
	var kargs []string
	for _, a := range cfg.KernelArguments.ShouldExist {
		if !slices.Contains(kargs, string(a)) {
			kargs = append(kargs, string(a))
		}
	}
	for _, a := range cfg.KernelArguments.ShouldNotExist {
		kargs = removed(kargs, string(a))
	}
	return kargs, nil
}

func removed(list []string, v string) []string {
	var out []string
	for _, x := range list {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}

// unsupported names the first part of cfg a simulated first boot cannot do.
func unsupported(cfg *types.Config) error {
	var what string
	switch {
	case len(cfg.Ignition.Config.Merge) > 0 || cfg.Ignition.Config.Replace.Source != nil:
		what = "ignition.config (configs fetched from elsewhere)"
	case len(cfg.Passwd.Users) > 0 || len(cfg.Passwd.Groups) > 0:
		what = "passwd (users and groups)"
	case len(cfg.Storage.Disks) > 0 || len(cfg.Storage.Raid) > 0 || len(cfg.Storage.Filesystems) > 0 || len(cfg.Storage.Luks) > 0:
		what = "storage disks, raid, filesystems or luks"
	default:
		return nil
	}
	return fmt.Errorf("the served config has %s, which a local fleet's first boot does not do", what)
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

func igniteDir(r *os.Root, d types.Directory) error {
	if err := mkParents(r, d.Path); err != nil {
		return err
	}
	mode := fs.FileMode(0o755)
	if d.Mode != nil {
		mode = fs.FileMode(*d.Mode)
	}
	p := rel(d.Path)
	if st, err := r.Lstat(p); err == nil && (!st.IsDir() || boolOf(d.Overwrite)) {
		if !boolOf(d.Overwrite) {
			return errors.New("a non-directory is in the way and overwrite is false")
		}
		if err := r.RemoveAll(p); err != nil {
			return err
		}
	}
	if err := r.Mkdir(p, mode); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if err := r.Chmod(p, mode); err != nil {
		return err
	}
	return chown(r, p, d.User, d.Group)
}

func igniteFile(r *os.Root, f types.File) error {
	if err := mkParents(r, f.Path); err != nil {
		return err
	}
	p := rel(f.Path)
	var data []byte
	_, statErr := r.Lstat(p)
	exists := statErr == nil
	switch {
	case exists && boolOf(f.Overwrite):
		if err := r.RemoveAll(p); err != nil {
			return err
		}
	case exists && f.Contents.Source != nil:
		return errors.New("it exists and overwrite is false")
	case exists:
		old, err := boundedfile.ReadIn(r, p, model.MaxRenderedSize)
		if err != nil {
			return err
		}
		data = old
	}
	if f.Contents.Source != nil {
		b, err := resource(f.Contents)
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
	mode := fs.FileMode(0o644)
	if f.Mode != nil {
		mode = fs.FileMode(*f.Mode)
	}
	if err := r.WriteFile(p, data, mode); err != nil {
		return err
	}
	if err := r.Chmod(p, mode); err != nil { // WriteFile's mode is masked by the umask
		return err
	}
	return chown(r, p, f.User, f.Group)
}

// resource is the bytes of an inline resource: a data URL, decompressed, verified.
func resource(res types.Resource) ([]byte, error) {
	if res.Source == nil {
		return nil, nil
	}
	src := *res.Source
	if !strings.HasPrefix(src, "data:") {
		u, _, _ := strings.Cut(src, ":")
		return nil, fmt.Errorf("source %s:…: a local fleet's first boot reads inline data: sources only", u)
	}
	d, err := dataurl.DecodeString(src)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	data := d.Data
	if c := res.Compression; c != nil && *c != "" {
		if *c != "gzip" {
			return nil, fmt.Errorf("compression %q: Ignition knows gzip only", *c)
		}
		z, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		if data, err = boundedfile.ReadLimit("the decompressed data", z, model.MaxRenderedSize); err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
	}
	if h := res.Verification.Hash; h != nil {
		if err := verify(*h, data); err != nil {
			return nil, err
		}
	}
	return data, nil
}

// verify checks data (decompressed, as Ignition's verification.hash describes it) against
// "sha512-HEX" or "sha256-HEX".
func verify(want string, data []byte) error {
	kind, sum, _ := strings.Cut(want, "-")
	var h hash.Hash
	switch kind {
	case "sha512":
		h = sha512.New()
	case "sha256":
		h = sha256.New()
	default:
		return fmt.Errorf("verification hash %q: want sha512-… or sha256-…", want)
	}
	h.Write(data)
	if got := hex.EncodeToString(h.Sum(nil)); got != strings.ToLower(sum) {
		return fmt.Errorf("verification: the contents hash to %s-%s, not %s", kind, got, want)
	}
	return nil
}

func igniteLink(r *os.Root, l types.Link) error {
	if err := mkParents(r, l.Path); err != nil {
		return err
	}
	p := rel(l.Path)
	if _, err := r.Lstat(p); err == nil {
		if !boolOf(l.Overwrite) {
			return errors.New("it exists and overwrite is false")
		}
		if err := r.RemoveAll(p); err != nil {
			return err
		}
	}
	if l.Target == nil {
		return errors.New("no target")
	}
	if boolOf(l.Hard) {
		if err := r.Link(rel(*l.Target), p); err != nil {
			return err
		}
	} else if err := r.Symlink(*l.Target, p); err != nil {
		return err
	}
	return chown(r, p, l.User, l.Group)
}

// presetFile is where Ignition records units to enable or disable.
const presetFile = "etc/systemd/system-preset/20-ignition.preset"

// maxPreset bounds the preset file presetAll reads: a line per unit of a config.
const maxPreset = 1 << 20

func igniteUnits(r *os.Root, units []types.Unit) error {
	var preset strings.Builder
	for _, u := range units {
		unit := "etc/systemd/system/" + u.Name
		if u.Contents != nil {
			if err := writeUnitFile(r, unit, *u.Contents); err != nil {
				return fmt.Errorf("unit %s: %w", u.Name, err)
			}
		}
		for _, d := range u.Dropins {
			if d.Contents == nil {
				continue
			}
			if err := writeUnitFile(r, unit+".d/"+d.Name, *d.Contents); err != nil {
				return fmt.Errorf("unit %s drop-in %s: %w", u.Name, d.Name, err)
			}
		}
		if boolOf(u.Mask) {
			if err := r.MkdirAll(path.Dir(unit), 0o755); err != nil {
				return err
			}
			if err := r.RemoveAll(unit); err != nil {
				return err
			}
			if err := r.Symlink("/dev/null", unit); err != nil {
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
	if err := r.MkdirAll(path.Dir(presetFile), 0o755); err != nil {
		return err
	}
	return r.WriteFile(presetFile, []byte(preset.String()), 0o644)
}

func writeUnitFile(r *os.Root, p, contents string) error {
	if err := r.MkdirAll(path.Dir(p), 0o755); err != nil {
		return err
	}
	if err := r.WriteFile(p, []byte(contents), 0o644); err != nil {
		return err
	}
	return r.Chmod(p, 0o644)
}

// chown gives p its owner as Ignition does — by id, or by name in the node's own
// etc/passwd and etc/group — when running as root; otherwise the owner is left as
// created, as the node executor leaves it (a non-root process cannot give files away).
func chown(r *os.Root, p string, u types.NodeUser, g types.NodeGroup) error {
	if os.Geteuid() != 0 || (u.ID == nil && u.Name == nil && g.ID == nil && g.Name == nil) {
		return nil
	}
	uid, err := ownerID(r, "etc/passwd", u.ID, u.Name)
	if err != nil {
		return fmt.Errorf("user: %w", err)
	}
	gid, err := ownerID(r, "etc/group", g.ID, g.Name)
	if err != nil {
		return fmt.Errorf("group: %w", err)
	}
	return r.Lchown(p, uid, gid)
}

// ownerID is id, else name looked up in the root's db; -1 when neither is given.
func ownerID(r *os.Root, db string, id *int, name *string) (int, error) {
	switch {
	case id != nil:
		return *id, nil
	case name == nil || *name == "":
		return -1, nil
	}
	return nodeexec.LookupID(r, db, *name)
}

func boolOf(b *bool) bool { return b != nil && *b }

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
