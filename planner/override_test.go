package planner

import (
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/ignition"

	"github.com/mcpfleet/mcp/model"
)

func at(file string, line int) model.Range {
	return model.Range{Filename: file, Start: model.Pos{Line: line, Column: 3}, End: model.Pos{Line: line, Column: 9}}
}

// A unit overridden in two pools is one warning naming both pools; a unit whose policy
// stays the same is none; each item's provenance lists what it overrode, latest last.
func TestOverridesWarnOncePerBlockPair(t *testing.T) {
	restart := []model.Policy{{Kind: model.PolicyRestart, Unit: "u.service"}}
	d := &model.Desired{Dir: "/cfg",
		Pools: []model.Pool{{Name: "infra"}, {Name: "worker", KernelArgs: []string{"k"}, KernelArgsRange: at("/cfg/main.hcl", 2)}},
		Configs: []model.Config{
			{Name: "10-a", Pools: []string{"worker", "infra"},
				Units: []model.Unit{{Name: "u.service", Contents: "a", OnChange: restart, DeclRange: at("/cfg/a.hcl", 3)}},
				Files: []model.File{{Entry: model.Entry{Path: "/etc/f", OnChange: restart, DeclRange: at("/cfg/a.hcl", 7)}, Contents: []byte("a")}}},
			{Name: "20-b", Pools: []string{"worker", "infra"},
				Units: []model.Unit{{Name: "u.service", Contents: "b", DeclRange: at("/cfg/b.hcl", 5)}},
				Files: []model.File{{Entry: model.Entry{Path: "/etc/f", OnChange: restart, DeclRange: at("/cfg/b.hcl", 9)}, Contents: []byte("b")}}},
			{Name: "30-c", Pools: []string{"worker"}, KernelArgs: []string{"k", "j"},
				Files: []model.File{{Entry: model.Entry{Path: "/etc/f", OnChange: restart, DeclRange: at("/cfg/c.hcl", 1), Text: model.TextRef{Kind: model.TextButane, Path: "storage.files.0"}}, Contents: []byte("c")}}},
		},
	}
	out, diags := Render(d, ignition.Renderer{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if len(diags) != 1 || diags[0].Severity != model.DiagWarning || diags[0].Subject.Filename != "/cfg/b.hcl" || diags[0].Subject.Start.Line != 5 {
		t.Fatalf("want one warning at b.hcl:5, got %v", diags)
	}
	for _, w := range []string{"Unit u.service of config.20-b (b.hcl:5,3) replaces the one of config.10-a (a.hcl:3,3) in pool infra, worker",
		"now needs reboot (no on_change), not restart:u.service"} {
		if !strings.Contains(diags[0].Detail, w) {
			t.Errorf("warning %q does not say %q", diags[0].Detail, w)
		}
	}
	prov := out["worker"].Provenance
	f := prov.Files["/etc/f"]
	if f.By.String() != "config.30-c at c.hcl:1,3 (butane storage.files.0)" || len(f.Overrode) != 2 ||
		f.Overrode[0].Block != "config.10-a" || f.Overrode[1].Block != "config.20-b" {
		t.Errorf("provenance of /etc/f: %+v", f)
	}
	if k := prov.KernelArgs["k"].By; k.Block != "pool.worker" || k.File != "main.hcl" {
		t.Errorf("k is the pool's, first: %+v", k)
	}
	if j := prov.KernelArgs["j"].By; j.Block != "config.30-c" {
		t.Errorf("j: %+v", j)
	}
	if out["worker"].Name == "" || out["infra"].Provenance.Files["/etc/f"].By.Block != "config.20-b" {
		t.Errorf("infra's /etc/f: %+v", out["infra"].Provenance)
	}
}

// A directory or link is an entry as a file is: a later one that changes the on_change of
// an earlier one of its kind warns as a file's would; one that replaces an entry of
// another kind at the path warns of nothing (its policy was never the earlier one's).
func TestOverridesOfDirectoriesAndLinks(t *testing.T) {
	none := []model.Policy{{Kind: model.PolicyNone}}
	d := &model.Desired{Dir: "/cfg", Pools: []model.Pool{{Name: "worker"}},
		Configs: []model.Config{
			{Name: "10-a", Pools: []string{"worker"},
				Directories: []model.Directory{{Entry: model.Entry{Path: "/etc/d", OnChange: none, DeclRange: at("/cfg/a.hcl", 3)}, Mode: 0o755}},
				Links:       []model.Link{{Entry: model.Entry{Path: "/etc/l", OnChange: none, DeclRange: at("/cfg/a.hcl", 5)}, Target: "x"}},
				Files:       []model.File{{Entry: model.Entry{Path: "/etc/f", OnChange: none, DeclRange: at("/cfg/a.hcl", 7)}, Contents: []byte("a")}}},
			{Name: "20-b", Pools: []string{"worker"},
				Directories: []model.Directory{{Entry: model.Entry{Path: "/etc/d", DeclRange: at("/cfg/b.hcl", 3)}, Mode: 0o700},
					{Entry: model.Entry{Path: "/etc/f", DeclRange: at("/cfg/b.hcl", 7)}, Mode: 0o755}},
				Links: []model.Link{{Entry: model.Entry{Path: "/etc/l", DeclRange: at("/cfg/b.hcl", 5)}, Target: "y"}}},
		},
	}
	_, diags := Render(d, ignition.Renderer{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var got []string
	for _, dg := range diags {
		got = append(got, dg.Summary)
	}
	want := []string{"Override changes the disruption policy of directory /etc/d", "Override changes the disruption policy of link /etc/l"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(diags) == 2 && !strings.Contains(diags[0].Detail, "Directory /etc/d of config.20-b (b.hcl:3,3) replaces the one of config.10-a (a.hcl:3,3)") {
		t.Errorf("warning: %s", diags[0].Detail)
	}
}
