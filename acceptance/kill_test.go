package acceptance

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec"
	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/testkit/chaos"
	"github.com/mcpfleet/mcp/testkit/quickstarttest"
)

// slowQuickstart copies the quickstart with drains and reboots that take long enough to
// kill apply in the middle of one.
func slowQuickstart(t *testing.T) string { return localQuickstart(t, "200ms", "1s") }

// localQuickstart copies the quickstart (configuration and local fleet) into a temporary
// directory, with the local fleet's simulated drain and reboot durations set.
func localQuickstart(t *testing.T, drain, reboot string) string {
	t.Helper()
	return quickstarttest.Copy(t, "../examples/quickstart", drain, reboot)
}

// startApply starts `mcp apply -auto-approve [args]` in dir.
func startApply(t *testing.T, dir string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(mcpBinary(t), append([]string{"-chdir=" + dir, "apply", "-auto-approve", "-no-color"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out
}

// waitEvent polls the fleet's event logs until one matches, and returns it.
func waitEvent(t *testing.T, dir string, match func(local.Event) bool) local.Event {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
		if err != nil {
			t.Fatal(err)
		}
		for _, evs := range logs {
			for _, e := range evs {
				if match(e) {
					return e
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the awaited event never came")
	return local.Event{}
}

// convergeAfterKill frees the killed holder's lock and re-runs apply until the plan is
// empty; then it judges the fleet's records: no double reboot, nothing left cordoned or
// Degraded, no pool over its budget, no pending reboot record left on any node.
func convergeAfterKill(t *testing.T, dir string) {
	t.Helper()
	run := chaos.Runner{MCP: mcpBinary(t), Dir: dir}
	if err := run.UnlockDead(); err != nil {
		t.Fatalf("force-unlock of the killed holder: %v", err)
	}
	if _, failed, err := run.Converge(4, t.Logf); err != nil || len(failed) > 0 {
		t.Fatalf("re-runs: %v %v", failed, err)
	}
	logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	r := chaos.Judge(logs, map[string]int{"worker": 2, "infra": 1})
	if !r.OK() || r.Reboots != 2 {
		t.Errorf("from the event logs (want the 2 infra nodes rebooted once each):\n%s", r)
	}
	nodes, _ := filepath.Glob(filepath.Join(dir, "fleet/nodes/*"))
	for _, n := range nodes {
		var node model.Node
		b, _ := os.ReadFile(filepath.Join(n, "node.json"))
		json.Unmarshal(b, &node)
		if node.State != model.StateDone || node.Unschedulable || !node.Ready {
			t.Errorf("%s: state %s %q, cordoned %v, ready %v", node.Name, node.State, node.Reason, node.Unschedulable, node.Ready)
		}
		if _, err := os.Stat(filepath.Join(n, "root", nodeexec.PendingPath)); err == nil {
			t.Errorf("%s: a pending reboot record is left", filepath.Base(n))
		}
		if left, err := chaos.Leftovers(filepath.Join(n, "root")); err != nil || len(left) > 0 {
			t.Errorf("%s: temporary twins of writes cut short are left: %v %v", filepath.Base(n), left, err)
		}
	}
}

// SIGKILL at the worst moments of an update: during a drain, during a reboot, the moment
// the machine is back (its boot id changed, nobody journaled it yet), and the moment the
// node reports Done (its pending record not yet removed). Each used to leave a node
// Degraded for good, reboot it again, or leave the record behind.
func TestKillAtTheWorstMoments(t *testing.T) {
	exclusive(t)
	if testing.Short() {
		t.Skip("kills real processes")
	}
	for _, tc := range []struct {
		name string
		at   func(e local.Event) bool
	}{
		{"during a drain", func(e local.Event) bool { return e.Kind == local.EventCordon && strings.HasPrefix(e.Node, "infra") }},
		{"during a reboot", func(e local.Event) bool { return e.Kind == local.EventReboot }},
		{"when the machine is back", func(e local.Event) bool { return e.Kind == local.EventReady }},
		{"when the node reports Done", func(e local.Event) bool {
			return e.Kind == local.EventDone && strings.HasPrefix(e.Node, "infra")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := slowQuickstart(t)
			cmd, out := startApply(t, dir)
			e := waitEvent(t, dir, tc.at)
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			t.Logf("killed at %s %s", e.Node, e.Kind)
			if t.Failed() {
				t.Log(out.String())
			}
			convergeAfterKill(t, dir)
		})
	}
}

// Two applies after force-unlock of a live holder: the first notices its lock is gone and
// starts no more nodes.
func TestApplyStopsWhenItsLockIsTaken(t *testing.T) {
	exclusive(t)
	if testing.Short() {
		t.Skip("runs real processes")
	}
	dir := slowQuickstart(t)
	first, out := startApply(t, dir)
	waitEvent(t, dir, func(e local.Event) bool { return e.Kind == local.EventCordon })
	b, err := os.ReadFile(filepath.Join(dir, "mcp.state.lock"))
	if err != nil {
		t.Fatal(err)
	}
	var info state.LockInfo
	json.Unmarshal(b, &info)
	if o, err := exec.Command(mcpBinary(t), "-chdir="+dir, "force-unlock", "-force", info.ID).CombinedOutput(); err != nil {
		t.Fatalf("force-unlock -force: %v\n%s", err, o)
	}
	err = first.Wait()
	if err == nil || !strings.Contains(strings.ToLower(out.String()), "lost the state lock") || !strings.Contains(out.String(), "not started") {
		t.Fatalf("the first apply went on: %v\n%s", err, out.String())
	}
	convergeAfterKill(t, dir)
}
