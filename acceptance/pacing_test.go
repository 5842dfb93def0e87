package acceptance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/testkit/chaos"
)

// pacedFleet makes a local fleet of worker=n in one zone (the plan's order is then
// worker-0, worker-1, …) and writes main.hcl: the worker pool with the given extra body,
// and a config whose change cordons, drains, writes and uncordons every node (or, with
// reboot, reboots it after the write, for that long).
func pacedFleet(t *testing.T, n string, pool string, reboot ...string) (dir, mcp string) {
	t.Helper()
	dir, mcp = t.TempDir(), mcpBinary(t)
	runMCP(t, mcp, "-chdir="+dir, "fleet", "init", "fleet", "-nodes", "worker="+n, "-zones", "a")
	provider, policy := `provider "local" { fleet = "./fleet" }`, `on_change = ["drain"]`
	if len(reboot) > 0 {
		provider = `provider "local" {
  fleet           = "./fleet"
  reboot_duration = "` + reboot[0] + `"
}`
		policy = ""
	}
	hcl := provider + `

pool "worker" {
` + pool + `
}

config "50-x" {
  pools = ["worker"]
  file "/etc/x.conf" {
    content = "x\n"
    ` + policy + `
  }
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, mcp
}

func run(t *testing.T, mcp string, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(mcp, args...).CombinedOutput()
	return string(out), err
}

// first returns the time of the node's first event of kind (zero: none).
func first(evs []local.Event, kind local.EventKind) time.Time {
	for _, e := range evs {
		if e.Kind == kind {
			return e.Time
		}
	}
	return time.Time{}
}

// last returns the time of the node's last event of kind (zero: none).
func last(evs []local.Event, kind local.EventKind) time.Time {
	var t time.Time
	for _, e := range evs {
		if e.Kind == kind {
			t = e.Time
		}
	}
	return t
}

// canary + soak: the fleet's own event log shows the canary done (uncordoned) and the soak
// passed before any other node of the pool is cordoned.
func TestCanaryAndSoakOnTheLocalFleet(t *testing.T) {
	exclusive(t)
	dir, mcp := pacedFleet(t, "4", `  max_unavailable = 2
  canary {
    count = 1
    soak  = "2s"
  }`)
	plan, err := run(t, mcp, "-chdir="+dir, "plan", "-no-color")
	if err != nil || !strings.Contains(plan, "canary 1 then soak 2s") || !strings.Contains(plan, "1 (canary)") {
		t.Fatalf("plan: %v, want the pacing and the canary node shown:\n%s", err, plan)
	}
	runMCP(t, mcp, "-chdir="+dir, "plan", "-out=p.plan")
	nodes := jsonPlanNodes(t, runMCP(t, mcp, "-chdir="+dir, "show", "-json", "p.plan"))
	out, err := run(t, mcp, "-chdir="+dir, "apply", "-json", "p.plan")
	if err != nil || !strings.Contains(out, "canary soak 2s after worker-0") {
		t.Fatalf("apply: %v, want the canary soak reported:\n%s", err, out)
	}
	assertAppliedAsPlanned(t, filepath.Join(dir, "fleet"), nil, nodes, out)
	logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	canaryDone := last(logs["worker-0"], local.EventUncordon)
	if canaryDone.IsZero() {
		t.Fatalf("the canary worker-0 was never uncordoned: %v", logs["worker-0"])
	}
	for _, n := range []string{"worker-1", "worker-2", "worker-3"} {
		c := first(logs[n], local.EventCordon)
		if c.IsZero() {
			t.Errorf("%s was never updated: %v", n, logs[n])
			continue
		}
		if gap := c.Sub(canaryDone); gap < 2*time.Second {
			t.Errorf("%s cordoned %s after the canary finished, before its 2s soak ended", n, gap)
		}
	}
}

// max_failures = 2 with faults on worker-0 and worker-2 (their writes fail, are rolled
// back, and the nodes report Degraded, which counts against max_unavailable): worker-0
// fails at once while worker-1 reboots; worker-2 starts after worker-1 — after the first
// failure — and fails; then no other node of the pool is touched.
func TestMaxFailuresOnTheLocalFleet(t *testing.T) {
	exclusive(t)
	dir, mcp := pacedFleet(t, "5", `  max_unavailable = 2
  max_failures    = 2`, "1s")
	for _, n := range []string{"worker-0", "worker-2"} {
		if out, err := run(t, mcp, "fleet", "set", "-fleet", filepath.Join(dir, "fleet"), n, "fault.write=*"); err != nil {
			t.Fatalf("fleet set: %v\n%s", err, out)
		}
	}
	plan, _ := run(t, mcp, "-chdir="+dir, "plan", "-no-color")
	if !strings.Contains(plan, "max_failures 2") {
		t.Errorf("plan does not show max_failures:\n%s", plan)
	}
	// A pool stopped wrongly would wait for room behind its Degraded nodes: not for long.
	out, err := run(t, mcp, "-chdir="+dir, "apply", "-auto-approve", "-no-color", "-budget-wait=20s")
	if err == nil || !strings.Contains(out, "1 updated, 2 failed, 2 not started") {
		t.Fatalf("apply: %v, want worker-1 updated, two failed and two not started:\n%s", err, out)
	}
	logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	if first(logs["worker-1"], local.EventDone).IsZero() {
		t.Errorf("worker-1 was not updated: %v", logs["worker-1"])
	}
	if c, d := first(logs["worker-2"], local.EventCordon), first(logs["worker-0"], local.EventDegraded); c.IsZero() || d.IsZero() || c.Before(d) {
		t.Errorf("worker-2 cordoned at %v, worker-0 failed at %v: want worker-2 started after the first failure", c, d)
	}
	for _, n := range []string{"worker-3", "worker-4"} {
		for _, e := range logs[n] {
			if e.Kind == local.EventCordon || e.Kind == local.EventWorking || e.Kind == local.EventDrain {
				t.Errorf("%s was touched after the second failure: %s at %s", n, e.Kind, e.Time)
			}
		}
	}
	for _, n := range []string{"worker-0", "worker-2"} {
		if c, u := last(logs[n], local.EventCordon), last(logs[n], local.EventUncordon); c.IsZero() || u.Before(c) {
			t.Errorf("%s (failed, rolled back) is left cordoned: %v", n, logs[n])
		}
	}
}

// A closed window defers the pool: the plan names the next opening; apply -no-wait touches
// nothing of the pool, names the next opening and exits 1; the boot pointer stays.
func TestClosedWindowDefersThePool(t *testing.T) {
	exclusive(t)
	day := time.Now().UTC().AddDate(0, 0, 2)
	next := time.Date(day.Year(), day.Month(), day.Day(), 12, 0, 0, 0, time.UTC)
	dir, mcp := pacedFleet(t, "2", `  window {
    days      = ["`+strings.ToLower(next.Weekday().String()[:3])+`"]
    start     = "12:00"
    duration  = "1h"
    time_zone = "UTC"
  }`)
	opening := next.Format("Mon 2006-01-02 15:04 MST")
	plan, err := run(t, mcp, "-chdir="+dir, "plan", "-no-color")
	if err != nil || !strings.Contains(plan, "window: closed: next opening "+opening) {
		t.Fatalf("plan: %v, want the next opening %s named:\n%s", err, opening, plan)
	}
	js, _ := run(t, mcp, "-chdir="+dir, "plan", "-json")
	var doc struct {
		MCP struct {
			Pools []struct {
				Window struct {
					Open        bool      `json:"open"`
					NextOpening time.Time `json:"next_opening"`
				} `json:"window"`
			} `json:"pools"`
		} `json:"mcp"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil || len(doc.MCP.Pools) != 1 ||
		doc.MCP.Pools[0].Window.Open || !doc.MCP.Pools[0].Window.NextOpening.Equal(next) {
		t.Errorf("plan JSON: %v, want the window closed and next_opening %s:\n%s", err, next, js)
	}
	out, err := run(t, mcp, "-chdir="+dir, "apply", "-auto-approve", "-no-color", "-no-wait")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(out, "next opening "+opening) ||
		!strings.Contains(out, "0 updated, 0 failed, 2 not started") {
		t.Fatalf("apply -no-wait: %v, want exit 2 (not started) naming the next opening %s:\n%s", err, opening, out)
	}
	logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	for n, evs := range logs {
		for _, e := range evs {
			if e.Kind == local.EventCordon || e.Kind == local.EventWorking {
				t.Errorf("%s was touched outside its window: %s at %s", n, e.Kind, e.Time)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "mcp.state"))
	if err == nil && strings.Contains(string(b), `"worker"`) {
		t.Errorf("the worker pool's boot pointer moved although its rollout did not start:\n%s", b)
	}
}

// A window that closes mid-rollout: the node started finishes (its health check holds it
// until the window has closed), nothing more starts, the nodes left are named as not
// started, no node is left cordoned and the lock is released — at once with -no-wait, and
// without it when the next opening (tomorrow) is beyond -budget-wait. Before, apply waited
// for the next opening holding the lock.
func TestWindowClosingMidRolloutEndsApply(t *testing.T) {
	exclusive(t)
	if testing.Short() {
		t.Skip("waits for a real window to close")
	}
	// Without -no-wait, -budget-wait bounds the wait for the next opening; it must outlast
	// worker-0's check, as it bounds the wait for room in the budget too.
	for _, flag := range []string{"-no-wait", "-budget-wait=2m"} {
		t.Run(flag, func(t *testing.T) {
			t.Parallel()
			dir, mcp := pacedFleet(t, "3", "  max_unavailable = 1\n#window#")
			// The window opened this minute and closes 20s from now: time enough for
			// apply to start worker-0 in it on a loaded machine.
			now := time.Now().UTC()
			start := now.Truncate(time.Minute)
			end := now.Add(20 * time.Second).Truncate(time.Second)
			window := fmt.Sprintf(`  window {
    days      = [%q]
    start     = %q
    duration  = %q
    time_zone = "UTC"
  }
  health_check "after-the-window" {
    command = ["/bin/sh", "-c", "while [ $(date +%%s) -le %d ]; do sleep 0.2; done"]
    timeout = "5m"
  }`, strings.ToLower(start.Weekday().String()[:3]), start.Format("15:04"), end.Sub(start).String(), end.Unix())
			hcl := filepath.Join(dir, "main.hcl")
			b, err := os.ReadFile(hcl)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(hcl, bytes.Replace(b, []byte("#window#"), []byte(window), 1), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, mcp, "-chdir="+dir, "apply", "-auto-approve", "-no-color", flag).CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("apply %s still waited 5 minutes after the window closed:\n%s", flag, lastLines(string(out), 15))
			}
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() <= 0 ||
				!strings.Contains(string(out), "pool worker: 2 nodes not started (worker-1, worker-2): its maintenance window closed during the rollout") {
				t.Errorf("apply %s: %v, want a failure naming the nodes not started:\n%s", flag, err, lastLines(string(out), 15))
			}
			logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
			if err != nil {
				t.Fatal(err)
			}
			if last(logs["worker-0"], local.EventUncordon).IsZero() {
				t.Errorf("worker-0, started in the window, did not finish: %v", logs["worker-0"])
			}
			for _, n := range []string{"worker-1", "worker-2"} {
				if !first(logs[n], local.EventCordon).IsZero() || !first(logs[n], local.EventWorking).IsZero() {
					t.Errorf("%s was started after the window closed: %v", n, logs[n])
				}
			}
			if r := chaos.Judge(logs, map[string]int{"worker": 1}); len(r.LeftCordoned) > 0 || !r.OK() {
				t.Errorf("from the event logs:\n%s", r)
			}
			if _, err := os.Stat(filepath.Join(dir, "mcp.state.lock")); !os.IsNotExist(err) {
				t.Errorf("the state lock is left (%v)", err)
			}
		})
	}
}
