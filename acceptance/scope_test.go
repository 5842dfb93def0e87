package acceptance

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/providers/local"
)

// scopeFleet makes a local fleet of four workers (zone a, worker-0 oldest) with a
// configuration whose change reboots every node, max_unavailable 2; workloads adds a web
// pod on each worker and demo/web-pdb allowing one disruption.
func scopeFleet(t *testing.T, workloads bool) (dir, mcp string) {
	t.Helper()
	dir, mcp = t.TempDir(), mcpBinary(t)
	args := []string{"-chdir=" + dir, "fleet", "init", "fleet", "-nodes", "worker=4", "-zones", "a"}
	if workloads {
		args = append(args, "-workloads")
	}
	runMCP(t, mcp, args...)
	hcl := `provider "local" {
  fleet           = "./fleet"
  reboot_duration = "100ms"
}

pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = 2
}

config "50-x" {
  pools = ["worker"]
  file "/etc/x.conf" { content = "x\n" }
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, mcp
}

// runMCP runs mcp and fails the test unless it succeeds; it returns the output.
func runMCP(t *testing.T, mcp string, args ...string) string {
	t.Helper()
	out, err := exec.Command(mcp, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("mcp %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// jsonPlanNodes reads mcp plan -json's nodes: address → its mcp detail.
func jsonPlanNodes(t *testing.T, out string) map[string]jsonNode {
	t.Helper()
	var doc struct {
		ResourceChanges []struct {
			Name string    `json:"name"`
			Type string    `json:"type"`
			MCP  *jsonNode `json:"mcp"`
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("plan JSON: %v\n%s", err, out)
	}
	nodes := map[string]jsonNode{}
	for _, rc := range doc.ResourceChanges {
		if rc.Type == "mcp_node" {
			nodes[rc.Name] = *rc.MCP
		}
	}
	return nodes
}

type jsonNode struct {
	Steps      []model.Step      `json:"steps"`
	Wave       int               `json:"wave"`
	Held       string            `json:"held"`
	Untargeted bool              `json:"untargeted"`
	Blockers   []planner.Blocker `json:"blockers"`
}

// appliedSteps reads mcp apply -json's progress: each node's steps done, in order, and
// whether a diagnostic with the summary was printed.
func appliedSteps(t *testing.T, out string) (map[string][]string, []string) {
	t.Helper()
	steps := map[string][]string{}
	var diags []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var ev struct {
			Type       string      `json:"type"`
			Node       string      `json:"node"`
			Event      string      `json:"event"`
			Step       *model.Step `json:"step"`
			Diagnostic struct {
				Summary string `json:"summary"`
			} `json:"diagnostic"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("apply -json line %q: %v", sc.Text(), err)
		}
		switch {
		case ev.Type == "apply_progress" && ev.Event == "done" && ev.Step != nil:
			steps[ev.Node] = append(steps[ev.Node], ev.Step.Key())
		case ev.Type == "diagnostic":
			diags = append(diags, ev.Diagnostic.Summary)
		}
	}
	return steps, diags
}

func planSteps(nodes map[string]jsonNode) map[string][]string {
	out := map[string][]string{}
	for name, n := range nodes {
		for _, s := range n.Steps {
			out[name] = append(out[name], s.Key())
		}
	}
	return out
}

func eventKinds(evs []local.Event) []local.EventKind {
	var out []local.EventKind
	for _, e := range evs {
		out = append(out, e.Kind)
	}
	return out
}

