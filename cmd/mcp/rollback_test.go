package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers/local"
)

// An OS that rolled back at the update's reboot (the machine came back on the deployment
// it ran before) fails the node, Degraded; once the cause is fixed, the next apply updates
// it again from what it runs — the kernel arguments staged once more and one new reboot —
// and the plan never says the failed attempt's reboot finished the update. Judged from the
// node's node.json and event log.
func TestOSRollbackThenFixedHeals(t *testing.T) {
	dir := smallFleet(t, "worker=2", "")
	hcl, _ := os.ReadFile(filepath.Join(dir, "main.hcl"))
	hcl = []byte(strings.Replace(string(hcl), `file "/etc/x.conf" { content = "x\n" }`,
		"file \"/etc/x.conf\" { content = \"x\\n\" }\n  kernel_args = [\"nosmt\"]", 1))
	os.WriteFile(filepath.Join(dir, "main.hcl"), hcl, 0o644)
	mcp(t, dir, "fleet", "set", "worker-1", "fault.reboot=rollback")
	if code, out := applyAudited(t, dir); code != 1 || !strings.Contains(out, "expected nosmt") {
		t.Fatalf("apply with the OS rolling back: exit %d\n%s", code, out)
	}
	if n := readNode(t, dir, "worker-1"); n.State != model.StateDegraded {
		t.Fatalf("worker-1 after the rollback: %s %q", n.State, n.Reason)
	}
	mcp(t, dir, "fleet", "set", "worker-1", "fault.reboot-")

	_, plan, _ := mcp(t, dir, "plan", "-no-color")
	if strings.Contains(plan, "rebooted into") || !regexp.MustCompile(`node\.worker-1 .*kargs.*reboot`).MatchString(plan) {
		t.Errorf("the plan after the fault is fixed does not update worker-1 again:\n%s", plan)
	}
	code, out := applyAudited(t, dir)
	if code != 0 {
		t.Fatalf("apply after the fault is fixed: exit %d\n%s", code, out)
	}
	if got := len(events(t, dir, "worker-1", local.EventReboot)); got != 2 {
		t.Errorf("worker-1 rebooted %d times, want 2 (the rolled-back attempt and the one that took)", got)
	}
	n := readNode(t, dir, "worker-1")
	if n.State != model.StateDone || n.Unschedulable || !slices.Contains(n.KernelArgs, "nosmt") {
		t.Errorf("worker-1: %s %q cordoned %v kernel args %v", n.State, n.Reason, n.Unschedulable, n.KernelArgs)
	}
	if code, out, _ := mcp(t, dir, "plan", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Errorf("plan after: exit %d\n%s", code, out)
	}
}
