package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/testkit/chaos"
)

// The tests of this file hold mcp's words about a node to the node's own records: its
// root, its node.json and its event log — never to what mcp prints of itself.

// readNode is node.json as the fleet holds it.
func readNode(t *testing.T, dir, node string) model.Node {
	t.Helper()
	var n model.Node
	b, err := os.ReadFile(filepath.Join(dir, "fleet", "nodes", node, "node.json"))
	if err == nil {
		err = json.Unmarshal(b, &n)
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// rootFile is a file of the node's root ("" when absent).
func rootFile(dir, node, path string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "fleet", "nodes", node, "root", path))
	return string(b)
}

// events are the node's events of kind.
func events(t *testing.T, dir, node string, kind local.EventKind) []local.Event {
	t.Helper()
	logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	var out []local.Event
	for _, e := range logs[node] {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// applyAudited runs apply and checks its claims of reboots against the event logs.
func applyAudited(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	start := time.Now()
	code, out, errOut := mcp(t, dir, append([]string{"apply", "-auto-approve", "-no-color"}, args...)...)
	problems, err := chaos.AuditReboots(filepath.Join(dir, "fleet"), out, start, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s\n%s", p, out)
	}
	return code, out + errOut
}

// Case 1: a node whose update failed and was rolled back (its managed files deleted: it
// ran no config before) is updated in full by the next apply, not only with the steps the
// journal had not recorded; only then is it reported updated.
func TestRolledBackNodeIsUpdatedInFull(t *testing.T) {
	dir := quickstart(t)
	mcp(t, dir, "fleet", "set", "worker-0", "fault.restart=chronyd.service")
	if code, out := applyAudited(t, dir); code != 1 || !strings.Contains(out, "rolled back to the unmanaged state") {
		t.Fatalf("apply with the fault: exit %d\n%s", code, out)
	}
	if got := rootFile(dir, "worker-0", "etc/chrony.conf"); got != "" {
		t.Fatalf("the rollback left /etc/chrony.conf: %q", got)
	}
	mcp(t, dir, "fleet", "set", "worker-0", "fault.restart-")
	_, plan, _ := mcp(t, dir, "plan", "-no-color")
	if !regexp.MustCompile(`node\.worker-0 .*write 3 files`).MatchString(plan) {
		t.Errorf("the plan does not write worker-0's files again:\n%s", plan)
	}
	if code, out := applyAudited(t, dir); code != 0 {
		t.Fatalf("apply after the fault: exit %d\n%s", code, out)
	}
	for _, f := range []string{"etc/chrony.conf", "etc/motd", "etc/systemd/system/node-exporter.service"} {
		if rootFile(dir, "worker-0", f) == "" {
			t.Errorf("worker-0 reported updated, and /%s is missing from its root", f)
		}
	}
	if !strings.Contains(rootFile(dir, "worker-0", "etc/chrony.conf"), "time.example.com") {
		t.Errorf("worker-0's chrony.conf: %q", rootFile(dir, "worker-0", "etc/chrony.conf"))
	}
	if n := readNode(t, dir, "worker-0"); n.State != model.StateDone || n.Unschedulable {
		t.Errorf("worker-0: %s %q, cordoned %v", n.State, n.Reason, n.Unschedulable)
	}
	for _, args := range [][]string{{"plan", "-detailed-exitcode"}, {"drift", "-detailed-exitcode"}} {
		if code, out, _ := mcp(t, dir, args...); code != 0 {
			t.Errorf("mcp %s: exit %d\n%s", args[0], code, out)
		}
	}
}

// Case 2: a health gate that does not pass fails the node everywhere — apply's exit code,
// the node itself (Degraded with the gate's word), status, the next plan (which verifies
// it and checks the gate again, instead of calling it done).
func TestFailedGateIsAFailedNodeEverywhere(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() && r.URL.Query().Get("node") == "worker-0" {
			http.Error(w, "not serving", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	// A node that failed its gate is Degraded, out of service: with a budget of 2 the third
	// node still has room beside it.
	dir := smallFleet(t, "worker=3", "")
	hcl, _ := os.ReadFile(filepath.Join(dir, "main.hcl"))
	hcl = []byte(strings.Replace(string(hcl), "max_unavailable = 1", fmt.Sprintf(`max_unavailable = 2
  max_failures    = 2
  health_check "ready" {
    http_get = "%s/?node=${node.name}"
    timeout  = "1s"
  }`, srv.URL), 1))
	os.WriteFile(filepath.Join(dir, "main.hcl"), hcl, 0o644)

	code, out := applyAudited(t, dir, "-budget-wait=30s")
	if code != 1 || !strings.Contains(out, `health gate "ready" did not pass`) {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	n := readNode(t, dir, "worker-0")
	if n.State != model.StateDegraded || !strings.Contains(n.Reason, `health gate "ready" did not pass`) {
		t.Errorf("worker-0 reports %s %q after failing its gate", n.State, n.Reason)
	}
	for _, name := range []string{"worker-1", "worker-2"} {
		if n := readNode(t, dir, name); n.State != model.StateDone {
			t.Errorf("%s reports %s %q", name, n.State, n.Reason)
		}
	}
	_, status, _ := mcp(t, dir, "status", "-json")
	var s struct {
		Pools []struct{ Updated, Degraded int }
		Nodes []struct{ Name, State, Reason string }
	}
	json.Unmarshal([]byte(status), &s)
	if len(s.Pools) != 1 || s.Pools[0].Updated != 2 || s.Pools[0].Degraded != 1 ||
		s.Nodes[0].State != model.StateDegraded || !strings.Contains(s.Nodes[0].Reason, "health gate") {
		t.Errorf("status after the failed gate:\n%s", status)
	}
	code, plan, _ := mcp(t, dir, "plan", "-detailed-exitcode", "-no-color")
	if code != 2 || !regexp.MustCompile(`node\.worker-0 .*verify`).MatchString(plan) {
		t.Errorf("plan after the failed gate: exit %d\n%s", code, plan)
	}
	failing.Store(false)
	if code, out := applyAudited(t, dir, "-budget-wait=30s"); code != 0 {
		t.Fatalf("apply with the gate passing: exit %d\n%s", code, out)
	}
	if n := readNode(t, dir, "worker-0"); n.State != model.StateDone {
		t.Errorf("worker-0 reports %s %q once its gate passes", n.State, n.Reason)
	}
	if code, plan, _ := mcp(t, dir, "plan", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Errorf("plan after the gate passed: exit %d\n%s", code, plan)
	}
}

// Case 4: a node whose reboot happened under an apply that stopped (here it hung past the
// node timeout, then came back) is not said to reboot again: the plan says the reboot
// happened, from the node's own record and boot id, and apply never says it rebooted it.
func TestRebootThatHappenedIsNotReportedAsDone(t *testing.T) {
	dir := smallFleet(t, "worker=1", "")
	mcp(t, dir, "fleet", "set", "worker-0", "fault.reboot=hang")
	if code, out := applyAudited(t, dir); code != 1 || !strings.Contains(out, "did not come back") {
		t.Fatalf("apply with a hung reboot: exit %d\n%s", code, out)
	}
	mcp(t, dir, "fleet", "set", "worker-0", "fault.reboot-", "ready=true") // the machine is back
	_, plan, _ := mcp(t, dir, "plan", "-no-color")
	if !strings.Contains(plan, "rebooted into rendered-worker-") || !strings.Contains(plan, "already (boot id") ||
		regexp.MustCompile(`node\.worker-0 .*reboot`).MatchString(plan) {
		t.Errorf("the plan after the reboot happened:\n%s", plan)
	}
	code, out := applyAudited(t, dir)
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	if got := len(events(t, dir, "worker-0", local.EventReboot)); got != 1 {
		t.Errorf("worker-0 rebooted %d times, want once", got)
	}
	if n := readNode(t, dir, "worker-0"); n.State != model.StateDone || n.Unschedulable || !n.Ready {
		t.Errorf("worker-0: %s %q cordoned %v ready %v", n.State, n.Reason, n.Unschedulable, n.Ready)
	}
	if rootFile(dir, "worker-0", "etc/x.conf") != "x\n" {
		t.Errorf("worker-0's /etc/x.conf: %q", rootFile(dir, "worker-0", "etc/x.conf"))
	}
}

// Case 5: a node put on hold while apply runs is not started, and apply says so with a
// distinct exit code (2: nothing failed, not everything planned was done).
func TestHoldMidApplyIsNotStartedAndNotComplete(t *testing.T) {
	dir := smallFleet(t, "worker=2", "")
	hcl, _ := os.ReadFile(filepath.Join(dir, "main.hcl"))
	hcl = []byte(strings.Replace(string(hcl), `node_timeout = "2s"`, "node_timeout = \"30s\"\n  reboot_duration = \"1500ms\"", 1))
	os.WriteFile(filepath.Join(dir, "main.hcl"), hcl, 0o644)
	type result struct {
		code int
		out  string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color")
		done <- result{code, out + errOut}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for len(events(t, dir, "worker-0", local.EventReboot))+len(events(t, dir, "worker-1", local.EventReboot)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no node started rebooting")
		}
		time.Sleep(10 * time.Millisecond)
	}
	other := "worker-1"
	if len(events(t, dir, "worker-1", local.EventReboot)) > 0 {
		other = "worker-0"
	}
	if code, _, errOut := mcp(t, dir, "fleet", "set", other, "hold=maintenance"); code != 0 {
		t.Fatal(errOut)
	}
	r := <-done
	if r.code != 2 || !strings.Contains(r.out, "put on hold after the plan was made") || !strings.Contains(r.out, "Apply incomplete.") {
		t.Errorf("apply with a hold set mid-apply: exit %d\n%s", r.code, r.out)
	}
	if got := events(t, dir, other, local.EventCordon); len(got) != 0 {
		t.Errorf("%s was put on hold and was cordoned: %v", other, got)
	}
}

// Case 6: a pool whose os_image is the image its nodes already run plans no pivot and no
// reboot; the nodes record the new config in place.
func TestImageTheNodeRunsIsNoReboot(t *testing.T) {
	dir := smallFleet(t, "worker=2", `
`)
	hcl, _ := os.ReadFile(filepath.Join(dir, "main.hcl"))
	hcl = []byte(strings.Replace(string(hcl), `file "/etc/x.conf" { content = "x\n" }`,
		"file \"/etc/x.conf\" {\n    content   = \"x\\n\"\n    on_change = [\"none\"]\n  }", 1))
	os.WriteFile(filepath.Join(dir, "main.hcl"), hcl, 0o644)
	if code, out := applyAudited(t, dir); code != 0 {
		t.Fatalf("first apply: exit %d\n%s", code, out)
	}
	image := readNode(t, dir, "worker-0").OSImage
	if image == "" {
		t.Fatal("the local nodes report no image")
	}
	hcl, _ = os.ReadFile(filepath.Join(dir, "main.hcl"))
	hcl = []byte(strings.Replace(string(hcl), "max_unavailable = 1", "max_unavailable = 1\n  os_image        = \""+image+"\"", 1))
	os.WriteFile(filepath.Join(dir, "main.hcl"), hcl, 0o644)
	_, plan, _ := mcp(t, dir, "plan", "-no-color")
	if !regexp.MustCompile(`node\.worker-0 .*record new config`).MatchString(plan) ||
		regexp.MustCompile(`node\.worker-\d .*(pivot|reboot|drain)`).MatchString(plan) {
		t.Errorf("plan for the image the nodes run:\n%s", plan)
	}
	if code, out := applyAudited(t, dir); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	for _, n := range []string{"worker-0", "worker-1"} {
		if evs := events(t, dir, n, local.EventReboot); len(evs) != 0 {
			t.Errorf("%s rebooted for an image it runs: %v", n, evs)
		}
		if evs := events(t, dir, n, local.EventPivot); len(evs) != 0 {
			t.Errorf("%s pivoted to an image it runs: %v", n, evs)
		}
	}
	if code, out, _ := mcp(t, dir, "plan", "-detailed-exitcode"); code != 0 {
		t.Errorf("plan after: exit %d\n%s", code, out)
	}
}
