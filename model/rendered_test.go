package model

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func renderedFixture() *Rendered {
	on := true
	r := &Rendered{Pool: "worker", IgnitionVersion: "3.4.0", OSImage: "quay.io/os@sha256:1", KernelArgs: []string{"nosmt"},
		Files: []File{{Entry: Entry{Path: "/etc/a", OnChange: []Policy{{Kind: PolicyRestart, Unit: "a.service"}}}, Mode: 0o644, Contents: []byte("a\n")},
			{Entry: Entry{Path: "/etc/b", User: "root"}, Mode: 0o600, Contents: []byte{0, 1, 2}}},
		Units:   []Unit{{Name: "a.service", Enabled: &on, Contents: "[Service]\n", Dropins: []Dropin{{Name: "10.conf", Contents: "x"}}}},
		Sources: []string{"00-a", "50-b"}}
	r.Name = "rendered-worker-0123456789abcdef0123456789abcdef"
	return r
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
