package content

import (
	"regexp"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/model"
)

func fixture() *model.Rendered {
	on := true
	r := &model.Rendered{Pool: "worker", IgnitionVersion: "3.4.0", OSImage: "quay.io/os@sha256:1", KernelArgs: []string{"nosmt"},
		Files: []model.File{{Entry: model.Entry{Path: "/etc/a", OnChange: []model.Policy{{Kind: model.PolicyRestart, Unit: "a.service"}}}, Mode: 0o644, Contents: []byte("a\n")},
			{Entry: model.Entry{Path: "/etc/b", User: "root"}, Mode: 0o600, Contents: []byte{0, 1, 2}}},
		Units:   []model.Unit{{Name: "a.service", Enabled: &on, Contents: "[Service]\n", Dropins: []model.Dropin{{Name: "10.conf", Contents: "x"}}}},
		Sources: []string{"00-a", "50-b"}}
	r.Name = Name(r)
	return r
}

var contentName = regexp.MustCompile(`^rendered-worker-[0-9a-f]{32}$`)

// The name is a hash of everything but the name and the provenance: the same content gives
// the same name, any change to what a node gets gives another.
func TestContentName(t *testing.T) {
	r := fixture()
	if !contentName.MatchString(r.Name) {
		t.Fatalf("name %q is not rendered-<pool>-<32 hex digits>", r.Name)
	}
	if again := fixture(); again.Name != r.Name {
		t.Errorf("the same content named %s and %s", r.Name, again.Name)
	}
	same := fixture()
	same.Provenance = &model.Provenance{Files: map[string]model.Written{"/etc/a": {By: model.Origin{Block: "config.00-a", File: "x.hcl", Line: 3}}}}
	if Name(same) != r.Name {
		t.Error("provenance changed the name: moving a block would roll out")
	}
	for what, change := range map[string]func(r *model.Rendered){
		"pool":             func(r *model.Rendered) { r.Pool = "infra" },
		"ignition version": func(r *model.Rendered) { r.IgnitionVersion = "3.5.0" },
		"os image":         func(r *model.Rendered) { r.OSImage = "quay.io/os@sha256:2" },
		"kernel args":      func(r *model.Rendered) { r.KernelArgs = append(r.KernelArgs, "quiet") },
		"file contents":    func(r *model.Rendered) { r.Files[0].Contents = []byte("A\n") },
		"file mode":        func(r *model.Rendered) { r.Files[1].Mode = 0o644 },
		"file owner":       func(r *model.Rendered) { r.Files[1].User = "core" },
		"file path":        func(r *model.Rendered) { r.Files[1].Path = "/etc/c" },
		"file policy":      func(r *model.Rendered) { r.Files[0].OnChange = nil },
		"unit contents":    func(r *model.Rendered) { r.Units[0].Contents = "[Service]\nType=oneshot\n" },
		"unit enabled":     func(r *model.Rendered) { r.Units[0].Enabled = nil },
		"unit mask":        func(r *model.Rendered) { r.Units[0].Mask = true },
		"drop-in":          func(r *model.Rendered) { r.Units[0].Dropins[0].Contents = "y" },
		"sources":          func(r *model.Rendered) { r.Sources = r.Sources[:1] },
	} {
		c := fixture()
		change(c)
		if got := Name(c); got == r.Name || !strings.HasPrefix(got, "rendered-"+c.Pool+"-") {
			t.Errorf("a change of the %s gives name %s (unchanged: %s)", what, got, r.Name)
		}
	}
}

// CheckName refuses a config changed after it was named, and a name that is not its hash.
func TestCheckName(t *testing.T) {
	r := fixture()
	if err := Check(r); err != nil {
		t.Errorf("a config as rendered: %v", err)
	}
	for what, change := range map[string]func(r *model.Rendered){
		"content changed": func(r *model.Rendered) { r.Files[0].Contents = []byte("evil\n") },
		"renamed":         func(r *model.Rendered) { r.Name = "rendered-worker-00000000000000000000000000000000" },
		"moved pool":      func(r *model.Rendered) { r.Name = strings.Replace(r.Name, "worker", "infra", 1) },
		"no name":         func(r *model.Rendered) { r.Name = "" },
	} {
		c := fixture()
		change(c)
		if err := Check(c); err == nil || !strings.Contains(err.Error(), "does not match its content") {
			t.Errorf("%s: %v", what, err)
		}
	}
}

// A first-boot record reads back as it was written, with its embedded config; what does
// not name a rendered config, or holds another one than it names, is refused.
func TestFirstBootRoundTripAndRefusals(t *testing.T) {
	r := fixture()
	for _, f := range []FirstBoot{FirstBootOf(r), {Rendered: r.Name, OSImage: r.OSImage, Config: r}} {
		b := f.Encode()
		if !strings.HasSuffix(string(b), "}\n") {
			t.Errorf("record %q does not end in a newline", b)
		}
		back, err := ParseFirstBoot(b)
		if err != nil || back.Rendered != f.Rendered || back.OSImage != f.OSImage || (back.Config == nil) != (f.Config == nil) {
			t.Errorf("read back %+v, %v; want %+v", back, err, f)
		}
		if back.Config != nil && back.Config.Name != r.Name {
			t.Errorf("embedded config %s", back.Config.Name)
		}
	}
	changed := fixture()
	changed.Files[0].Contents = []byte("evil\n")
	other := fixture()
	other.Pool = "infra"
	other.Name = Name(other)
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"not JSON", []byte("rendered-x"), "is not a first-boot record"},
		{"no name", []byte(`{}`), `names "", not a rendered config`},
		{"not rendered-", []byte(`{"rendered":"etc-passwd"}`), "not a rendered config"},
		{"a path", []byte(`{"rendered":"rendered-../x"}`), "not a rendered config"},
		{"another config", FirstBoot{Rendered: r.Name, OSImage: r.OSImage, Config: other}.Encode(), "and holds " + other.Name},
		{"another OS image", FirstBoot{Rendered: r.Name, OSImage: "os:9", Config: r}.Encode(), `(OS image "os:9")`},
		{"a changed config", FirstBoot{Rendered: r.Name, OSImage: r.OSImage, Config: changed}.Encode(), "does not match its content"},
	} {
		if _, err := ParseFirstBoot(c.b); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), FirstBootPath) {
			t.Errorf("%s: %v, want an error naming %s with %q", c.name, err, FirstBootPath, c.want)
		}
	}
}
