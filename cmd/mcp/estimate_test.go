package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/testkit/benchdoc"
)

// timedFleet is smallFleet with drains and reboots that take time.
func timedFleet(t *testing.T, nodes, drain, reboot string) string {
	t.Helper()
	dir := smallFleet(t, nodes, "")
	p := filepath.Join(dir, "main.hcl")
	hcl, _ := os.ReadFile(p)
	hcl = []byte(strings.Replace(string(hcl), `node_timeout = "2s"`,
		"node_timeout = \"30s\"\n  drain_duration = \""+drain+"\"\n  reboot_duration = \""+reboot+"\"", 1))
	if err := os.WriteFile(p, hcl, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// planEstimate is the estimate of pool in `mcp plan -json`.
func planEstimate(t *testing.T, dir, pool string) *planner.Estimate {
	t.Helper()
	code, out, errOut := mcp(t, dir, "plan", "-json")
	if code != 0 {
		t.Fatalf("plan -json exit %d\n%s%s", code, out, errOut)
	}
	ests, _, err := benchdoc.PlanEstimates([]byte(out))
	if err != nil || ests[pool] == nil {
		t.Fatalf("plan JSON has no estimate for pool %s (%v):\n%s", pool, err, out)
	}
	return ests[pool]
}

// spans are, per node, how long its reboot and its time out of service (cordon to
// uncordon) took in its event log.
func spans(t *testing.T, dir string) (reboots, outOfService []time.Duration) {
	t.Helper()
	logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	for node, evs := range logs {
		var cordon, down time.Time
		for _, e := range evs {
			switch e.Kind {
			case local.EventCordon:
				cordon = e.Time
			case local.EventNotReady:
				down = e.Time
			case local.EventReady:
				if !down.IsZero() {
					reboots = append(reboots, e.Time.Sub(down))
				}
			case local.EventUncordon:
				if cordon.IsZero() {
					t.Fatalf("node %s uncordoned without a cordon: %v", node, evs)
				}
				outOfService = append(outOfService, e.Time.Sub(cordon))
			}
		}
	}
	return reboots, outOfService
}

// Apply records each finished node's step times in the state; the next plan estimates
// the pool from their medians ("from 3 observed nodes"), where the first plan took the
// stated defaults. The recorded times are checked against the nodes' own event logs.
func TestSecondPlanEstimatesFromRecordedTimes(t *testing.T) {
	dir := timedFleet(t, "worker=3", "300ms", "500ms")
	first := planEstimate(t, dir, "worker")
	if first.ObservedNodes != 0 || !contains(first.Defaults, "reboot") || !contains(first.Defaults, "drain") {
		t.Errorf("first plan's estimate %+v: want it from defaults, drain and reboot named", first)
	}
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply exit %d\n%s%s", code, out, errOut)
	}
	st := readState(t, dir)
	times := st.StepTimes["worker"]
	if times == nil || times.Nodes != 3 || len(times.Steps[model.StepReboot]) != 3 || len(times.Steps[model.StepDrain]) != 3 || len(times.Health) != 3 {
		t.Fatalf("state's step times of pool worker: %+v; want 3 nodes, each with a drain, a reboot and its health gates", times)
	}
	// The nodes' event logs: each reboot lasted reboot_duration, and the recorded reboot
	// step (which waits for the node to come back) is not shorter, nor much longer.
	reboots, out := spans(t, dir)
	logged, _ := model.Median(reboots)
	recorded, _ := times.Median(model.StepReboot)
	if logged < 500*time.Millisecond || recorded < logged || recorded > logged+time.Second {
		t.Errorf("reboot: recorded median %v, the nodes' logs %v: want the record no shorter than the logs (≥ 500ms) and within 1s", recorded, logged)
	}
	if drain, _ := times.Median(model.StepDrain); drain < 300*time.Millisecond {
		t.Errorf("drain: recorded median %v, want at least drain_duration 300ms", drain)
	}

	// The next change: estimated from what was recorded, each step kind its median.
	p := filepath.Join(dir, "main.hcl")
	hcl, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(hcl), `content = "x\n"`, `content = "y\n"`, 1)), 0o644)
	second := planEstimate(t, dir, "worker")
	want, _ := model.Median(times.Health)
	for _, k := range []model.StepKind{model.StepCordon, model.StepDrain, model.StepWrite, model.StepReboot, model.StepVerify, model.StepUncordon} {
		m, ok := times.Median(k)
		if !ok {
			t.Fatalf("no recorded time of %s steps: %+v", k, times)
		}
		want += m
	}
	if second.ObservedNodes != 3 || len(second.Defaults) != 0 || second.Node != want || second.Waves != 3 || second.Duration != 3*want {
		t.Errorf("second plan's estimate %+v: want from 3 observed nodes, no defaults, a node %v, 3 waves of it", second, want)
	}
	// A node's estimate is about what a node was out of service for, as its log says
	// (plus its health gates after the uncordon; medians per step kind, summed, are not
	// quite the median node's sum).
	if o, _ := model.Median(out); second.Node < o-o/10 || second.Node > o+time.Second {
		t.Errorf("a node's estimate %v; its log shows it out of service %v (median): want within 10%% below, 1s above", second.Node, o)
	}
	_, text, _ := mcp(t, dir, "plan", "-no-color")
	if !strings.Contains(text, "estimate: ~") || !strings.Contains(text, "from 3 observed nodes") {
		t.Errorf("plan text does not show the estimate from 3 observed nodes:\n%s", text)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Only nodes that finished are recorded: a failed node's steps tell nothing of how long an
// update takes.
func TestFailedNodeTimesNotRecorded(t *testing.T) {
	dir := timedFleet(t, "worker=3", "0s", "0s")
	if code, _, errOut := mcp(t, dir, "fleet", "set", "-fleet", filepath.Join(dir, "fleet"), "worker-1", "fault.write=*"); code != 0 {
		t.Fatal(errOut)
	}
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code == 0 {
		t.Fatalf("apply with worker-1's writes failing exited 0\n%s%s", out, errOut)
	}
	times := readState(t, dir).StepTimes["worker"]
	if times == nil || times.Nodes != 1 || len(times.Steps[model.StepWrite]) != 1 {
		t.Errorf("state's step times %+v: want worker-0's alone (worker-1 failed, worker-2 not started)", times)
	}
}
