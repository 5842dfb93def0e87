package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
)

// revertPool: the pool reverts on failure, its health check failing on worker-1 once
// /etc/x.conf says "bad".
const revertPool = `  on_failure      = "revert"
  health_check "x" {
    command = ["/bin/sh", "-c", "[ \"$MCP_NODE\" != worker-1 ] || ! grep -q bad \"$MCP_NODE_ROOT/etc/x.conf\""]
    timeout = "1s"
  }
`

// on_failure = "revert": a health gate that fails on the second node stops the rollout,
// and apply puts both nodes it changed (the one updated, the one failed and Degraded) back
// on the config they ran before, within max_unavailable 1 (judged from the event logs),
// then exits 1 naming the nodes reverted and why. The two nodes not started never moved.
// The plan said beforehand what a failure would do; after, plan warns that the pool was
// rolled back and would go forward again. Judged from each node's root and node.json.
func TestOnFailureRevertsTheNodesItChanged(t *testing.T) {
	dir := smallFleet(t, "worker=4", "")
	setContent(t, dir, "good", revertPool)
	if code, out := applyAudited(t, dir); code != 0 {
		t.Fatalf("first apply: exit %d\n%s", code, out)
	}
	good := readNode(t, dir, "worker-0").CurrentConfig
	setContent(t, dir, "bad", revertPool)
	code, plan, _ := mcp(t, dir, "plan", "-no-color")
	if code != 0 || !strings.Contains(plan, "on failure: revert the nodes this apply updates to "+good) {
		t.Errorf("plan does not say what a failure would do: exit %d\n%s", code, plan)
	}
	start := time.Now()
	code, out := applyAudited(t, dir)
	if code != 1 || !strings.Contains(out, `health gate "x" did not pass`) || !strings.Contains(out, `Reverted (on_failure = "revert"): pool.worker back to `+good) ||
		!strings.Contains(out, "node.worker-0  reverted") || !strings.Contains(out, "node.worker-1  reverted") {
		t.Fatalf("apply with the gate failing: exit %d\n%s", code, out)
	}
	onConfig(t, dir, "good", good, "worker-0", "worker-1", "worker-2", "worker-3")
	for _, name := range []string{"worker-0", "worker-1"} {
		if n := readNode(t, dir, name); n.State != model.StateDone {
			t.Errorf("%s after the revert: %s %q", name, n.State, n.Reason)
		}
	}
	for _, name := range []string{"worker-2", "worker-3"} {
		if evs := events(t, dir, name, "cordon"); evs[len(evs)-1].Time.After(start) {
			t.Errorf("%s was cordoned, though the rollout stopped before it", name)
		}
	}
	if r := judge(t, dir, map[string]int{"worker": 1}); !r.OK() || r.MaxOut["worker"] != 1 {
		t.Errorf("from the event logs:\n%s", r)
	}
	code, plan, _ = mcp(t, dir, "plan", "-no-color", "-detailed-exitcode")
	if code != 2 || !strings.Contains(plan, "pool was rolled back to "+good) || !strings.Contains(plan, `on_failure = "revert"`) {
		t.Errorf("plan after the revert: exit %d\n%s", code, plan)
	}
}

// A node whose step fails (its agent puts back what it began: Degraded on the old config)
// stops the rollout as a gate does: the node updated before it is reverted once the failed
// one, verified again, is back in service — the revert's budget counts it first.
func TestOnFailureRevertsAfterAFailedStep(t *testing.T) {
	dir := smallFleet(t, "worker=3", "")
	setContent(t, dir, "good", "  on_failure = \"revert\"\n")
	if code, out := applyAudited(t, dir); code != 0 {
		t.Fatalf("first apply: exit %d\n%s", code, out)
	}
	good := readNode(t, dir, "worker-0").CurrentConfig
	setContent(t, dir, "bad", "  on_failure = \"revert\"\n")
	mcp(t, dir, "fleet", "set", "worker-1", "fault.write=/etc/x.conf")
	code, out := applyAudited(t, dir)
	if code != 1 || !strings.Contains(out, "2 of 2 nodes this rollout changed are back on "+good) {
		t.Fatalf("apply with worker-1's write failing: exit %d\n%s", code, out)
	}
	onConfig(t, dir, "good", good, "worker-0", "worker-1", "worker-2")
	if n := readNode(t, dir, "worker-1"); n.State != model.StateDone {
		t.Errorf("worker-1 after the revert: %s %q", n.State, n.Reason)
	}
	if r := judge(t, dir, map[string]int{"worker": 1}); !r.OK() || r.MaxOut["worker"] != 1 {
		t.Errorf("from the event logs:\n%s", r)
	}
}

