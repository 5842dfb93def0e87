package views

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// Directories, links and a config's first-boot part show in the human plan, in plan JSON
// (as mcp_directory, mcp_link and mcp_first_boot resources) and in Markdown; a pool's
// warning that first boot cannot reach running nodes shows in the human plan and JSON.
func TestPlanShowsDirectoriesLinksAndFirstBoot(t *testing.T) {
	old := &model.Rendered{Name: "rendered-worker-1", Pool: "worker",
		Directories: []model.Directory{{Entry: model.Entry{Path: "/etc/d"}, Mode: 0o755}},
		Links:       []model.Link{{Entry: model.Entry{Path: "/etc/localtime"}, Target: "../usr/share/zoneinfo/UTC"}},
		FirstBoot:   []byte(`{"passwd":{"users":[{"name":"alice"}]}}`)}
	new := &model.Rendered{Name: "rendered-worker-2", Pool: "worker",
		Directories: []model.Directory{{Entry: model.Entry{Path: "/etc/d", User: "core", Group: "core"}, Mode: 0o750}, {Entry: model.Entry{Path: "/var/lib/x"}, Mode: 0o1777}},
		Links:       []model.Link{{Entry: model.Entry{Path: "/etc/localtime"}, Target: "../usr/share/zoneinfo/Europe/Paris"}},
		FirstBoot:   []byte(`{"passwd":{"users":[{"name":"bob"}]}}`)}
	warn := "the first-boot part of the config (…) changes: machines that boot from now on get it, but it cannot reach the 1 node running"
	p := &planner.Rollout{
		Pools: []planner.PoolPlan{{Name: "worker", Rendered: new.Name, Previous: old.Name, ReRendered: true, Size: 1, MaxUnavailable: 1, Slots: 1, Waves: 1,
			Warnings: []string{warn},
			Changes:  []planner.Change{{From: old.Name, To: new.Name, Nodes: []string{"worker-0"}, Items: planner.ItemChanges(old, new)}}}},
		Nodes: []planner.NodePlan{{Name: "worker-0", Pool: "worker", Action: planner.NodeUpdate, From: old.Name, To: new.Name, Wave: 1,
			Steps: []model.Step{{Kind: model.StepWrite, Target: "/etc/d", Reason: "directory /etc/d changed (mode 0755 → 0750, owner)"}}}},
	}
	var out bytes.Buffer
	if err := HumanPlan(&out, p, HumanOptions{}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"    ~ directory /etc/d (mode 0755 → 0750, owner root:root → core:core)\n",
		"    + directory /var/lib/x (mode 1777)\n",
		"    ~ link /etc/localtime → ../usr/share/zoneinfo/Europe/Paris (was → ../usr/share/zoneinfo/UTC)\n",
		"    ~ first boot only (",
		`-        "name": "alice"`, `+        "name": "bob"`,
		"  warning: " + warn,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("human plan lacks %q:\n%s", want, s)
		}
	}
	b, err := JSONPlan(p, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		ResourceChanges []struct {
			Address, Type string
			Change        struct{ After map[string]any }
		} `json:"resource_changes"`
		MCP struct{ Pools []struct{ Warnings []string } }
	}
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]any{}
	for _, rc := range j.ResourceChanges {
		got[rc.Type+" "+rc.Address] = rc.Change.After
	}
	if a := got[`mcp_directory directory.worker["/var/lib/x"]`]; a == nil || a["mode"] != "1777" {
		t.Errorf("directory resource: %v", got)
	}
	if a := got[`mcp_link link.worker["/etc/localtime"]`]; a == nil || a["target"] != "../usr/share/zoneinfo/Europe/Paris" || a["hard"] != false {
		t.Errorf("link resource: %v", got)
	}
	if a := got[`mcp_first_boot first_boot.worker`]; a == nil || !strings.Contains(a["content"].(string), `"bob"`) {
		t.Errorf("first-boot resource: %v", got)
	}
	if len(j.MCP.Pools) != 1 || len(j.MCP.Pools[0].Warnings) != 1 {
		t.Errorf("pool warnings in JSON: %+v", j.MCP.Pools)
	}
	var md bytes.Buffer
	for _, it := range p.Pools[0].Changes[0].Items {
		md.WriteString(mdItem(p.Pools[0].Changes[0], it))
	}
	if m := md.String(); !strings.Contains(m, "`~ link /etc/localtime → ../usr/share/zoneinfo/Europe/Paris") || !strings.Contains(m, "first boot only") {
		t.Errorf("markdown:\n%s", m)
	}
	if sum := mdChangeSummary(p.Pools[0].Changes[0], p.Pools[0]); !strings.Contains(sum, "2 directories, 1 link, first boot only") {
		t.Errorf("markdown summary: %s", sum)
	}
}
