package acceptance

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/testkit/chaos"
)

// inPIDNamespace is the command line that runs a command in a PID namespace of its own
// (`unshare --pid --fork --mount-proc`: a container sharing the state directory, as far as
// PIDs go); it skips the test, saying why, where that cannot run.
func inPIDNamespace(t *testing.T) []string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a PID namespace of its own needs root (unshare --pid)")
	}
	ns := []string{"unshare", "--pid", "--fork", "--mount-proc"}
	if out, err := exec.Command(ns[0], append(ns[1:], "true")...).CombinedOutput(); err != nil {
		t.Skipf("unshare --pid --fork --mount-proc does not run here: %v %s", err, out)
	}
	return ns
}

// mcpInNS runs the real mcp in dir from inside the namespace ns.
func mcpInNS(t *testing.T, ns []string, dir string, args ...string) (string, int) {
	t.Helper()
	argv := append(append(append([]string{}, ns...), mcpBinary(t), "-chdir="+dir), args...)
	var out bytes.Buffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr, cmd.Stdin = &out, &out, strings.NewReader("yes\n")
	code := exitCode(cmd.Run())
	return out.String(), code
}

// The second finding: a run in another PID namespace took a live apply's lock
// and claims for dead, because their PID did not run where it looked. Now a holder names
// its machine, boot and PID namespace; from elsewhere its PID is not judged, and it is
// live. An apply holds the lock of a shared state directory and reboots the fleet; from a
// PID namespace of its own, force-unlock without -force is refused and the lock stays, a
// locked apply is refused, and an apply with -lock=false starts no node beside it. Judged
// from the fleet's event logs: every node rebooted once, no claim taken from the live
// apply, no pool over its budget, nothing left cordoned.
func TestApplyInAnotherPIDNamespaceSeesTheLiveHolder(t *testing.T) {
	ns := inPIDNamespace(t)
	dir := localQuickstart(t, "50ms", "1500ms")
	if err := os.WriteFile(filepath.Join(dir, "reboot-all.hcl"), []byte(rebootAll), 0o644); err != nil {
		t.Fatal(err)
	}
	holder, holderOut := startApply(t, dir)
	waitEvent(t, dir, func(e local.Event) bool { return e.Kind == local.EventCordon })
	var lock struct{ ID string }
	if b, err := os.ReadFile(filepath.Join(dir, "mcp.state.lock")); err != nil || json.Unmarshal(b, &lock) != nil || lock.ID == "" {
		t.Fatalf("the live apply's lock file: %s %v", b, err)
	}

	out, code := mcpInNS(t, ns, dir, "force-unlock", lock.ID)
	if code == 0 || !strings.Contains(out, "cannot be checked from here") {
		t.Errorf("force-unlock of the live holder from another PID namespace: exit %d, want a refusal saying why\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "mcp.state.lock")); err != nil {
		t.Errorf("the live holder's lock is gone: %v", err)
	}
	if out, code := mcpInNS(t, ns, dir, "apply", "-auto-approve", "-no-color"); code != 1 || !strings.Contains(out, lock.ID) {
		t.Errorf("a locked apply beside the live one: exit %d, want 1 naming its lock\n%s", code, out)
	}
	out, code = mcpInNS(t, ns, dir, "apply", "-auto-approve", "-no-color", "-lock=false", "-budget-wait=2s")
	if code != 2 {
		t.Errorf("an apply with -lock=false beside the live one: exit %d, want 2 (nothing started)\n%s", code, out)
	}

	if code := exitCode(holder.Wait()); code != 0 {
		t.Fatalf("the live apply: exit %d\n%s", code, lastLines(holderOut.String(), 30))
	}
	if _, failed, err := (chaos.Runner{MCP: mcpBinary(t), Dir: dir}).Converge(3, t.Logf); err != nil || len(failed) > 0 {
		t.Fatalf("converging after: %v %v", failed, err)
	}
	logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	for _, evs := range logs {
		for _, e := range evs {
			if e.TookOver != "" {
				t.Errorf("%s: apply %s took the claim of apply %s, which was alive", e.Node, e.Apply, e.TookOver)
			}
		}
	}
	if r := chaos.Judge(logs, map[string]int{"worker": 2, "infra": 1}); !r.OK() || r.Reboots != 6 {
		t.Errorf("from the event logs (want each of the 6 nodes rebooted once):\n%s\nthe live apply:\n%s", r, lastLines(holderOut.String(), 20))
	}
}
