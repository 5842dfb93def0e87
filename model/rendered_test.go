package model

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func renderedFixture() *Rendered {
	on := true
	r := &Rendered{Pool: "worker", IgnitionVersion: "3.4.0", OSImage: "quay.io/os@sha256:1", KernelArgs: []string{"nosmt"},
		Files: []File{{Path: "/etc/a", Mode: 0o644, Contents: []byte("a\n"), OnChange: []Policy{{Kind: PolicyRestart, Unit: "a.service"}}},
			{Path: "/etc/b", Mode: 0o600, User: "root", Contents: []byte{0, 1, 2}}},
		Units:   []Unit{{Name: "a.service", Enabled: &on, Contents: "[Service]\n", Dropins: []Dropin{{Name: "10.conf", Contents: "x"}}}},
		Sources: []string{"00-a", "50-b"}}
	r.Name = r.ContentName()
	return r
}

var contentName = regexp.MustCompile(`^rendered-worker-[0-9a-f]{32}$`)

// The name is a hash of everything but the name and the provenance: the same content gives
// the same name, any change to what a node gets gives another.
func TestContentName(t *testing.T) {
	r := renderedFixture()
	if !contentName.MatchString(r.Name) {
		t.Fatalf("name %q is not rendered-<pool>-<32 hex digits>", r.Name)
	}
	if again := renderedFixture(); again.Name != r.Name {
		t.Errorf("the same content named %s and %s", r.Name, again.Name)
	}
	same := renderedFixture()
	same.Provenance = &Provenance{Files: map[string]Written{"/etc/a": {By: Origin{Block: "config.00-a", File: "x.hcl", Line: 3}}}}
	if same.ContentName() != r.Name {
		t.Error("provenance changed the name: moving a block would roll out")
	}
	for what, change := range map[string]func(r *Rendered){
		"pool":             func(r *Rendered) { r.Pool = "infra" },
		"ignition version": func(r *Rendered) { r.IgnitionVersion = "3.5.0" },
		"os image":         func(r *Rendered) { r.OSImage = "quay.io/os@sha256:2" },
		"kernel args":      func(r *Rendered) { r.KernelArgs = append(r.KernelArgs, "quiet") },
		"file contents":    func(r *Rendered) { r.Files[0].Contents = []byte("A\n") },
		"file mode":        func(r *Rendered) { r.Files[1].Mode = 0o644 },
		"file owner":       func(r *Rendered) { r.Files[1].User = "core" },
		"file path":        func(r *Rendered) { r.Files[1].Path = "/etc/c" },
		"file policy":      func(r *Rendered) { r.Files[0].OnChange = nil },
		"unit contents":    func(r *Rendered) { r.Units[0].Contents = "[Service]\nType=oneshot\n" },
		"unit enabled":     func(r *Rendered) { r.Units[0].Enabled = nil },
		"unit mask":        func(r *Rendered) { r.Units[0].Mask = true },
		"drop-in":          func(r *Rendered) { r.Units[0].Dropins[0].Contents = "y" },
		"sources":          func(r *Rendered) { r.Sources = r.Sources[:1] },
	} {
		c := renderedFixture()
		change(c)
		if got := c.ContentName(); got == r.Name || !strings.HasPrefix(got, "rendered-"+c.Pool+"-") {
			t.Errorf("a change of the %s gives name %s (unchanged: %s)", what, got, r.Name)
		}
	}
}

// CheckName refuses a config changed after it was named, and a name that is not its hash.
func TestCheckName(t *testing.T) {
	r := renderedFixture()
	if err := r.CheckName(); err != nil {
		t.Errorf("a config as rendered: %v", err)
	}
	for what, change := range map[string]func(r *Rendered){
		"content changed": func(r *Rendered) { r.Files[0].Contents = []byte("evil\n") },
		"renamed":         func(r *Rendered) { r.Name = "rendered-worker-00000000000000000000000000000000" },
		"moved pool":      func(r *Rendered) { r.Name = strings.Replace(r.Name, "worker", "infra", 1) },
		"no name":         func(r *Rendered) { r.Name = "" },
	} {
		c := renderedFixture()
		change(c)
		if err := c.CheckName(); err == nil || !strings.Contains(err.Error(), "does not match its content") {
			t.Errorf("%s: %v", what, err)
		}
	}
}

