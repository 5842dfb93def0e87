package planner

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
)

func renderDesired() *model.Desired {
	yes := true
	return &model.Desired{
		Pools: []model.Pool{{Name: "worker", KernelArgs: []string{"a"}, OSImage: "img:pool"}},
		Configs: []model.Config{
			{Name: "10-a", Pools: []string{"worker"}, KernelArgs: []string{"b", "a"},
				Files: []model.File{{Entry: model.Entry{Path: "/etc/x"}, Mode: 0o644, Contents: []byte("first")}, {Entry: model.Entry{Path: "/etc/bin"}, Mode: 0o600, Contents: []byte{0xff, 0, 1}}},
				Units: []model.Unit{{Name: "u.service", Contents: "[Service]\n", Dropins: []model.Dropin{{Name: "10.conf", Contents: "a"}, {Name: "20.conf", Contents: "b"}}}}},
			{Name: "20-b", Pools: []string{"worker"}, OSImage: "img:config",
				Files: []model.File{{Entry: model.Entry{Path: "/etc/x"}, Mode: 0o640, Contents: []byte("second 100% #?")}},
				Units: []model.Unit{{Name: "u.service", Contents: "[Service]\nX=1\n", Enabled: &yes, Dropins: []model.Dropin{{Name: "20.conf", Contents: "B"}}}}},
			{Name: "30-other", Pools: []string{"infra"}, Files: []model.File{{Entry: model.Entry{Path: "/etc/other"}, Mode: 0o644, Contents: []byte("o")}}},
		},
	}
}

