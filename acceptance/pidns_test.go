package acceptance

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	exclusive(t)
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

// Issue 41: two configuration directories, each with its own state, on one fleet; the
// second apply in a PID namespace of its own. It used to take worker-0 from the first
// apply mid-reboot — it held a state lock, of its own state, and took the claim's lock for
// one it had taken over — and reboot the node again as the first uncordoned it. A claim
// names its state now: one of another state is judged by its expiry, which its apply
// renews. Judged from worker-0's event log: only the first apply claimed it, nothing took
// its claim over, and it rebooted once; the second apply ended without starting it.
func TestApplyOfAnotherStateLeavesALiveClaim(t *testing.T) {
	exclusive(t)
	ns := inPIDNamespace(t)
	dirA := localQuickstart(t, "50ms", "3s")
	dirB := filepath.Join(t.TempDir(), "b")
	if err := os.MkdirAll(dirB, 0o755); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dirA, "*.*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(f) == "main.hcl" { // the same fleet, a state of its own
			b = bytes.Replace(b, []byte(`"./fleet"`), []byte(strconv.Quote(filepath.Join(dirA, "fleet"))), 1)
		}
		if err := os.WriteFile(filepath.Join(dirB, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for dir, content := range map[string]string{dirA: "A", dirB: "B"} {
		hcl := strings.Replace(rebootAll, "one apply per node", content, 1)
		if err := os.WriteFile(filepath.Join(dir, "reboot-all.hcl"), []byte(hcl), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	first, firstOut := startApply(t, dirA, "-target", "node.worker-0")
	claim := waitEvent(t, dirA, func(e local.Event) bool { return e.Node == "worker-0" && e.Kind == local.EventClaim })
	waitEvent(t, dirA, func(e local.Event) bool { return e.Node == "worker-0" && e.Kind == local.EventReboot })
	out, code := mcpInNS(t, ns, dirB, "apply", "-auto-approve", "-no-color", "-target", "node.worker-0", "-budget-wait=10s")
	if code != 2 || !strings.Contains(out, "worker-0") {
		t.Errorf("the apply of the other state: exit %d, want 2 (worker-0 not started)\n%s", code, lastLines(out, 30))
	}
	if code := exitCode(first.Wait()); code != 0 {
		t.Fatalf("the first apply: exit %d\n%s", code, lastLines(firstOut.String(), 30))
	}
	logs, err := local.ReadEvents(filepath.Join(dirA, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	reboots, seen := 0, []string{}
	for _, e := range logs["worker-0"] {
		seen = append(seen, string(e.Kind))
		switch {
		case e.Kind == local.EventReboot:
			reboots++
		case e.Kind == local.EventClaim && (e.Apply != claim.Apply || e.TookOver != ""):
			t.Errorf("worker-0 claimed by apply %s (taking it over from %q) beside the first apply %s", e.Apply, e.TookOver, claim.Apply)
		}
	}
	if reboots != 1 {
		t.Errorf("worker-0 rebooted %d times, want once: %s", reboots, strings.Join(seen, ", "))
	}
}
