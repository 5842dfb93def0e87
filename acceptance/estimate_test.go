package acceptance

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/testkit/benchdoc"
)

// estimateTolerance is how far the plan's estimate may be from what the rollout then
// took, as the nodes' event logs measure it: a quarter of it.
const estimateTolerance = 0.25

// The plan's estimate of a rollout, made from the step times apply recorded in the
// earlier one, is within estimateTolerance of what the rollout then takes, measured from
// the nodes' event logs (the first node's cordon to the last node's release), on a local
// fleet whose drains and reboots take time.
func TestEstimateMatchesTheRollout(t *testing.T) {
	exclusive(t)
	dir := t.TempDir()
	mcp := mcpBinary(t)
	runMCP(t, mcp, "-chdir="+dir, "fleet", "init", "fleet", "-nodes", "worker=6", "-zones", "a")
	hcl := `provider "local" {
  fleet           = "./fleet"
  drain_duration  = "400ms"
  reboot_duration = "800ms"
}

pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = 2
}

config "50-x" {
  pools = ["worker"]
  file "/etc/x.conf" { content = "CONTENT\n" }
}
`
	rollout := func(content string) (estimate *planner.Estimate, took time.Duration) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(strings.Replace(hcl, "CONTENT", content, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(mcp, "-chdir="+dir, "plan", "-json").Output()
		if err != nil {
			t.Fatalf("plan -json: %v\n%s", err, out)
		}
		ests, _, err := benchdoc.PlanEstimates(out)
		if err != nil || ests["worker"] == nil {
			t.Fatalf("plan JSON without the pool's estimate (%v):\n%s", err, out)
		}
		start := time.Now()
		if out, err := exec.Command(mcp, "-chdir="+dir, "apply", "-auto-approve", "-no-color").CombinedOutput(); err != nil {
			t.Fatalf("apply: %v\n%s", err, out)
		}
		return ests["worker"], rolloutSpan(t, dir, start)
	}
	first, firstTook := rollout("x")
	if first.ObservedNodes != 0 {
		t.Errorf("the first plan's estimate %+v: want it from defaults", first)
	}
	second, took := rollout("y")
	t.Logf("first rollout: estimated %v from defaults, took %v; second: estimated %v from %d observed nodes, took %v",
		first.Duration, firstTook, second.Duration, second.ObservedNodes, took)
	if second.ObservedNodes != 6 || len(second.Defaults) != 0 || second.Waves != 3 {
		t.Errorf("the second plan's estimate %+v: want 3 waves from 6 observed nodes, no defaults", second)
	}
	if off := float64(second.Duration-took) / float64(took); off > estimateTolerance || off < -estimateTolerance {
		t.Errorf("estimated %v, the rollout took %v by the nodes' logs: %+.0f%%, want within ±%.0f%%",
			second.Duration, took, 100*off, 100*estimateTolerance)
	}
}

// rolloutSpan is how long the rollout that began after start took by the nodes' event
// logs: from the first cordon to the last release of a node's claim.
func rolloutSpan(t *testing.T, dir string, start time.Time) time.Duration {
	t.Helper()
	logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	var first, last time.Time
	for _, evs := range logs {
		for _, e := range evs {
			switch {
			case e.Time.Before(start):
			case e.Kind == local.EventCordon && (first.IsZero() || e.Time.Before(first)):
				first = e.Time
			case e.Kind == local.EventRelease && e.Time.After(last):
				last = e.Time
			}
		}
	}
	if first.IsZero() || last.Before(first) {
		t.Fatalf("no cordon and release in the nodes' logs after %v", start)
	}
	return last.Sub(first)
}
