package acceptance

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/providers/local"
)

// A node another process makes NotReady during an apply counts against the budget from
// then on: with max_unavailable 1, no other node starts until it is back (here it does
// not come back, and apply gives up waiting). The local provider's looks at the pool are
// served from what it read before, kept until the files change (issue 11): this is the
// promise that must survive that.
func TestBudgetCountsANodeMadeNotReadyDuringApply(t *testing.T) {
	exclusive(t)
	dir := t.TempDir()
	mcp := mcpBinary(t)
	runMCP(t, mcp, "-chdir="+dir, "fleet", "init", "fleet", "-nodes", "worker=5", "-zones", "a")
	hcl := `provider "local" {
  fleet           = "./fleet"
  reboot_duration = "300ms"
}

pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = 1
}

config "50-x" {
  pools = ["worker"]
  file "/etc/x.conf" { content = "x\n" }
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(mcp, "-chdir="+dir, "apply", "-auto-approve", "-no-color", "-budget-wait=2s")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Once the first node is being updated (the plan's order: worker-0 first), another
	// process makes the last one NotReady.
	waitEvent(t, dir, func(e local.Event) bool { return e.Node == "worker-0" && e.Kind == local.EventCordon })
	if out, err := exec.Command(mcp, "fleet", "set", "-fleet", filepath.Join(dir, "fleet"), "worker-4", "ready=false").CombinedOutput(); err != nil {
		cmd.Process.Kill()
		t.Fatalf("fleet set: %v\n%s", err, out)
	}
	err := cmd.Wait()
	if err == nil || !strings.Contains(out.String(), "worker-4 (NotReady)") {
		t.Fatalf("apply: %v, want it to give up waiting for room while worker-4 is NotReady:\n%s", err, out.String())
	}
	logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	var notReady time.Time
	for _, e := range logs["worker-4"] {
		if e.Kind == local.EventNotReady {
			notReady = e.Time
		}
	}
	if notReady.IsZero() {
		t.Fatalf("worker-4 has no not-ready event: %v", logs["worker-4"])
	}
	for node, evs := range logs {
		for _, e := range evs {
			if node != "worker-4" && e.Kind == local.EventCordon && e.Time.After(notReady) {
				t.Errorf("%s was cordoned at %s, after worker-4 went NotReady at %s with max_unavailable 1",
					node, e.Time.Format(time.StampMicro), notReady.Format(time.StampMicro))
			}
		}
	}
}
