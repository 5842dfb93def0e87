package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/testkit/chaos"
)

// smallFleet makes a fleet of workers (max_unavailable 1) and one config whose file needs a
// reboot; extra is appended to the configuration.
func smallFleet(t *testing.T, nodes, extra string) string {
	t.Helper()
	dir := t.TempDir()
	if code, _, errOut := mcp(t, dir, "fleet", "init", "fleet", "-nodes", nodes, "-zones", "a"); code != 0 {
		t.Fatal(errOut)
	}
	hcl := `provider "local" {
  fleet        = "./fleet"
  node_timeout = "2s"
}

pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = 1
}

config "50-x" {
  pools = ["worker"]
  file "/etc/x.conf" { content = "x\n" }
}
` + extra
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// judge reads the fleet's event logs and checks the promises against budget.
func judge(t *testing.T, dir string, budget map[string]int) *chaos.Report {
	t.Helper()
	logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	return chaos.Judge(logs, budget)
}

// The first finding: a NotReady node in the rollout was not counted, and apply
// drained a second node beside it. Now the plan shows its condition, updates it first in
// its own slot, defers the rest, and the fleet's own records never show two nodes out.
func TestNotReadyNodeInTheRolloutKeepsTheBudget(t *testing.T) {
	dir := smallFleet(t, "worker=4", "")
	if code, _, errOut := mcp(t, dir, "fleet", "set", "worker-3", "ready=false"); code != 0 {
		t.Fatal(errOut)
	}
	code, out, errOut := mcp(t, dir, "plan", "-no-color")
	if code != 0 || !regexp.MustCompile(`(?s)node\.worker-3 .*condition: NotReady; updated in its own slot`).MatchString(out) ||
		!strings.Contains(out, "1 unavailable") || !strings.Contains(out, "3 node changes deferred") {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	for run := 0; run < 4; run++ {
		code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color")
		// Deferred nodes are changes the plan included and this apply did not make: not a
		// success (exit 2: run apply again), but not a failure either.
		converged := code == 0
		if !converged && (code != 2 || !strings.Contains(out, "Apply incomplete.") || !strings.Contains(out, "not started")) {
			t.Fatalf("apply %d: exit %d\n%s%s", run, code, out, errOut)
		}
		if planCode, _, _ := mcp(t, dir, "plan", "-detailed-exitcode"); (planCode == 0) != converged {
			t.Fatalf("apply %d exited %d, and the next plan exits %d", run, code, planCode)
		}
		if converged {
			break
		}
	}
	if code, out, _ := mcp(t, dir, "plan", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Fatalf("not converged:\n%s", out)
	}
	r := judge(t, dir, map[string]int{"worker": 1})
	if !r.OK() || r.MaxOut["worker"] != 1 || r.Reboots != 4 {
		t.Errorf("from the event logs:\n%s", r)
	}
}

// Each injected fault fails its node with an error naming node and step, stops its pool
// (the other pool finishes), exits 1, and the next plan shows exactly what is left.
func TestInjectedFaults(t *testing.T) {
	infra := `
pool "infra" {
  node_selector   = { "node-role.kubernetes.io/infra" = "" }
  max_unavailable = 1
}

config "60-y" {
  pools = ["worker", "infra"]
  file "/etc/y.conf" {
    content   = "y\n"
    on_change = ["restart:y.service"]
  }
}
`
	for _, tc := range []struct {
		node, fault, want string
		flags             []string
	}{
		{"worker-0", "fault.write=/etc/x.conf", "node worker-0: write /etc/x.conf: injected fault (fault.write in nodes/worker-0/node.json)", nil},
		// Workers reboot (which supersedes restarts); infra restarts y.service.
		{"infra-0", "fault.restart=y.service", "node infra-0: restart y.service: injected fault (fault.restart in nodes/infra-0/node.json)", nil},
		{"worker-0", "fault.reboot=hang", "node worker-0: reboot: the node did not come back within 2s", nil},
		{"worker-0", "fault.drain=pdb", "  drain node worker-0: evictions refused", []string{"-drain-timeout=300ms", "-drain-retry-delay=50ms"}},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			dir := smallFleet(t, "worker=3,infra=2", infra)
			if code, _, errOut := mcp(t, dir, "fleet", "set", tc.node, tc.fault); code != 0 {
				t.Fatal(errOut)
			}
			code, out, errOut := mcp(t, dir, append([]string{"apply", "-auto-approve", "-no-color"}, tc.flags...)...)
			if code != 1 || !strings.Contains(out+errOut, tc.want) {
				t.Fatalf("apply: exit %d, want 1 and %q\n%s%s", code, tc.want, out, errOut)
			}
			failed, other := "worker", []string{"infra-0", "infra-1"}
			if strings.HasPrefix(tc.node, "infra") {
				failed, other = "infra", []string{"worker-0", "worker-1", "worker-2"}
			}
			if !strings.Contains(out, "pool."+failed+": stopped") {
				t.Errorf("pool %s did not stop:\n%s", failed, out)
			}
			for _, n := range other {
				if !strings.Contains(out, "node."+n+": updated") {
					t.Errorf("node %s of the other pool did not finish:\n%s", n, out)
				}
			}
			// The next plan lists the failed pool's nodes (failed, or not started) and no node
			// of the other pool.
			_, plan, _ := mcp(t, dir, "plan", "-no-color")
			for _, n := range []string{"worker-0", "worker-1", "worker-2", "infra-0", "infra-1"} {
				if strings.HasPrefix(n, failed) != strings.Contains(plan, "node."+n+" ") {
					t.Errorf("next plan and node.%s (pool %s failed):\n%s", n, failed, plan)
				}
			}
			if r := judge(t, dir, map[string]int{"worker": 1, "infra": 1}); r.MaxOut["worker"] > 1 || r.MaxOut["infra"] > 1 || r.DoubleReboots > 0 {
				t.Errorf("from the event logs:\n%s", r)
			}
		})
	}
}

// apply -lock=false is accepted, says on stderr what it gives up, takes no lock, and still
// claims each node it works on (the fleet's records show the claims, all released).
func TestApplyWithoutTheLockWarns(t *testing.T) {
	dir := quickstart(t)
	code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color", "-lock=false")
	if code != 0 || !strings.Contains(errOut, "Warning: -lock=false") || !strings.Contains(errOut, "the state lock") {
		t.Fatalf("apply -lock=false: exit %d\n%s%s", code, out, errOut)
	}
	logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	for node, evs := range logs {
		var claims, releases int
		for _, e := range evs {
			switch e.Kind {
			case local.EventClaim:
				claims++
			case local.EventRelease:
				releases++
			}
		}
		if claims != 1 || releases != 1 {
			t.Errorf("%s: %d claims and %d releases, want one of each", node, claims, releases)
		}
	}
	if code, _, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 || strings.Contains(errOut, "Warning") {
		t.Errorf("apply with the lock: exit %d, %s", code, errOut)
	}
}
