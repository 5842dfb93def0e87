package acceptance

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
)

const chosenPools = `
pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = 1
}

config "10-all" {
  pools = ["worker"]
  file "/etc/mcp-all" {
    content   = "all\n"
    on_change = ["none"]
  }
}
`

// TestKubeConfigForChosenNode: on the real apiserver with real agents, a config naming
// one node reaches that node alone: its agent fetches its own variant by name from the
// boot server and writes the file into its root; the other node's root gets the pool's
// file only; each Node reports Done on its own config; the next plan is empty. Judged from
// the agents' roots and the Node objects.
func TestKubeConfigForChosenNode(t *testing.T) {
	waiting(t)
	c := newKubeCluster(t, chosenPools, map[string]int{"worker": 2})
	c.writeConfig(t, chosenPools+fmt.Sprintf(`
config "20-chosen" {
  pools = ["worker"]
  nodes = [%q]
  file "/etc/mcp-chosen" {
    content   = "chosen\n"
    on_change = ["none"]
  }
}
`, c.name("worker-1")))
	out, code := c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color")
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, lastLines(out, 40))
	}
	read := func(node, path string) string {
		b, _ := os.ReadFile(filepath.Join(c.agents[node].root, path))
		return string(b)
	}
	if got := read("worker-1", "etc/mcp-chosen"); got != "chosen\n" {
		t.Errorf("worker-1 (chosen): /etc/mcp-chosen %q", got)
	}
	if got := read("worker-0", "etc/mcp-chosen"); got != "" {
		t.Errorf("worker-0 (not chosen) got /etc/mcp-chosen: %q", got)
	}
	for _, n := range []string{"worker-0", "worker-1"} {
		if got := read(n, "etc/mcp-all"); got != "all\n" {
			t.Errorf("%s: /etc/mcp-all %q, want the pool's", n, got)
		}
	}
	a0, a1 := c.node(t, "worker-0").Annotations, c.node(t, "worker-1").Annotations
	if a0[protocol.CurrentConfig] != c.pointer(t, "worker") || a1[protocol.CurrentConfig] == a0[protocol.CurrentConfig] ||
		a1[protocol.State] != "Done" {
		t.Errorf("worker-0 on %s (pool's pointer %s), worker-1 %s on %s: want worker-1 Done on its own variant",
			a0[protocol.CurrentConfig], c.pointer(t, "worker"), a1[protocol.State], a1[protocol.CurrentConfig])
	}
	if out, code := c.mcp(t, "mcp-apply", "plan", "-no-color", "-detailed-exitcode"); code != 0 {
		t.Errorf("plan after apply: exit %d\n%s", code, lastLines(out, 20))
	}
}
