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
