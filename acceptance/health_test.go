package acceptance

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/testkit/proctable"
)

// A pool's HTTP health gate that answers 500 for one node fails that node after its steps,
// with the gate's name and answer in the error, and its pool stops as for any failure: the
// nodes after it are never touched. Once the check answers 2xx, the next apply resumes the
// failed node (no step repeated) and finishes the pool.
func TestHealthGateFailsItsNode(t *testing.T) {
	exclusive(t)
	dir := t.TempDir()
	mcp := mcpBinary(t)
	runMCP(t, mcp, "-chdir="+dir, "fleet", "init", "fleet", "-nodes", "worker=4", "-zones", "a")
	var healed atomic.Bool
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		if r.URL.Path == "/healthz/worker-1" && !healed.Load() {
			http.Error(w, "app on worker-1 is broken", http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "ok")
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	hcl := fmt.Sprintf(`provider "local" {
  fleet = "./fleet"
}

pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = 1
  health_check "app" {
    http_get = "http://${node.address}:%s/healthz/${node.name}"
    timeout  = "1s"
  }
}

config "50-x" {
  pools = ["worker"]
  file "/etc/x.conf" {
    content   = "x\n"
    on_change = ["none"]
  }
}
`, port)
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	failGateThenHeal(t, mcp, dir, []string{
		`node worker-1: health gate "app" did not pass: GET http://127.0.0.1:` + port + `/healthz/worker-1: 500 Internal Server Error: app on worker-1 is broken`,
		"Nodes: 1 updated, 1 failed, 2 not started",
	}, func() { healed.Store(true) })
	if asked.Load() == 0 {
		t.Error("the health check was never asked")
	}
	if out, err := exec.Command(mcp, "-chdir="+dir, "plan", "-detailed-exitcode", "-no-color").CombinedOutput(); err != nil {
		t.Errorf("plan after both applies: %v (want exit 0, nothing left)\n%s", err, out)
	}
}

const commandCheckHCL = `provider "local" {
  fleet = "./fleet"
}

pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = 1
  health_check "not-broken" {
    command = ["/bin/sh", "-c", "test ! -e \"$MCP_NODE_ROOT/etc/broken\" || { echo \"$MCP_NODE: /etc/broken is there\"; exit 1; }"]
    timeout = "1s"
  }
%s}

config "50-x" {
  pools = ["worker"]
  file "/etc/x.conf" {
    content   = "x\n"
    on_change = ["none"]
  }
}
`

// A pool's command health check runs after each node's steps, on the local fleet in the
// node's root with MCP_NODE_ROOT and MCP_NODE set. Failing on one node, it fails that node
// with the check's name and the command's output, and its pool stops (max_failures 1): the
// nodes after it are never touched. Once the command passes, the next apply resumes the
// node (no step repeated) and finishes the pool. A check added later retargets no node.
func TestCommandHealthCheckFailsItsNode(t *testing.T) {
	exclusive(t)
	dir := t.TempDir()
	mcp := mcpBinary(t)
	runMCP(t, mcp, "-chdir="+dir, "fleet", "init", "fleet", "-nodes", "worker=4", "-zones", "a")
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(fmt.Sprintf(commandCheckHCL, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "fleet", "nodes", "worker-1", "root", "etc", "broken")
	if err := os.MkdirAll(filepath.Dir(broken), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(broken, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	failGateThenHeal(t, mcp, dir, []string{
		`node worker-1: health gate "not-broken" did not pass: ["/bin/sh" "-c"`,
		`exit 1: worker-1: /etc/broken is there`,
		"none exited 0 within 1s",
		"Nodes: 1 updated, 1 failed, 2 not started",
	}, func() {
		if err := os.Remove(broken); err != nil {
			t.Fatal(err)
		}
	})
	// Another check added to the converged pool changes no rendered config: nothing to do.
	more := `  health_check "kubelet" {
    command = ["/bin/true"]
  }
`
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(fmt.Sprintf(commandCheckHCL, more)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(mcp, "-chdir="+dir, "plan", "-detailed-exitcode", "-no-color").CombinedOutput(); err != nil {
		t.Errorf("plan after a check was added: %v (want exit 0: no node retargeted)\n%s", err, out)
	}
}

// failGateThenHeal runs apply on dir's fleet of four workers (max_unavailable 1) and wants
// it to fail worker-1 at a health gate, with each of wants in its output and worker-2 and
// worker-3 untouched (the pool stopped). After heal, a second apply must pass without
// writing worker-1's file again: its steps were done, only its gate was left.
func failGateThenHeal(t *testing.T, mcp, dir string, wants []string, heal func()) {
	t.Helper()
	out, err := exec.Command(mcp, "-chdir="+dir, "apply", "-auto-approve", "-no-color").CombinedOutput()
	if err == nil {
		t.Fatalf("apply succeeded, want worker-1 to fail its health gate:\n%s", out)
	}
	for _, want := range wants {
		if !strings.Contains(string(out), want) {
			t.Errorf("apply's output lacks %q:\n%s", want, out)
		}
	}
	assertUntouched(t, dir, "after worker-1 failed its gate in a stopped pool", "worker-2", "worker-3")
	written := filepath.Join(dir, "fleet", "nodes", "worker-1", "root", "etc", "x.conf")
	before, err := os.Stat(written)
	if err != nil {
		t.Fatalf("worker-1's steps did not run before its gate: %v", err)
	}
	heal()
	if out, err := exec.Command(mcp, "-chdir="+dir, "apply", "-auto-approve", "-no-color").CombinedOutput(); err != nil {
		t.Fatalf("apply after the gate passes: %v\n%s", err, out)
	}
	after, err := os.Stat(written)
	if err != nil || !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("worker-1's file was written again by the second apply (%v); its steps were done, only its gate was left", err)
	}
}

// assertUntouched fails the test for each of nodes its event log shows started or
// cordoned; why says when they should not have been.
func assertUntouched(t *testing.T, dir, why string, nodes ...string) {
	t.Helper()
	logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	for _, node := range nodes {
		for _, e := range logs[node] {
			if e.Kind == local.EventWorking || e.Kind == local.EventCordon {
				t.Errorf("%s was touched (%s) %s", node, e.Kind, why)
			}
		}
	}
}

// A command check that starts a background child and a daemon in a session of its own
// (setsid -f, which its process group does not hold) and fails leaves nothing running, try
// after try: apply fails the node at its gate, and the process table holds no process of
// the check (its argv carries a marker) once apply has exited.
func TestCommandCheckLeavesNoProcess(t *testing.T) {
	exclusive(t)
	dir := t.TempDir()
	mcp := mcpBinary(t)
	runMCP(t, mcp, "-chdir="+dir, "fleet", "init", "fleet", "-nodes", "worker=2", "-zones", "a")
	marker := fmt.Sprintf("mcp-check-leak-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() { proctable.KillMarked(marker) })
	check := fmt.Sprintf(`  health_check "leaves-a-child" {
    command = ["/bin/sh", "-c", "(sleep 300; : %[1]s) & setsid -f sh -c 'sleep 317; : %[1]s' </dev/null >/dev/null 2>&1; exit 1"]
    timeout = "1s"
  }
`, marker)
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(fmt.Sprintf(commandCheckHCL, check)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(mcp, "-chdir="+dir, "apply", "-auto-approve", "-no-color").CombinedOutput()
	if err == nil || !strings.Contains(string(out), `node worker-0: health gate "leaves-a-child" did not pass`) {
		t.Fatalf("apply: %v, want worker-0 failed at its gate:\n%s", err, out)
	}
	if !proctable.WaitGone(marker, 10*time.Second) {
		t.Errorf("%d processes the check started still run after apply exited", len(proctable.Marked(marker)))
	}
}