// A failure the pool tolerates (below its max_failures) does not stop the rollout, and
// reverts nothing: on_failure acts when a failure stops the pool.
func TestOnFailureRevertsOnlyWhenThePoolStops(t *testing.T) {
	dir := smallFleet(t, "worker=3", "")
	setContent(t, dir, "good", revertPool, "  max_failures = 2\n")
	if code, out := applyAudited(t, dir); code != 0 {
		t.Fatalf("first apply: exit %d\n%s", code, out)
	}
	setContent(t, dir, "bad", revertPool, "  max_failures = 2\n")
	// worker-1, failed and Degraded, holds the budget of 1: worker-2 is not started.
	code, out := applyAudited(t, dir, "-budget-wait=1s")
	if code != 1 || strings.Contains(out, "Reverted") || !strings.Contains(out, "Nodes: 1 updated, 1 failed, 1 not started") {
		t.Fatalf("apply with one tolerated failure: exit %d\n%s", code, out)
	}
	bad := readNode(t, dir, "worker-0").CurrentConfig
	onConfig(t, dir, "bad", bad, "worker-0")
}

// An alert that fires after a node finished stops the pool as a failure does, and with
// on_failure = "revert" that node goes back; the revert is not held by the alert gate
// (the alert is what it remedies). Prometheus' alerts API is played by a server that
// fires while a node's /etc/x.conf says "bad".
func TestOnFailureRevertsWhenAlertsFire(t *testing.T) {
	dir := smallFleet(t, "worker=3", "")
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		alerts := `[]`
		if b, _ := os.ReadFile(filepath.Join(dir, "fleet", "nodes", "worker-0", "root", "etc", "x.conf")); string(b) == "bad\n" {
			alerts = `[{"labels":{"alertname":"XBad","severity":"critical"},"annotations":{},"state":"firing","activeAt":"2026-12-07T08:00:00Z","value":"1"}]`
		}
		fmt.Fprintf(w, `{"status":"success","data":{"alerts":%s}}`, alerts)
	}))
	defer prom.Close()
	gate := fmt.Sprintf("  on_failure = \"revert\"\n  alert_gate {\n    prometheus_url = %q\n    timeout = \"0s\"\n  }\n", prom.URL)
	setContent(t, dir, "good", gate)
	if code, out := applyAudited(t, dir); code != 0 {
		t.Fatalf("first apply: exit %d\n%s", code, out)
	}
	good := readNode(t, dir, "worker-0").CurrentConfig
	setContent(t, dir, "bad", gate)
	code, out := applyAudited(t, dir)
	if code != 1 || !strings.Contains(out, "XBad") || !strings.Contains(out, "1 of 1 nodes this rollout changed are back on "+good) {
		t.Fatalf("apply with an alert firing after worker-0: exit %d\n%s", code, out)
	}
	onConfig(t, dir, "good", good, "worker-0", "worker-1", "worker-2")
}

// On a pool's first apply there is no config to go back to: the failure stops the pool,
// apply says that nothing could be reverted, and why, and exits 1.
func TestOnFailureWithNothingToRevertTo(t *testing.T) {
	dir := smallFleet(t, "worker=3", "")
	setContent(t, dir, "bad", revertPool)
	code, out := applyAudited(t, dir)
	if code != 1 || !strings.Contains(out, "nothing reverted: the pool ran no config mcp stored before this apply") ||
		!strings.Contains(out, "node.worker-1  not reverted: the pool ran no config") {
		t.Fatalf("first apply failing: exit %d\n%s", code, out)
	}
}

// A rollout is more than one apply when one stops without reverting (on_failure was
// "stop", or it was killed) and the rollout is run again with on_failure = "revert": the
// rerun's failure takes back every node on the failed config — worker-0, which the first
// apply moved — to the config before it in the pointer history, though this apply found
// the boot pointer already on the failed config. Judged from the nodes' roots and node.json.
func TestOnFailureRevertsARolloutStartedByAnEarlierApply(t *testing.T) {
	dir := smallFleet(t, "worker=3", "")
	stopPool := strings.Replace(revertPool, `"revert"`, `"stop"`, 1)
	setContent(t, dir, "good", stopPool)
	if code, out := applyAudited(t, dir); code != 0 {
		t.Fatalf("first apply: exit %d\n%s", code, out)
	}
	good := readNode(t, dir, "worker-0").CurrentConfig
	setContent(t, dir, "bad", stopPool)
	if code, out := applyAudited(t, dir); code != 1 {
		t.Fatalf("apply of bad with on_failure = stop: exit %d\n%s", code, out)
	}
	bad := readNode(t, dir, "worker-0").CurrentConfig
	if bad == good {
		t.Fatalf("worker-0 was not moved to the bad config by the stopped apply")
	}
	setContent(t, dir, "bad", revertPool)
	code, out := applyAudited(t, dir)
	if code != 1 || !strings.Contains(out, `Reverted (on_failure = "revert"): pool.worker back to `+good) {
		t.Fatalf("rerun with on_failure = revert: exit %d\n%s", code, out)
	}
	onConfig(t, dir, "good", good, "worker-0", "worker-1", "worker-2")
	if r := judge(t, dir, map[string]int{"worker": 1}); !r.OK() || r.MaxOut["worker"] > 1 {
		t.Errorf("from the event logs:\n%s", r)
	}
}
