package acceptance

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The corpus (testdata/corpus, README.md there): real node configuration from public
// projects that run CoreOS nodes, kept with its sources. Today: the files and units the
// OpenShift Machine Config Operator's templates put on every node, those that need no
// template values.

// corpusEntry is one MCO template: a file (path, mode, inline contents) or a unit.
type corpusEntry struct {
	Src      string // its path under testdata/corpus/mco
	Path     string `json:"path"`
	Mode     int    `json:"mode"`
	Contents struct {
		Inline string `json:"inline"`
	} `json:"-"`
	Name    string                            `json:"name"`
	Enabled *bool                             `json:"enabled"`
	Mask    bool                              `json:"mask"`
	Unit    string                            `json:"-"`
	Dropins []struct{ Name, Contents string } `json:"dropins"`
}

// key is what a later entry replaces an earlier one by: the file's path or the unit's name.
func (e *corpusEntry) key() string { return e.Path + e.Name }

func readCorpus(t *testing.T) []corpusEntry {
	t.Helper()
	var out []corpusEntry
	root := filepath.Join("testdata", "corpus", "mco")
	err := filepath.WalkDir(filepath.Join(root, "templates"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var e corpusEntry
		var raw struct {
			Contents any `json:"contents"`
		}
		if err := yaml.Unmarshal(b, &e); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if err := yaml.Unmarshal(b, &raw); err != nil {
			return err
		}
		switch c := raw.Contents.(type) {
		case map[string]any:
			e.Contents.Inline, _ = c["inline"].(string)
		case string:
			e.Unit = c
		}
		e.Src, _ = filepath.Rel(root, p)
		out = append(out, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Src < out[j].Src })
	return out
}

// corpusConfig is the config block name of an entry: role (common before the role's own,
// which overrides it, as in the MCO) then platform (_base first), and its pools in the
// quickstart: master's entries go to infra.
func corpusConfig(src string) (name string, pools []string) {
	parts := strings.Split(src, "/") // templates/ROLE/(NN-ROLE/)?PLATFORM/(files|units)/F
	role, platform := parts[1], parts[len(parts)-3]
	rank := map[string]string{"common": "0", "master": "1", "worker": "1"}[role]
	pools = map[string][]string{"common": {"worker", "infra"}, "master": {"infra"}, "worker": {"worker"}}[role]
	if platform == "_base" {
		platform = "0base"
	}
	sub := ""
	if len(parts) == 6 {
		sub = "-" + parts[2]
	}
	return fmt.Sprintf("zz-corpus-%s-%s%s-%s", rank, role, sub, platform), pools
}

// corpusHCL writes the entries as config blocks into dir (corpus.hcl), each content in a
// file of dir/corpus read with file(), as a person would keep them.
func corpusHCL(t *testing.T, dir string, entries []corpusEntry) {
	t.Helper()
	blocks := map[string]*strings.Builder{}
	var names []string
	os.MkdirAll(filepath.Join(dir, "corpus"), 0o755)
	n := 0
	text := func(s string) string {
		n++
		name := fmt.Sprintf("corpus/%03d", n)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("file(%q)", name)
	}
	for _, e := range mergedUnits(entries) {
		cfg, pools := corpusConfig(e.Src)
		b := blocks[cfg]
		if b == nil {
			b = &strings.Builder{}
			fmt.Fprintf(b, "config %q {\n  pools = [\"%s\"]\n", cfg, strings.Join(pools, `", "`))
			blocks[cfg] = b
			names = append(names, cfg)
		}
		if e.Path != "" {
			fmt.Fprintf(b, "  file %q {\n    mode    = \"%04o\"\n    content = %s\n  }\n", e.Path, e.mode(), text(e.Contents.Inline))
			continue
		}
		fmt.Fprintf(b, "  unit %q {\n", e.Name)
		if e.Enabled != nil {
			fmt.Fprintf(b, "    enabled = %t\n", *e.Enabled)
		}
		if e.Mask {
			b.WriteString("    mask = true\n")
		}
		if e.Unit != "" {
			fmt.Fprintf(b, "    contents = %s\n", text(e.Unit))
		}
		for _, d := range e.Dropins {
			fmt.Fprintf(b, "    dropin %q { contents = %s }\n", d.Name, text(d.Contents))
		}
		b.WriteString("  }\n")
	}
	slices.Sort(names)
	var out strings.Builder
	for _, cfg := range names {
		out.WriteString(blocks[cfg].String() + "}\n\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "corpus.hcl"), []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (e *corpusEntry) mode() int {
	if e.Mode == 0 {
		return 0o644
	}
	return e.Mode
}

// expected is what a node of pool must carry from entries: per path or unit name the
// entry of the last config (by name) that gives it to the pool, as mcp and the MCO merge.
func expected(entries []corpusEntry, pool string) map[string]corpusEntry {
	byCfg := slices.Clone(entries)
	sort.SliceStable(byCfg, func(i, j int) bool {
		a, _ := corpusConfig(byCfg[i].Src)
		b, _ := corpusConfig(byCfg[j].Src)
		return a < b
	})
	out := map[string]corpusEntry{}
	for _, e := range byCfg {
		if _, pools := corpusConfig(e.Src); slices.Contains(pools, pool) {
			if old, ok := out[e.key()]; ok && e.Name != "" {
				e = mergeUnit(old, e)
			}
			out[e.key()] = e
		}
	}
	return out
}

// mergeUnit is unit u declared again by v: what v sets wins, drop-ins merge by name. The
// MCO's templates give a unit in several files (crio.service's drop-ins each in its own).
func mergeUnit(u, v corpusEntry) corpusEntry {
	out := v
	if v.Unit == "" {
		out.Unit = u.Unit
	}
	if v.Enabled == nil {
		out.Enabled = u.Enabled
	}
	out.Mask = u.Mask || v.Mask
	out.Dropins = slices.Clone(v.Dropins)
	for _, d := range u.Dropins {
		if !slices.ContainsFunc(v.Dropins, func(w struct{ Name, Contents string }) bool { return w.Name == d.Name }) {
			out.Dropins = append(out.Dropins, d)
		}
	}
	return out
}

// mergedUnits is entries with the declarations of a unit in one config made one, in the
// place of its first.
func mergedUnits(entries []corpusEntry) []corpusEntry {
	var out []corpusEntry
	at := map[string]int{}
	for _, e := range entries {
		cfg, _ := corpusConfig(e.Src)
		if i, ok := at[cfg+"\x00"+e.Name]; ok && e.Name != "" {
			out[i] = mergeUnit(out[i], e)
			continue
		}
		at[cfg+"\x00"+e.Name] = len(out)
		out = append(out, e)
	}
	return out
}

// checkRoot compares a root (a node's, or the one Ignition wrote) with what the entries
// give the pool, byte for byte: files with their mode, units and drop-ins with theirs.
func checkRoot(t *testing.T, what, root string, want map[string]corpusEntry) {
	t.Helper()
	if len(want) < 20 {
		t.Fatalf("%s: only %d corpus files and units to compare", what, len(want))
	}
	t.Logf("%s: %d corpus files and units compared", what, len(want))
	same := func(p, content string, mode fs.FileMode) {
		got, err := os.ReadFile(filepath.Join(root, p))
		if err != nil || string(got) != content {
			t.Errorf("%s: %s: %v, %d bytes differ from the source's %d", what, p, err, len(got), len(content))
			return
		}
		if st, _ := os.Stat(filepath.Join(root, p)); mode != 0 && st.Mode().Perm() != mode {
			t.Errorf("%s: %s: mode %o, want %o", what, p, st.Mode().Perm(), mode)
		}
	}
	for _, e := range want {
		if e.Path != "" {
			same(e.Path, e.Contents.Inline, fs.FileMode(e.mode()))
			continue
		}
		if e.Unit != "" {
			same("etc/systemd/system/"+e.Name, e.Unit, 0)
		}
		for _, d := range e.Dropins {
			same("etc/systemd/system/"+e.Name+".d/"+d.Name, d.Contents, 0)
		}
		if e.Mask {
			if l, err := os.Readlink(filepath.Join(root, "etc/systemd/system", e.Name)); err != nil || l != "/dev/null" {
				t.Errorf("%s: unit %s is not masked: %q %v", what, e.Name, l, err)
			}
		}
	}
}

// TestCorpus: every corpus entry is loaded (as config blocks), rendered (Ignition's
// parser checks it), applied to the local fleet, served by mcp serve and written by the
// real Ignition client, each byte for byte as its source; drift is clean after. The
// Butane and MachineConfig entries are judged the same way (corpusButane).
func TestCorpus(t *testing.T) {
	exclusive(t)
	entries := readCorpus(t)
	files, units := 0, 0
	for _, e := range entries {
		if e.Path != "" {
			files++
		} else {
			units++
		}
	}
	t.Logf("MCO templates: %d entries (%d files, %d units), all applied", len(entries), files, units)
	dir := localQuickstart(t, "0s", "0s")
	corpusHCL(t, dir, entries)
	if out, err := exec.Command(mcpBinary(t), "-chdir="+dir, "apply", "-auto-approve", "-no-color").CombinedOutput(); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	for node, pool := range map[string]string{"worker-0": "worker", "infra-0": "infra"} {
		checkRoot(t, "fleet node "+node, filepath.Join(dir, "fleet", "nodes", node, "root"), expected(entries, pool))
	}
	if out, err := exec.Command(mcpBinary(t), "-chdir="+dir, "drift", "-detailed-exitcode", "-no-color").CombinedOutput(); err != nil {
		t.Errorf("drift after apply: %v\n%s", err, out)
	}
	ign := ignitionClient(t)
	url := startServe(t, dir)
	for _, pool := range []string{"worker", "infra"} {
		S := firstBoot(t, ign, url+"/config/"+pool)
		checkRoot(t, "Ignition's root for "+pool, S, expected(entries, pool))
	}
	t.Run("butane-and-machineconfigs", func(t *testing.T) { corpusButane(t, ign) })
}
