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
	"github.com/mcpfleet/mcp/testkit/chaos"
)

// setPool rewrites the quickstart's worker pool block with body.
func setWorkerPool(t *testing.T, dir, body string) {
	t.Helper()
	p := filepath.Join(dir, "main.hcl")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	start := strings.Index(s, "pool \"worker\" {")
	end := strings.Index(s, "pool \"infra\" {")
	s = s[:start] + "pool \"worker\" {\n  node_selector = { \"node-role.kubernetes.io/worker\" = \"\" }\n" + body + "\n}\n\n" + s[end:]
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// order = [...] rolls the listed workers out first, in that order, then the rest zone by
// zone, oldest first; order = "newest", zone by zone, newest first — as the nodes' event
// logs show, one node at a time (max_unavailable 1). The plan names the order.
func TestOrderOnLocalFleet(t *testing.T) {
	for _, tc := range []struct {
		order, words string
		want         []string
	}{
		{`["worker-3", "worker-1"]`, "worker-3, worker-1, then zone, then oldest", []string{"worker-3", "worker-1", "worker-0", "worker-2"}},
		{`"newest"`, "zone, then newest", []string{"worker-2", "worker-0", "worker-3", "worker-1"}},
	} {
		t.Run(tc.order, func(t *testing.T) {
			dir := quickstart(t)
			setWorkerPool(t, dir, "  max_unavailable = 1\n  order = "+tc.order)
			code, out, errOut := mcp(t, dir, "plan", "-no-color", "-target=pool.worker")
			if code != 0 || !strings.Contains(out, "order: "+tc.words) {
				t.Fatalf("plan exit %d, want the order %q named:\n%s%s", code, tc.words, out, errOut)
			}
			start := time.Now()
			if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color", "-target=pool.worker"); code != 0 {
				t.Fatalf("apply exit %d\n%s%s", code, out, errOut)
			}
			logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
			if err != nil {
				t.Fatal(err)
			}
			if got := chaos.Began(logs, start); !slices.Equal(got, tc.want) {
				t.Errorf("the workers began their updates in the order %q, want %q", got, tc.want)
			}
		})
	}
}

// paused = "disruptive" lets through a change that disrupts nothing (a file with
// on_change none lands on every worker, none cordoned or rebooted) and holds one that
// reboots (it lands nowhere; apply exits 2, the nodes deferred). The state records since
// when the pool is paused from the first apply that sees it; plan, status and their JSON
// say so, with what waits and that it is disruptive. Unpaused, the record is gone.
func TestPausedDisruptiveOnLocalFleet(t *testing.T) {
	dir := quickstart(t)
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("first apply exit %d\n%s%s", code, out, errOut)
	}
	setWorkerPool(t, dir, "  max_unavailable = 1\n  paused = \"disruptive\"")
	before := time.Now()
	// Nothing to change: the pause is recorded all the same.
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply with nothing to change exit %d\n%s%s", code, out, errOut)
	}
	cert := "config \"80-cert\" {\n  pools = [\"worker\"]\n  file \"/etc/pki/mcp-ca.pem\" {\n    content = \"CA 2\\n\"\n    on_change = [\"none\"]\n  }\n}\n"
	writeFile(t, filepath.Join(dir, "cert.hcl"), []byte(cert), 0o644)
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply of the certificate exit %d\n%s%s", code, out, errOut)
	}
	writeFile(t, filepath.Join(dir, "kernel.hcl"), []byte("config \"81-sysctl\" {\n  pools = [\"worker\"]\n  file \"/etc/sysctl.d/90-mcp.conf\" {\n    content = \"vm.swappiness = 10\\n\"\n  }\n}\n"), 0o644)
	code, out, errOut := mcp(t, dir, "plan", "-no-color")
	if code != 0 || !strings.Contains(out, "pause: paused for disruptive changes") || !strings.Contains(out, "4 nodes wait (worker-0, worker-2, worker-1, worker-3): drain, write /etc/sysctl.d/90-mcp.conf, reboot, verify — disruptive (drain or reboot)") ||
		!strings.Contains(out, "since "+before.UTC().Format("2006-01-02")) {
		t.Fatalf("plan exit %d, want the pause said:\n%s%s", code, out, errOut)
	}
	code, out, errOut = mcp(t, dir, "apply", "-auto-approve", "-no-color")
	if code != 2 || !strings.Contains(out, "paused for disruptive changes") {
		t.Fatalf("apply of the reboot exit %d, want 2 (deferred)\n%s%s", code, out, errOut)
	}
	logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"worker-0", "worker-1", "worker-2", "worker-3"} {
		root := filepath.Join(dir, "fleet/nodes", n, "root")
		if b, err := os.ReadFile(filepath.Join(root, "etc/pki/mcp-ca.pem")); err != nil || string(b) != "CA 2\n" {
			t.Errorf("%s: the certificate did not land: %q %v", n, b, err)
		}
		if _, err := os.Stat(filepath.Join(root, "etc/sysctl.d/90-mcp.conf")); err == nil {
			t.Errorf("%s: the held file landed", n)
		}
		noDisruption(t, n, logs[n], before)
	}
	code, out, errOut = mcp(t, dir, "status", "-o", "json")
	var st struct {
		Pools []struct {
			Name  string `json:"name"`
			Pause *struct {
				Mode       string     `json:"mode"`
				Since      *time.Time `json:"since"`
				Waiting    []string   `json:"waiting"`
				Disruptive bool       `json:"disruptive"`
			} `json:"pause"`
		} `json:"pools"`
	}
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
		t.Fatalf("status -o json exit %d: %v\n%s%s", code, err, out, errOut)
	}
	for _, p := range st.Pools {
		switch {
		case p.Name == "infra" && p.Pause != nil:
			t.Errorf("infra is not paused: %+v", p.Pause)
		case p.Name == "worker" && (p.Pause == nil || p.Pause.Mode != "disruptive" || p.Pause.Since == nil || p.Pause.Since.Before(before.Add(-time.Second)) ||
			len(p.Pause.Waiting) != 4 || !p.Pause.Disruptive):
			t.Errorf("worker's pause in status: %+v", p.Pause)
		}
	}
	if code, out, _ := mcp(t, dir, "status"); code != 0 || !strings.Contains(out, "pool worker: paused for disruptive changes") {
		t.Errorf("status exit %d, want the pause said:\n%s", code, out)
	}
	// Unpaused: the next apply rolls the reboot out and forgets the record.
	setWorkerPool(t, dir, "  max_unavailable = 2")
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply unpaused exit %d\n%s%s", code, out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "mcp.state")); err != nil || strings.Contains(string(b), "paused_since") {
		t.Errorf("the state still records a pause: %v\n%s", err, b)
	}
}
