package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/providers/local"
)

var quickstartWorkers = []string{"worker-0", "worker-1", "worker-2", "worker-3"}

// paused = "disruptive" with a move that mixes both kinds: a certificate (on_change none)
// beside a kernel argument and a file to drain for. The certificate lands on every worker
// now — each moves to an interim config (its own with the certificate), none cordoned,
// drained or rebooted — and the rest waits (apply exits 2). Unpaused, the next apply
// moves them from the interim to the target by the rest alone: the kernel argument with a
// reboot; then nothing is left to plan. The paused apply is of a saved plan.
func TestPausedDisruptiveInterimOnLocalFleet(t *testing.T) {
	dir := quickstart(t)
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("first apply exit %d\n%s%s", code, out, errOut)
	}
	setWorkerPool(t, dir, "  max_unavailable = 2\n  paused = \"disruptive\"")
	writeFile(t, filepath.Join(dir, "cert.hcl"), []byte("config \"80-cert\" {\n  pools = [\"worker\"]\n  file \"/etc/pki/mcp-ca.pem\" {\n    content = \"CA 2\\n\"\n    on_change = [\"none\"]\n  }\n}\n"), 0o644)
	writeFile(t, filepath.Join(dir, "kernel.hcl"), []byte("config \"81-kernel\" {\n  pools = [\"worker\"]\n  kernel_args = [\"nosmt\"]\n  file \"/etc/sysctl.d/90-mcp.conf\" {\n    content = \"vm.swappiness = 10\\n\"\n    on_change = [\"drain\"]\n  }\n}\n"), 0o644)
	code, out, errOut := mcp(t, dir, "plan", "-no-color")
	if code != 0 || !strings.Contains(out, "on an interim config now (what disrupts nothing; the rest waits): worker-") ||
		!strings.Contains(out, "interim: rendered-worker-") {
		t.Fatalf("plan exit %d, want the interim said:\n%s%s", code, out, errOut)
	}
	checkInterimJSON(t, dir)
	before := time.Now()
	// A saved plan carries the interim, and apply takes it as it derives it again.
	if code, out, errOut := mcp(t, dir, "plan", "-no-color", "-out="+filepath.Join(dir, "p")); code != 0 {
		t.Fatalf("plan -out exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = mcp(t, dir, "apply", "-no-color", filepath.Join(dir, "p"))
	if code != 2 {
		t.Fatalf("apply while paused exit %d, want 2 (the rest waits)\n%s%s", code, out, errOut)
	}
	st := readState(t, dir)
	interim := nodeField(t, dir, "worker-0", "current_config")
	if st.Rendered[interim] == nil || interim == st.Pointers["worker"] {
		t.Fatalf("worker-0 runs %s: want an interim config the state stores (pointer %s)", interim, st.Pointers["worker"])
	}
	logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range quickstartWorkers {
		root := filepath.Join(dir, "fleet/nodes", n, "root")
		if b, err := os.ReadFile(filepath.Join(root, "etc/pki/mcp-ca.pem")); err != nil || string(b) != "CA 2\n" {
			t.Errorf("%s: the certificate did not land: %q %v", n, b, err)
		}
		if _, err := os.Stat(filepath.Join(root, "etc/sysctl.d/90-mcp.conf")); err == nil {
			t.Errorf("%s: the file to drain for landed while paused", n)
		}
		if got := nodeField(t, dir, n, "current_config"); got != interim {
			t.Errorf("%s runs %s, want the interim %s", n, got, interim)
		}
		if slices.Contains(nodeArgs(t, dir, n), "nosmt") {
			t.Errorf("%s: the kernel argument was applied while paused", n)
		}
		noDisruption(t, n, logs[n], before)
	}
	checkInterimKept(t, dir, interim)
	// Still paused: the rest waits, nothing more passes.
	if code, out, errOut := mcp(t, dir, "plan", "-no-color"); code != 0 || strings.Contains(out, "interim:") || !strings.Contains(out, "4 nodes wait") {
		t.Errorf("plan on the interim exit %d, want the rest waiting whole:\n%s%s", code, out, errOut)
	}

	onInterim := snapshot(t, dir)
	setWorkerPool(t, dir, "  max_unavailable = 2")
	unpaused := time.Now()
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply unpaused exit %d\n%s%s", code, out, errOut)
	}
	st, done := readState(t, dir), snapshot(t, dir)
	if logs, err = local.ReadEvents(filepath.Join(dir, "fleet")); err != nil {
		t.Fatal(err)
	}
	for _, n := range quickstartWorkers {
		root := filepath.Join(dir, "fleet/nodes", n, "root")
		if b, err := os.ReadFile(filepath.Join(root, "etc/sysctl.d/90-mcp.conf")); err != nil || string(b) != "vm.swappiness = 10\n" {
			t.Errorf("%s: the held file did not land: %q %v", n, b, err)
		}
		if got := nodeField(t, dir, n, "current_config"); got != st.Pointers["worker"] || got == interim {
			t.Errorf("%s runs %s, want the target %s", n, got, st.Pointers["worker"])
		}
		if cert := "/etc/pki/mcp-ca.pem"; onInterim[n].files[cert] == "" || done[n].files[cert] != onInterim[n].files[cert] {
			t.Errorf("%s: the certificate was written again on the way from the interim", n)
		}
		if !slices.Contains(nodeArgs(t, dir, n), "nosmt") {
			t.Errorf("%s: the kernel argument was not applied: %v", n, nodeArgs(t, dir, n))
		}
		if !slices.ContainsFunc(logs[n], func(e local.Event) bool { return e.Time.After(unpaused) && e.Kind == local.EventReboot }) {
			t.Errorf("%s: no reboot for the kernel argument", n)
		}
	}
	if code, out, errOut := mcp(t, dir, "plan", "-no-color", "-detailed-exitcode"); code != 0 {
		t.Errorf("plan after the rollout exit %d, want 0 (nothing left)\n%s%s", code, out, errOut)
	}
}