// A rendered config read back from its JSON is the same config with the same name; its
// provenance is not in the JSON.
func TestRenderedJSONRoundTrip(t *testing.T) {
	r := renderedFixture()
	r.Provenance = &Provenance{Files: map[string]Written{"/etc/a": {By: Origin{Block: "config.00-a"}}}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "config.00-a") {
		t.Errorf("provenance in the JSON: %s", b)
	}
	var back Rendered
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]any{r.Name, r.Pool, r.OSImage, r.KernelArgs, r.Files, r.Units, r.Sources},
		[]any{back.Name, back.Pool, back.OSImage, back.KernelArgs, back.Files, back.Units, back.Sources}); d != "" {
		t.Errorf("read back (-want +got):\n%s", d)
	}
	if again, _ := json.Marshal(&back); string(again) != string(b) {
		t.Errorf("written again:\n%s\nwas:\n%s", again, b)
	}
	if err := back.CheckName(); err != nil {
		t.Errorf("read back: %v", err)
	}
}

func TestCheckPointers(t *testing.T) {
	r := renderedFixture()
	have := map[string]*Rendered{r.Name: r}
	for _, c := range []struct {
		name     string
		pointers map[string]string
		want     string
	}{
		{"none", nil, ""},
		{"known", map[string]string{"worker": r.Name}, ""},
		{"unknown", map[string]string{"worker": r.Name, "infra": "rendered-infra-1"}, "pool infra points at rendered config rendered-infra-1, which the store lacks"},
		{"a path", map[string]string{"worker": "../../etc/passwd"}, "pool worker points at rendered config ../../etc/passwd"},
		{"first in pool order", map[string]string{"b": "x", "a": "y"}, "pool a points at rendered config y"},
	} {
		err := CheckPointers(c.pointers, have)
		if got := ""; err != nil {
			got = err.Error()
			if c.want == "" || !strings.Contains(got, c.want) {
				t.Errorf("%s: %v, want %q", c.name, err, c.want)
			}
		} else if c.want != "" {
			t.Errorf("%s: accepted, want %q", c.name, c.want)
		}
	}
}

func TestFileAndUnitLookup(t *testing.T) {
	r := renderedFixture()
	if f := r.File("/etc/b"); f == nil || f.Mode != 0o600 {
		t.Errorf("File(/etc/b) = %+v", f)
	}
	if u := r.Unit("a.service"); u == nil || u.Contents != "[Service]\n" {
		t.Errorf("Unit(a.service) = %+v", u)
	}
	if r.File("/etc/nope") != nil || r.Unit("nope.service") != nil || r.File("a.service") != nil {
		t.Error("a lookup found what the config lacks")
	}
	// The lookup is the config's own element: a caller may change it in place.
	r.File("/etc/a").Mode = 0o640
	if r.Files[0].Mode != 0o640 {
		t.Error("File returned a copy")
	}
}

func TestDiffArgs(t *testing.T) {
	for _, c := range []struct {
		old, new, added, removed []string
	}{
		{nil, nil, nil, nil},
		{nil, []string{"a", "b"}, []string{"a", "b"}, nil},
		{[]string{"a", "b"}, nil, nil, []string{"a", "b"}},
		{[]string{"a", "b", "c"}, []string{"c", "d", "a"}, []string{"d"}, []string{"b"}},
		{[]string{"x=1"}, []string{"x=2"}, []string{"x=2"}, []string{"x=1"}},
	} {
		added, removed := DiffArgs(c.old, c.new)
		if !slices.Equal(added, c.added) || !slices.Equal(removed, c.removed) {
			t.Errorf("DiffArgs(%q, %q) = %q, %q; want %q, %q", c.old, c.new, added, removed, c.added, c.removed)
		}
	}
}
