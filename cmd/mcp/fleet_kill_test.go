package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/testkit/chaos"
)

// TestMCPProcess is mcp itself, run by the test binary as a process of its own (startMCP):
// its arguments follow "--".
func TestMCPProcess(t *testing.T) {
	if os.Getenv("MCP_TEST_PROCESS") != "1" {
		t.Skip("run only as the mcp process of another test")
	}
	i := slices.Index(os.Args, "--")
	os.Args = append([]string{"mcp"}, os.Args[i+1:]...)
	main()
}

// startMCP starts mcp with args as a process of its own, for a test that kills it.
func startMCP(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestMCPProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "MCP_TEST_PROCESS=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out
}

// clusterEvents are the event logs of a cluster's nodes, by node.
func clusterEvents(t *testing.T, dir, cluster string) map[string][]local.Event {
	t.Helper()
	logs, err := local.ReadEvents(filepath.Join(dir, "clusters", cluster, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	return logs
}

// eventsOf are the events of all a cluster's nodes, in no order.
func eventsOf(t *testing.T, dir, cluster string) []local.Event {
	t.Helper()
	var out []local.Event
	for _, evs := range clusterEvents(t, dir, cluster) {
		out = append(out, evs...)
	}
	return out
}

func eventCount(logs map[string][]local.Event) (n int) {
	for _, evs := range logs {
		n += len(evs)
	}
	return n
}

// A promotion SIGKILLed in the middle of a stage — staging's two clusters applying at
// once (concurrency 2), each rebooting its first node — resumes at that stage: once the
// killed run's locks are freed, the next apply leaves canary (done) untouched, finishes
// both of staging's clusters, and stops for staging's soak, prod not started. Judged from the node event
// logs: every node rebooted once into its config, none twice, budgets held, prod's nodes
// never touched.
func TestFleetKilledPromotionResumesAtItsStage(t *testing.T) {
	dir := exampleFleet(t, "canary", "staging", "prod")
	addCluster(t, dir, "stage-a", "staging")
	editFile(t, dir, "clusters.hcl", "stage \"canary\" {\n  soak = \"1h\"\n}", "stage \"canary\" {}")
	setStage(t, dir, "staging", "concurrency = 2")
	slowClusters(t, dir, "1s", "stage-a", "staging")
	rebooting := func(cluster string) bool {
		return slices.ContainsFunc(clusterEvents(t, dir, cluster)["worker-0"], func(e local.Event) bool { return e.Kind == local.EventReboot })
	}

	cmd, out := startMCP(t, "-chdir="+dir, "apply", "-auto-approve", "-no-color")
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(60 * time.Second)
	for !rebooting("stage-a") || !rebooting("staging") {
		select {
		case err := <-exited:
			t.Fatalf("apply ended (%v) before stage-a's and staging's worker-0 were rebooting at once:\n%s", err, out)
		case <-deadline:
			cmd.Process.Kill()
			<-exited
			t.Fatalf("stage-a's and staging's worker-0 were never rebooting at once:\n%s", out)
		case <-time.After(5 * time.Millisecond):
		}
	}
	cmd.Process.Kill()
	<-exited
	if !applied(t, dir, "canary") || eventCount(clusterEvents(t, dir, "prod")) != 0 {
		t.Fatalf("at the kill: want canary done, prod untouched\n%s", out)
	}
	canaryEvents := eventCount(clusterEvents(t, dir, "canary"))

	for _, c := range []string{"stage-a", "staging"} {
		var lock state.LockInfo
		b, err := os.ReadFile(filepath.Join(dir, "clusters", c, "mcp.state.lock"))
		if err != nil || json.Unmarshal(b, &lock) != nil {
			t.Fatalf("the killed apply left no lock on %s's state: %v", c, err)
		}
		if code, o, e := mcp(t, dir, "force-unlock", "-cluster", c, lock.ID); code != 0 {
			t.Fatalf("force-unlock of the killed apply's lock on %s: exit %d\n%s%s", c, code, o, e)
		}
	}
	code, o, e := mcp(t, dir, "apply", "-auto-approve", "-no-color")
	if code != 2 || !strings.Contains(o, "Stage staging changed and soaks for 4h") || !strings.Contains(o, "Not started: prod (stage prod).") {
		t.Fatalf("the apply after the kill: exit %d, want staging finished and a stop for its soak\n%s%s", code, o, e)
	}
	if !applied(t, dir, "stage-a") || !applied(t, dir, "staging") || applied(t, dir, "prod") || eventCount(clusterEvents(t, dir, "prod")) != 0 {
		t.Errorf("after the re-run: stage-a %v, staging %v, prod %v; want staging's clusters done, prod untouched",
			applied(t, dir, "stage-a"), applied(t, dir, "staging"), applied(t, dir, "prod"))
	}
	if n := eventCount(clusterEvents(t, dir, "canary")); n != canaryEvents {
		t.Errorf("canary, done before the kill, was touched again: %d events, %d before", n, canaryEvents)
	}
	for _, c := range []string{"canary", "stage-a", "staging"} {
		if r := chaos.Judge(clusterEvents(t, dir, c), map[string]int{"worker": 1}); !r.OK() || r.Reboots != 2 || r.DoubleReboots != 0 {
			t.Errorf("cluster %s, from its event logs (want each of its 2 nodes rebooted once):\n%s", c, r)
		}
	}
}