// nodeArgs is the kernel arguments node.json says node runs.
func nodeArgs(t *testing.T, dir, node string) []string {
	t.Helper()
	var m struct {
		KernelArgs []string `json:"kernel_args"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "fleet/nodes", node, "node.json"))
	if err != nil || json.Unmarshal(b, &m) != nil {
		t.Fatalf("node.json of %s: %v", node, err)
	}
	return m.KernelArgs
}

// noDisruption fails t for each cordon, drain or reboot in node's events since.
func noDisruption(t *testing.T, node string, events []local.Event, since time.Time) {
	t.Helper()
	for _, e := range events {
		if e.Time.After(since) && (e.Kind == local.EventCordon || e.Kind == local.EventReboot || e.Kind == local.EventDrain) {
			t.Errorf("%s: %s at %s while the pool is paused for disruptive changes", node, e.Kind, e.Time)
		}
	}
}

// checkInterimJSON checks that the plan JSON says each worker's interim move and the
// pool's pause which nodes it splits.
func checkInterimJSON(t *testing.T, dir string) {
	t.Helper()
	code, out, errOut := mcp(t, dir, "plan", "-json")
	var p struct {
		ResourceChanges []struct {
			Name   string `json:"name"`
			Change struct {
				After struct {
					RenderedConfig string `json:"rendered_config"`
				} `json:"after"`
			} `json:"change"`
			MCP *struct {
				Interim *struct {
					Target  string            `json:"target"`
					Waiting []json.RawMessage `json:"waiting"`
				} `json:"interim"`
			} `json:"mcp"`
		} `json:"resource_changes"`
		MCP struct {
			Pools []struct {
				Name     string `json:"name"`
				Rendered string `json:"rendered"`
				Pause    *struct {
					Interim []string `json:"interim"`
				} `json:"pause"`
			} `json:"pools"`
		} `json:"mcp"`
	}
	if err := json.Unmarshal([]byte(out), &p); code != 0 || err != nil {
		t.Fatalf("plan -json exit %d: %v\n%s%s", code, err, out, errOut)
	}
	target := ""
	for _, pp := range p.MCP.Pools {
		if pp.Name == "worker" {
			if target = pp.Rendered; pp.Pause == nil || len(pp.Pause.Interim) != len(quickstartWorkers) {
				t.Errorf("worker's pause in the plan JSON: %+v", pp.Pause)
			}
		}
	}
	seen := 0
	for _, rc := range p.ResourceChanges {
		if !slices.Contains(quickstartWorkers, rc.Name) {
			continue
		}
		seen++
		if rc.MCP == nil || rc.MCP.Interim == nil || rc.MCP.Interim.Target != target || len(rc.MCP.Interim.Waiting) == 0 ||
			rc.Change.After.RenderedConfig == target {
			t.Errorf("%s in the plan JSON: after %s, mcp %+v: want an interim move to %s", rc.Name, rc.Change.After.RenderedConfig, rc.MCP, target)
		}
	}
	if seen != len(quickstartWorkers) {
		t.Errorf("the plan JSON lists %d of the workers", seen)
	}
}

// checkInterimKept checks, while the workers run interim, that they show no drift from it,
// prune keeps it, and status counts no worker updated (they do not run the pool's config)
// with nothing more to split.
func checkInterimKept(t *testing.T, dir, interim string) {
	t.Helper()
	// The workers' agents check their disk against the interim: no drift.
	if code, out, errOut := mcp(t, dir, "drift", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Errorf("drift on the interim exit %d, want 0 (none)\n%s%s", code, out, errOut)
	}
	// Prune keeps the interim while nodes run it.
	if code, out, errOut := mcp(t, dir, "prune", "-dry-run", "-no-color"); code != 0 || !slices.ContainsFunc(strings.Split(out, "\n"), func(l string) bool {
		return strings.Contains(l, interim) && strings.Contains(l, "running on node worker-")
	}) {
		t.Errorf("prune -dry-run exit %d, want the interim kept as running on the workers:\n%s%s", code, out, errOut)
	}
	// Status counts no worker updated: each runs the interim, not the pool's config.
	code, out, errOut := mcp(t, dir, "status", "-o", "json")
	var status struct {
		Pools []struct {
			Name    string `json:"name"`
			Updated int    `json:"updated"`
			Pause   *struct {
				Interim []string `json:"interim"`
			} `json:"pause"`
		} `json:"pools"`
	}
	if err := json.Unmarshal([]byte(out), &status); code != 0 || err != nil {
		t.Fatalf("status -o json exit %d: %v\n%s%s", code, err, out, errOut)
	}
	for _, p := range status.Pools {
		if p.Name == "worker" && (p.Updated != 0 || p.Pause == nil || len(p.Pause.Interim) != 0) {
			t.Errorf("worker in status: %d updated, pause %+v: want none updated, nothing more to split", p.Updated, p.Pause)
		}
	}
}
