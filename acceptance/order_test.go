package acceptance

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/testkit/chaos"
)

// A pool's order = [...] takes the nodes it names first, in that order, its canary the
// first of them, then the rest zone by zone, oldest first: as the nodes' own event logs
// show (the time each began its update), one node at a time.
func TestOrderListFirstOnTheNodes(t *testing.T) {
	exclusive(t)
	dir := t.TempDir()
	mcp := mcpBinary(t)
	runMCP(t, mcp, "-chdir="+dir, "fleet", "init", "fleet", "-nodes", "worker=4", "-zones", "a,b")
	hcl := `provider "local" { fleet = "./fleet" }

pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = 2
  order           = ["worker-3", "worker-1"]
  canary { count = 1 }
}

config "50-x" {
  pools = ["worker"]
  file "/etc/x.conf" {
    content   = "x\n"
    on_change = ["none"]
  }
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(mcp, "-chdir="+dir, "apply", "-auto-approve", "-no-color", "-parallelism=1").CombinedOutput(); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	order := chaos.Began(logs, time.Time{})
	// worker-0 and worker-2 are in zone a, worker-1 and worker-3 in b (fleet init deals
	// the zones round).
	if want := []string{"worker-3", "worker-1", "worker-0", "worker-2"}; !slices.Equal(order, want) {
		t.Errorf("the nodes began their updates in the order %q, want %q", order, want)
	}
}