func TestRenderMergesInOrder(t *testing.T) {
	out, diags := Render(renderDesired(), ignition.Renderer{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	r := out["worker"]
	if got := string(r.File("/etc/x").Contents); got != "second 100% #?" || r.File("/etc/x").Mode != 0o640 {
		t.Errorf("later config should win: %q %o", got, r.File("/etc/x").Mode)
	}
	if r.File("/etc/other") != nil {
		t.Error("a config of another pool was merged")
	}
	u := r.Unit("u.service")
	if u.Contents != "[Service]\nX=1\n" || len(u.Dropins) != 2 || u.Dropins[1].Contents != "B" || u.Dropins[0].Contents != "a" {
		t.Errorf("unit merge: %+v", u)
	}
	if strings.Join(r.KernelArgs, " ") != "a b" || r.OSImage != "img:config" {
		t.Errorf("kargs %v image %s", r.KernelArgs, r.OSImage)
	}
	if !strings.HasPrefix(r.Name, "rendered-worker-") || len(r.Name) != len("rendered-worker-")+32 {
		t.Errorf("name %q", r.Name)
	}
	// The Ignition config is valid for Ignition's own parser and carries the same bytes.
	cfg, rpt, err := ignition.ParseAny(content.Ignition(r))
	if err != nil {
		t.Fatalf("Ignition parse: %v %s", err, rpt)
	}
	if len(cfg.Storage.Files) != 2 || len(cfg.Systemd.Units) != 1 {
		t.Errorf("ignition has %d files, %d units", len(cfg.Storage.Files), len(cfg.Systemd.Units))
	}
	var raw map[string]any
	json.Unmarshal(content.Ignition(r), &raw)
	if raw["ignition"].(map[string]any)["version"] != "3.4.0" {
		t.Errorf("version: %v", raw["ignition"])
	}
}

func TestRenderNameIsStable(t *testing.T) {
	a, _ := Render(renderDesired(), ignition.Renderer{})
	d := renderDesired()
	// The same content declared in another order of files, units and drop-ins.
	c := &d.Configs[0]
	c.Files[0], c.Files[1] = c.Files[1], c.Files[0]
	c.Units[0].Dropins[0], c.Units[0].Dropins[1] = c.Units[0].Dropins[1], c.Units[0].Dropins[0]
	b, _ := Render(d, ignition.Renderer{})
	if a["worker"].Name != b["worker"].Name {
		t.Errorf("names differ: %s %s", a["worker"].Name, b["worker"].Name)
	}
	d.Configs[1].Files[0].Contents = []byte("changed")
	c2, _ := Render(d, ignition.Renderer{})
	if c2["worker"].Name == a["worker"].Name {
		t.Error("a content change kept the name")
	}
}

// TestRenderNameIgnoresHealthChecks: a pool's health checks — a command run on the node
// above all — are not part of its rendered config, so adding or changing one retargets no
// node (docs/decisions.md, "Health gates and progress").
func TestRenderNameIgnoresHealthChecks(t *testing.T) {
	a, _ := Render(renderDesired(), ignition.Renderer{})
	d := renderDesired()
	d.Pools[0].HealthChecks = []model.HealthCheck{
		{Name: "kubelet", Command: []string{"/usr/bin/systemctl", "is-active", "kubelet"}, Timeout: time.Minute},
		{Name: "app", HTTPGet: "http://${node.address}/", Timeout: time.Minute}}
	b, _ := Render(d, ignition.Renderer{})
	if a["worker"].Name != b["worker"].Name || !bytes.Equal(content.Ignition(a["worker"]), content.Ignition(b["worker"])) {
		t.Errorf("health checks changed the rendered config: %s, %s", a["worker"].Name, b["worker"].Name)
	}
}

func TestRenderReportsIgnitionProblemsAtTheFile(t *testing.T) {
	d := renderDesired()
	rng := model.Range{Filename: "main.hcl", Start: model.Pos{Line: 7, Column: 3}}
	d.Configs[0].Files = append(d.Configs[0].Files, model.File{Entry: model.Entry{Path: "/etc/dir/", DeclRange: rng}, Mode: 0o644, Contents: []byte("x")})
	_, diags := Render(d, ignition.Renderer{})
	if !diags.HasErrors() {
		t.Fatal("Ignition accepted a file path ending in a slash")
	}
	found := false
	for _, dg := range diags {
		if dg.Subject != nil && dg.Subject.Filename == "main.hcl" && dg.Subject.Start.Line == 7 {
			found = true
		}
	}
	if !found {
		t.Errorf("no diagnostic at the file's range: %v", diags)
	}
}

// TestRenderNamesAsBefore: names of rendered configs, which are hashes of their content
// including the Ignition bytes, are those render gave before it marshalled once (and before
// the ignition room encoded them).
func TestRenderNamesAsBefore(t *testing.T) {
	out, diags := Render(renderDesired(), ignition.Renderer{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if got := out["worker"].Name; got != "rendered-worker-a33037fe42f042516867be7fe5b3fe0f" {
		t.Errorf("name %s", got)
	}
	out, diags = Render(benchDesired(20, 200), ignition.Renderer{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if a, b := out["p00"].Name, out["p19"].Name; a != "rendered-p00-6a822200e57e91ba05170f0962a63146" ||
		b != "rendered-p19-f0a24640c133a521558521681614a6e0" {
		t.Errorf("names %s, %s", a, b)
	}
}

// A problem Ignition reports in a file, directory or link is shown where that entry was
// declared: the report's path (storage.links.1.target) counts entries of its kind alone.
func TestIgnitionReportAtTheEntry(t *testing.T) {
	at := func(line int) model.Range { return model.Range{Filename: "main.hcl", Start: model.Pos{Line: line}} }
	r := &model.Rendered{Pool: "worker",
		Files:       []model.File{{Entry: model.Entry{Path: "/etc/f", DeclRange: at(1)}}},
		Directories: []model.Directory{{Entry: model.Entry{Path: "/etc/d", DeclRange: at(2)}}, {Entry: model.Entry{Path: "/etc/e", DeclRange: at(3)}}},
		Links:       []model.Link{{Entry: model.Entry{Path: "/etc/l", DeclRange: at(4)}}, {Entry: model.Entry{Path: "/etc/m", DeclRange: at(5)}}}}
	pool := &model.Pool{Name: "worker", DeclRange: at(9)}
	for path, line := range map[string]int{"storage.files.0.mode": 1, "storage.directories.1": 3,
		"storage.links.1.target": 5, "storage.links.0": 4, "storage.links.2": 9, "storage.disks.0": 9} {
		diags := reportDiags(r, nil, pool, []model.ReportEntry{{Severity: model.DiagError, Path: path, Message: "bad"}})
		if len(diags) != 1 || diags[0].Subject == nil || diags[0].Subject.Start.Line != line {
			t.Errorf("%s: %v, want line %d", path, diags, line)
		}
	}
}
