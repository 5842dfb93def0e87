package nodeexec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/mcpfleet/mcp/internal/boundedfile"
	"github.com/mcpfleet/mcp/internal/unitinstall"
	"github.com/mcpfleet/mcp/model"
)

// Whether a unit is enabled is its links, as `systemctl is-enabled` reads them
// (docs/drift.md, "Enabled units"): enabled, every link its [Install] section asks for
// exists in /etc/systemd/system and points at the unit's file; disabled, no link to the unit
// is left there (`systemctl disable` removes them all, whoever made them). Ignition's preset
// file only decides the first boot, so it is not checked.

// DriftEnabled: a unit's enablement links disagree with its enabled.
const DriftEnabled = model.DriftEnabled

// unitSearch is where systemd loads system units from, first found wins, relative to the
// root.
var unitSearch = []string{"etc/systemd/system", "run/systemd/system", "usr/local/lib/systemd/system",
	"usr/lib/systemd/system", "lib/systemd/system"}

// linkDirs are the dependency directories whose links enable a unit.
var linkDirs = []string{".wants", ".requires", ".upholds"}

// install is what enabling a unit links, and to what.
type install struct {
	file  string   // the unit file the links point at, absolute in the node; "" when unknown
	link  string   // the links' own name: the unit's, or a template's default instance
	links []string // relative to UnitDir
}

// installOf reads what enabling name links. With cfg, the unit file is the contents cfg
// gives (the unit's own, or an instance's template's), with cfg's drop-ins; without cfg, or
// when cfg gives no contents, it is the file systemd would load from the root, with the
// drop-ins beside it in UnitDir. ok is false when there is no unit file to read.
func installOf(r *os.Root, name string, cfg *model.Rendered) (inst install, ok bool, err error) {
	inst.link = name
	tmpl := unitinstall.Template(name)
	var files []string
	if cfg != nil {
		for _, n := range []string{name, tmpl} {
			if u := cfg.Unit(n); n != "" && u != nil && u.Contents != "" && !u.Mask {
				inst.file, files = unitPath(n), []string{u.Contents}
				break
			}
		}
		if inst.file != "" {
			files = append(files, cfgDropins(cfg, tmpl, name)...)
		}
	}
	if inst.file == "" {
		for _, n := range []string{name, tmpl} {
			if n == "" {
				continue
			}
			if inst.file, files, err = fromDisk(r, n); inst.file != "" || err != nil {
				break
			}
		}
		if err != nil || inst.file == "" {
			return inst, false, err
		}
		more, err := diskDropins(r, tmpl, name)
		if err != nil {
			return inst, false, err
		}
		files = append(files, more...)
	}
	info, err := unitinstall.Parse(files...)
	if err != nil {
		return inst, false, fmt.Errorf("unit %s (%s): %w", name, inst.file, err)
	}
	inst.link = unitinstall.LinkName(name, info.DefaultInstance)
	inst.links = info.Links(name)
	return inst, true, nil
}

// fromDisk reads the first unit file called name on the unit search path; a link to
// /dev/null (masked) is no unit file.
func fromDisk(r *os.Root, name string) (string, []string, error) {
	for _, dir := range unitSearch {
		rel := dir + "/" + name
		b, err := readManaged(r, rel)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			if l, lerr := r.Readlink(rel); lerr == nil && l == "/dev/null" {
				return "", nil, nil
			}
			return "", nil, fmt.Errorf("reading unit %s: %w", "/"+rel, err)
		}
		return "/" + rel, []string{string(b)}, nil
	}
	return "", nil, nil
}

// cfgDropins are cfg's drop-ins of the units named, ordered by file name as systemd orders
// them (a unit's own drop-in replaces its template's of the same name).
func cfgDropins(cfg *model.Rendered, units ...string) []string {
	byName := map[string]string{}
	for _, n := range units {
		if u := cfg.Unit(n); n != "" && u != nil {
			for _, d := range u.Dropins {
				byName[d.Name] = d.Contents
			}
		}
	}
	return sortedValues(byName)
}

// diskDropins are the *.conf drop-ins of the units named in UnitDir, ordered as cfgDropins.
func diskDropins(r *os.Root, units ...string) ([]string, error) {
	byName := map[string]string{}
	for _, n := range units {
		if n == "" {
			continue
		}
		dir := strings.TrimPrefix(unitPath(n), "/") + ".d"
		ents, err := readDir(r, dir)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".conf") || e.IsDir() {
				continue
			}
			b, err := readManaged(r, dir+"/"+e.Name())
			if err != nil {
				return nil, fmt.Errorf("reading drop-in /%s/%s: %w", dir, e.Name(), err)
			}
			byName[e.Name()] = string(b)
		}
	}
	return sortedValues(byName), nil
}

func sortedValues(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = m[n]
	}
	return out
}

// readDir lists dir, nothing when it does not exist.
func readDir(r *os.Root, dir string) ([]fs.DirEntry, error) {
	f, err := boundedfile.OpenDirIn(r, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, fmt.Errorf("listing /%s: %w", dir, err)
	}
	return ents, nil
}

// pointsAt reports whether a link's target names the unit: its file, or its own name.
func (inst install) pointsAt(target string) bool {
	b := path.Base(target)
	return inst.file != "" && b == path.Base(inst.file) || b == inst.link
}

