package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A config for chosen nodes (by name, and by node labels) reaches them alone: each chosen
// node's root gets its file, the other nodes' roots are untouched by it, every node
// converges (a second plan has nothing to do), and the pool's budget holds across its
// variants (max_unavailable 1: never two nodes of it cordoned at once). Judged from the
// nodes' roots and event logs.
func TestConfigForChosenNodes(t *testing.T) {
	dir := smallFleet(t, "worker=4", `
config "60-w1" {
  pools = ["worker"]
  nodes = ["worker-1"]
  file "/etc/static-ip.conf" { content = "10.0.0.11\n" }
}

config "61-gpu" {
  pools         = ["worker"]
  node_selector = { "example.com/gpu" = "true" }
  file "/etc/gpu.conf" { content = "gpu\n" }
}

config "62-typo" {
  pools = ["worker"]
  nodes = ["wroker-2"]
  file "/etc/typo.conf" { content = "t\n" }
}
`)
	mcp(t, dir, "fleet", "set", "worker-2", "label.example.com/gpu=true")
	code, plan, errOut := mcp(t, dir, "plan", "-no-color")
	if code != 0 {
		t.Fatalf("plan: exit %d\n%s%s", code, plan, errOut)
	}
	for _, want := range []string{`config 62-typo names node "wroker-2"`, "(+ 60-w1): node worker-1", "(+ 61-gpu): node worker-2"} {
		if !strings.Contains(plan, want) {
			t.Errorf("plan lacks %q:\n%s", want, plan)
		}
	}
	// Diffs once: the pool's move (worker-0, worker-3) shows x.conf; each variant's move its own file too.
	if strings.Count(plan, "/etc/static-ip.conf") < 1 || strings.Count(plan, "/etc/gpu.conf") < 1 {
		t.Errorf("plan does not show the variants' files:\n%s", plan)
	}
	checkChosenPlanJSON(t, dir)
	if code, out := applyAudited(t, dir); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	for node, want := range map[string][2]string{
		"worker-0": {"", ""}, "worker-1": {"10.0.0.11\n", ""}, "worker-2": {"", "gpu\n"}, "worker-3": {"", ""}} {
		if got := rootFile(dir, node, "etc/static-ip.conf"); got != want[0] {
			t.Errorf("%s: /etc/static-ip.conf %q, want %q", node, got, want[0])
		}
		if got := rootFile(dir, node, "etc/gpu.conf"); got != want[1] {
			t.Errorf("%s: /etc/gpu.conf %q, want %q", node, got, want[1])
		}
		if got := rootFile(dir, node, "etc/x.conf"); got != "x\n" {
			t.Errorf("%s: /etc/x.conf %q, want the pool's", node, got)
		}
		if got := rootFile(dir, node, "etc/typo.conf"); got != "" {
			t.Errorf("%s: got the typo'd config's file", node)
		}
	}
	if n1, n0 := readNode(t, dir, "worker-1"), readNode(t, dir, "worker-0"); n1.CurrentConfig == n0.CurrentConfig {
		t.Errorf("worker-1 runs the pool's config %s, not its own variant", n1.CurrentConfig)
	}
	if r := judge(t, dir, map[string]int{"worker": 1}); !r.OK() || r.MaxOut["worker"] != 1 {
		t.Errorf("budget across the pool's variants:\n%s", r)
	}
	if code, out, _ := mcp(t, dir, "plan", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Errorf("plan after apply: exit %d (want 0: converged)\n%s", code, out)
	}
	// Status counts variant nodes updated: each runs the config its pointers give it.
	_, st, _ := mcp(t, dir, "status", "-o", "json")
	var s struct {
		Pools []struct{ Machines, Updated int } `json:"pools"`
		Nodes []struct {
			Name          string `json:"name"`
			CurrentConfig string `json:"current_config"`
			TargetConfig  string `json:"target_config"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(st), &s); err != nil || len(s.Pools) != 1 || s.Pools[0].Updated != 4 {
		t.Fatalf("status: %v (want 4 of 4 updated)\n%s", err, st)
	}
	for _, n := range s.Nodes {
		if n.TargetConfig != n.CurrentConfig {
			t.Errorf("status: %s runs %s, its target is %s", n.Name, n.CurrentConfig, n.TargetConfig)
		}
	}
}

// checkChosenPlanJSON: the plan JSON gives each chosen node its variant (after), lists
// the pool's variants with their nodes, and names every item resource once.
func checkChosenPlanJSON(t *testing.T, dir string) {
	t.Helper()
	_, out, _ := mcp(t, dir, "plan", "-json")
	var doc struct {
		ResourceChanges []struct {
			Address string `json:"address"`
			Change  struct {
				After struct {
					Rendered string `json:"rendered_config"`
				} `json:"after"`
			} `json:"change"`
		} `json:"resource_changes"`
		MCP struct {
			Pools []struct {
				Rendered string `json:"rendered"`
				Variants []struct {
					Rendered string   `json:"rendered"`
					Configs  []string `json:"configs"`
					Nodes    []string `json:"nodes"`
				} `json:"variants"`
			} `json:"pools"`
		} `json:"mcp"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.MCP.Pools) != 1 || len(doc.MCP.Pools[0].Variants) != 2 {
		t.Fatalf("plan -json: %v\n%s", err, out)
	}
	pool := doc.MCP.Pools[0]
	want := map[string]string{"node.worker-0": pool.Rendered, "node.worker-3": pool.Rendered, "pool.worker": pool.Rendered}
	for _, v := range pool.Variants {
		for _, n := range v.Nodes {
			want["node."+n] = v.Rendered
		}
	}
	if want["node.worker-1"] == pool.Rendered || want["node.worker-2"] == pool.Rendered {
		t.Errorf("variants: %+v", pool.Variants)
	}
	seen := map[string]bool{}
	for _, rc := range doc.ResourceChanges {
		if seen[rc.Address] {
			t.Errorf("resource %s twice", rc.Address)
		}
		seen[rc.Address] = true
		if w, ok := want[rc.Address]; ok && rc.Change.After.Rendered != w {
			t.Errorf("%s: after %s, want %s", rc.Address, rc.Change.After.Rendered, w)
		}
	}
}

// A machine block's machine boots its own config: `mcp fleet add` of a node named as the
// machine boots it from the served config its selectors get (built from the state as mcp
// serve builds it), another new node the pool's; both then need nothing.
// Judged from the new nodes' roots.
func TestFleetAddBootsTheMachinesOwnConfig(t *testing.T) {
	dir := smallFleet(t, "worker=1", `
config "60-m9" {
  pools = ["worker"]
  nodes = ["worker-9"]
  file "/etc/m9.conf" { content = "m9\n" }
}

machine "worker-9" {
  pool = "worker"
  mac  = ["52:54:00:00:00:09"]
}
`)
	if code, out := applyAudited(t, dir); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	for _, node := range []string{"worker-9", "worker-8"} {
		if code, out, errOut := mcp(t, dir, "fleet", "add", node, "-pool", "worker"); code != 0 {
			t.Fatalf("fleet add %s: exit %d\n%s%s", node, code, out, errOut)
		}
	}
	if got := rootFile(dir, "worker-9", "etc/m9.conf"); got != "m9\n" {
		t.Errorf("the machine booted without its own file: %q", got)
	}
	if got, pool := rootFile(dir, "worker-8", "etc/m9.conf"), rootFile(dir, "worker-8", "etc/x.conf"); got != "" || pool != "x\n" {
		t.Errorf("another new node: m9.conf %q (want none), x.conf %q (want the pool's)", got, pool)
	}
	if code, out, _ := mcp(t, dir, "plan", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Errorf("plan after the machines booted: exit %d (want 0)\n%s", code, out)
	}
}

// A machine block added (or changed) after the pool was applied is a change of its own,
// though no node changes: plan exits 2 and says where the machine will boot, apply
// records it (the boot server's pointer for it), and the next plan is empty.
func TestMachineBlockAloneIsAChange(t *testing.T) {
	dir := smallFleet(t, "worker=1", "")
	if code, out := applyAudited(t, dir); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	f, _ := os.OpenFile(filepath.Join(dir, "main.hcl"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("\nmachine \"worker-9\" {\n  pool = \"worker\"\n  mac  = [\"52:54:00:00:00:09\"]\n}\n")
	f.Close()
	code, plan, _ := mcp(t, dir, "plan", "-detailed-exitcode", "-no-color")
	if code != 2 || !strings.Contains(plan, "boot: machine worker-9 boots rendered-worker-") {
		t.Fatalf("plan with a new machine block: exit %d (want 2)\n%s", code, plan)
	}
	if code, out := applyAudited(t, dir); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "mcp.state"))
	if !strings.Contains(string(b), `"worker-9": {`) || !strings.Contains(string(b), "52:54:00:00:00:09") {
		t.Errorf("the state has no pointer for the machine:\n%s", b)
	}
	if code, out, _ := mcp(t, dir, "plan", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Errorf("plan after: exit %d\n%s", code, out)
	}
}

// mcp pointer -machine puts the machine block's selectors in the config URL; a machine the
// pool does not declare is refused.
func TestPointerForAMachine(t *testing.T) {
	dir := smallFleet(t, "worker=1", `
machine "worker-9" {
  pool     = "worker"
  mac      = ["52-54-00-00-00-09"]
  hostname = "worker-9.example.com"
}
`)
	code, out, errOut := mcp(t, dir, "pointer", "worker", "-url", "http://boot:8080", "-machine", "worker-9")
	if code != 0 || !strings.Contains(out, `"source": "http://boot:8080/config/worker?hostname=worker-9.example.com\u0026mac=52%3A54%3A00%3A00%3A00%3A09"`) {
		t.Errorf("pointer -machine: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := mcp(t, dir, "pointer", "worker", "-url", "http://boot:8080", "-machine", "worker-8"); code != 1 ||
		!strings.Contains(errOut, `no machine block "worker-8" of pool worker`) {
		t.Errorf("pointer -machine of no machine: exit %d %s", code, errOut)
	}
}