// A node held by its label, and one excluded with -exclude, are never touched, and the plan
// says so; -target=node.X then touches only X, from a saved plan that records the target.
func TestHeldNodesUntouchedAndTargetTouchesOnlyIt(t *testing.T) {
	exclusive(t)
	dir, mcp := scopeFleet(t, false)
	fleet := filepath.Join(dir, "fleet")
	runMCP(t, mcp, "fleet", "set", "-fleet", fleet, "worker-1", "label.mcpfleet.io/hold=kernel-debug")

	text := runMCP(t, mcp, "-chdir="+dir, "plan", "-no-color", "-exclude=node.worker-3")
	for _, want := range []string{"held: node.worker-1: kernel-debug (mcpfleet.io/hold); no steps",
		"held: node.worker-3: excluded with -exclude; no steps", "2 held."} {
		if !strings.Contains(text, want) {
			t.Errorf("plan does not say %q:\n%s", want, text)
		}
	}
	nodes := jsonPlanNodes(t, runMCP(t, mcp, "-chdir="+dir, "plan", "-json", "-exclude=node.worker-3"))
	if n := nodes["worker-1"]; n.Held != "kernel-debug (mcpfleet.io/hold)" || len(n.Steps) != 0 {
		t.Errorf("worker-1 in the plan JSON: %+v", n)
	}
	out := runMCP(t, mcp, "-chdir="+dir, "apply", "-auto-approve", "-json", "-exclude=node.worker-3")
	assertAppliedAsPlanned(t, fleet, nil, nodes, out)
	logs, err := local.ReadEvents(fleet)
	if err != nil {
		t.Fatal(err)
	}
	for _, held := range []string{"worker-1", "worker-3"} {
		if len(logs[held]) > 0 {
			t.Errorf("held node %s was touched: %v", held, eventKinds(logs[held]))
		}
		if _, err := os.Stat(filepath.Join(fleet, "nodes", held, "root/etc/x.conf")); !os.IsNotExist(err) {
			t.Errorf("held node %s got /etc/x.conf (%v)", held, err)
		}
	}
	if len(logs["worker-0"]) == 0 || len(logs["worker-2"]) == 0 {
		t.Fatalf("worker-0 and worker-2 were not updated: %v", logs)
	}
	before := map[string]int{}
	for n, evs := range logs {
		before[n] = len(evs)
	}

	// Unknown targets are errors naming them; -target beside a saved plan is refused.
	bad, err := exec.Command(mcp, "-chdir="+dir, "plan", "-target=node.nope").CombinedOutput()
	if err == nil || !strings.Contains(string(bad), `-target=node.nope: no pool of the configuration selects a node "nope"`) {
		t.Errorf("plan -target=node.nope: %v\n%s", err, bad)
	}
	text = runMCP(t, mcp, "-chdir="+dir, "plan", "-no-color", "-target=node.worker-3", "-out=t.plan")
	if !strings.Contains(text, "Warning: Resource targeting is in effect") || !strings.Contains(text, "The -target option is not for routine use") {
		t.Errorf("plan -target gives no warning:\n%s", text)
	}
	if bad, err := exec.Command(mcp, "-chdir="+dir, "apply", "-target=node.worker-3", "t.plan").CombinedOutput(); err == nil ||
		!strings.Contains(string(bad), "-target and -exclude cannot be given with a saved plan") {
		t.Errorf("apply -target PLANFILE: %v\n%s", err, bad)
	}
	nodes = jsonPlanNodes(t, runMCP(t, mcp, "-chdir="+dir, "show", "-json", "t.plan"))
	if !nodes["worker-0"].Untargeted || len(nodes["worker-3"].Steps) == 0 || nodes["worker-1"].Held == "" {
		t.Errorf("saved targeted plan: %+v", nodes)
	}
	out = runMCP(t, mcp, "-chdir="+dir, "apply", "-json", "t.plan")
	assertAppliedAsPlanned(t, fleet, before, nodes, out)
	_, diags := appliedSteps(t, out)
	if !slices.Contains(diags, "Applied changes may be incomplete") {
		t.Errorf("apply of a targeted plan gives no warning: %q", diags)
	}
	if logs, err = local.ReadEvents(fleet); err != nil {
		t.Fatal(err)
	}
	for n, evs := range logs {
		if n != "worker-3" && len(evs) != before[n] {
			t.Errorf("-target=node.worker-3 touched %s: %v", n, eventKinds(evs[before[n]:]))
		}
	}
	if !slices.Contains(eventKinds(logs["worker-3"]), local.EventUncordon) {
		t.Errorf("worker-3 was not updated: %v", eventKinds(logs["worker-3"]))
	}
}

// Four workers with a web pod each, max_unavailable 2, and demo/web-pdb allowing one
// disruption: the plan predicts that the drains go one at a time (worker-1 waits for
// worker-0's pods to come back, and so on), and the fleet's event log shows exactly that:
// each later drain after the earlier node's uncordon. The executed steps equal the plan.
func TestPDBSerialisationAcrossAWaveIsPredictedAndObserved(t *testing.T) {
	exclusive(t)
	dir, mcp := scopeFleet(t, true)
	fleet := filepath.Join(dir, "fleet")
	text := runMCP(t, mcp, "-chdir="+dir, "plan", "-no-color")
	if !strings.Contains(text, "waits: drain waits for PodDisruptionBudget demo/web-pdb") || !strings.Contains(text, "3 waiting on a PodDisruptionBudget") {
		t.Errorf("plan does not predict the PDB's serialisation:\n%s", text)
	}
	runMCP(t, mcp, "-chdir="+dir, "plan", "-out=p.plan")
	nodes := jsonPlanNodes(t, runMCP(t, mcp, "-chdir="+dir, "show", "-json", "p.plan"))
	order := []string{"worker-0", "worker-1", "worker-2", "worker-3"}
	for i, name := range order {
		n := nodes[name]
		var after []string
		for _, b := range n.Blockers {
			if b.Kind == planner.BlockPDBWait && b.PDB == "demo/web-pdb" {
				after = b.After
			}
		}
		if i == 0 && after != nil || i > 0 && !slices.Equal(after, []string{order[i-1]}) {
			t.Errorf("%s waits after %v, want %v", name, after, order[max(i-1, 0):i])
		}
	}
	if w := []int{nodes["worker-0"].Wave, nodes["worker-1"].Wave, nodes["worker-2"].Wave, nodes["worker-3"].Wave}; !slices.Equal(w, []int{1, 1, 2, 3}) {
		t.Errorf("waves %v, want [1 1 2 3]", w)
	}
	out := runMCP(t, mcp, "-chdir="+dir, "apply", "-json", "-drain-retry-delay=20ms", "p.plan")
	assertAppliedAsPlanned(t, fleet, nil, nodes, out)
	logs, err := local.ReadEvents(fleet)
	if err != nil {
		t.Fatal(err)
	}
	at := func(node string, k local.EventKind) time.Time {
		for _, e := range logs[node] {
			if e.Kind == k {
				return e.Time
			}
		}
		t.Fatalf("%s has no %s event: %v", node, k, eventKinds(logs[node]))
		return time.Time{}
	}
	for i := 1; i < len(order); i++ {
		earlier, later := order[i-1], order[i]
		if up, drain := at(earlier, local.EventUncordon), at(later, local.EventDrain); !drain.After(up) {
			t.Errorf("%s drained at %s, before %s was uncordoned at %s: the PDB allows one disruption",
				later, drain.Format(time.StampMicro), earlier, up.Format(time.StampMicro))
		}
	}
	// It is the PDB that serialised them, not the budget: worker-1 was cordoned while
	// worker-0 was still out, as the plan's waves say.
	if c1, up0 := at("worker-1", local.EventCordon), at("worker-0", local.EventUncordon); !c1.Before(up0) {
		t.Errorf("worker-1 cordoned at %s, after worker-0's uncordon at %s: wave 1 did not start together", c1.Format(time.StampMicro), up0.Format(time.StampMicro))
	}
}