// missingLinks are inst's links that are absent ("no L") or point elsewhere ("L → T").
func missingLinks(r *os.Root, inst install) ([]string, error) {
	var bad []string
	for _, l := range inst.links {
		rel := strings.TrimPrefix(UnitDir, "/") + "/" + l
		t, err := r.Readlink(rel)
		switch {
		case err == nil && inst.pointsAt(t):
		case err == nil:
			bad = append(bad, l+" → "+t)
		case errors.Is(err, fs.ErrNotExist):
			bad = append(bad, "no "+l)
		default:
			if _, serr := r.Lstat(rel); serr != nil && !errors.Is(serr, fs.ErrNotExist) {
				return nil, fmt.Errorf("reading link %s: %w", "/"+rel, serr)
			}
			bad = append(bad, l+" is not a link")
		}
	}
	return bad, nil
}

// presentLinks are every link to unit name in UnitDir, relative to it: in a dependency
// directory under the unit's (or its default instance's) name, or an alias at the top that
// points at its file — what `systemctl disable` removes.
func presentLinks(r *os.Root, name string, inst install) ([]string, error) {
	dir := strings.TrimPrefix(UnitDir, "/")
	ents, err := readDir(r, dir)
	if err != nil {
		return nil, err
	}
	names := []string{name}
	if inst.link != "" && inst.link != name {
		names = append(names, inst.link)
	}
	var out []string
	for _, e := range ents {
		switch {
		case e.IsDir() && slices.ContainsFunc(linkDirs, func(s string) bool { return strings.HasSuffix(e.Name(), s) }):
			for _, n := range names {
				if st, err := r.Lstat(dir + "/" + e.Name() + "/" + n); err == nil && st.Mode()&fs.ModeSymlink != 0 {
					out = append(out, e.Name()+"/"+n)
				}
			}
		case e.Type()&fs.ModeSymlink != 0 && !slices.Contains(names, e.Name()) && (inst.file == "" || e.Name() != path.Base(inst.file)):
			if t, err := r.Readlink(dir + "/" + e.Name()); err == nil && inst.pointsAt(t) {
				out = append(out, e.Name())
			}
		}
	}
	return out, nil
}

// checkEnabled compares unit name's links with enabled. It returns the drift (nil when they
// agree, or when it cannot be known: no unit file to read, an unreadable [Install] section,
// or one that links nothing) and the links, relative to UnitDir, that enabling (its
// [Install] links) or disabling (the links present) would change.
func checkEnabled(r *os.Root, name string, enabled bool, cfg *model.Rendered) (*Drift, []string, error) {
	inst, ok, err := installOf(r, name, cfg)
	var perr *unitinstall.ParseError
	if errors.As(err, &perr) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if !enabled {
		present, err := presentLinks(r, name, inst)
		if err != nil || len(present) == 0 {
			return nil, present, err
		}
		return &Drift{Path: unitPath(name), Kind: DriftEnabled, Expected: "disabled",
			Found: "enabled (" + strings.Join(present, ", ") + ")"}, present, nil
	}
	if !ok || len(inst.links) == 0 {
		return nil, nil, nil
	}
	bad, err := missingLinks(r, inst)
	if err != nil || len(bad) == 0 {
		return nil, inst.links, err
	}
	state := "partly enabled"
	if len(bad) == len(inst.links) {
		state = "disabled"
	}
	return &Drift{Path: unitPath(name), Kind: DriftEnabled, Expected: "enabled",
		Found: state + " (" + strings.Join(bad, ", ") + ")"}, inst.links, nil
}

// LinkUnit enables or disables unit in the node root at root as `systemctl --root=ROOT
// enable|disable` does: the links of its [Install] section made to the unit file systemd
// would load (replacing whatever is in their place, as EnableUnitFiles with force), or
// every link to it in /etc/systemd/system removed. It is for Hosts with no systemd manager:
// the local provider's simulated nodes, and tests. A unit that links nothing (no [Install])
// is left as it is, as systemctl does; a unit with no file, or masked, cannot be enabled.
func LinkUnit(root, unit string, enable bool) error {
	r, err := os.OpenRoot(root)
	if err != nil {
		return fmt.Errorf("opening node root: %w", err)
	}
	defer r.Close()
	verb := map[bool]string{true: "enable", false: "disable"}[enable]
	inst, ok, err := installOf(r, unit, nil)
	if err != nil {
		return fmt.Errorf("%s %s: %w", verb, unit, err)
	}
	dir := strings.TrimPrefix(UnitDir, "/")
	if !enable {
		present, err := presentLinks(r, unit, inst)
		if err != nil {
			return fmt.Errorf("disable %s: %w", unit, err)
		}
		for _, l := range present {
			if err := r.Remove(dir + "/" + l); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("disable %s: %w", unit, err)
			}
		}
		return nil
	}
	if !ok {
		if l, err := r.Readlink(dir + "/" + unit); err == nil && l == "/dev/null" {
			return fmt.Errorf("enable %s: the unit is masked", unit)
		}
		return fmt.Errorf("enable %s: no unit file %s in the node's unit path (%s)", unit, unit, strings.Join(unitSearch, ", "))
	}
	for _, l := range inst.links {
		rel := dir + "/" + l
		if err := r.MkdirAll(path.Dir(rel), 0o755); err != nil {
			return fmt.Errorf("enable %s: %w", unit, err)
		}
		if err := symlinkAtomic(r, rel, inst.file); err != nil {
			return fmt.Errorf("enable %s: %w", unit, err)
		}
	}
	return nil
}
