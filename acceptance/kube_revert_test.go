package acceptance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
)

// revertPools: a pool that reverts on failure, whose command check fails on a node that
// has /etc/fragile once /etc/x.conf says "bad".
func revertPools(content string) string {
	return `
pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = 1
  on_failure      = "revert"
  health_check "sturdy" {
    command = ["/bin/sh", "-c", "! { test -e \"$MCP_NODE_ROOT/etc/fragile\" && grep -q bad \"$MCP_NODE_ROOT/etc/x.conf\"; }"]
    timeout = "3s"
  }
}

config "50-x" {
  pools = ["worker"]
  file "/etc/x.conf" {
    content   = "` + content + `\n"
    on_change = ["none"]
  }
}
`
}

// TestKubeRevertAndRollback: on a real API server with real agents, a rollout whose health
// check fails on its second node puts both nodes it changed back on the config they ran
// before (on_failure = "revert"): apply exits 1 and its JSON summary names them; every
// node's root and Node say the old config. Then, the check fixed, a plain apply goes
// forward again, and mcp rollback brings every node back, the history read from the state
// in the cluster's Secrets; prune keeps the config rolled back from.
func TestKubeRevertAndRollback(t *testing.T) {
	waiting(t)
	c := newKubeCluster(t, revertPools("good"), map[string]int{"worker": 3})
	if out, code := c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("first apply: exit %d\n%s", code, lastLines(out, 30))
	}
	good := c.node(t, "worker-0").Annotations[protocol.CurrentConfig]
	c.writeConfig(t, revertPools("bad"))
	plan, _ := c.mcp(t, "mcp-apply", "plan", "-no-color")
	second := regexp.MustCompile(`node\.(\S+)\s+\S+\s+2\s`).FindStringSubmatch(plan)
	if second == nil || !strings.Contains(plan, "on failure: revert the nodes this apply updates to "+good) {
		t.Fatalf("plan:\n%s", plan)
	}
	fragile := c.short(second[1])
	if err := os.WriteFile(filepath.Join(c.agents[fragile].root, "etc", "fragile"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-json")
	var sum struct {
		Summary struct {
			Reverts []struct {
				Pool, To, Why string
				Reverted      []string
				NotReverted   map[string]string
			}
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, `"type":"apply_summary"`) {
			json.Unmarshal([]byte(l), &sum)
		}
	}
	rv := sum.Summary.Reverts
	if code != 1 || len(rv) != 1 || rv[0].To != good || len(rv[0].Reverted) != 2 || len(rv[0].NotReverted) != 0 ||
		!slices.Contains(rv[0].Reverted, c.name(fragile)) || !strings.Contains(rv[0].Why, `health gate "sturdy" did not pass`) {
		t.Fatalf("apply with %s failing its check: exit %d, reverts %+v\n%s", fragile, code, rv, lastLines(out, 8))
	}
	c.onConfig(t, "good", good)

	// Fixed: a plain apply goes forward again (the pool was marked rolled back); mcp
	// rollback then goes back, as any plan.
	os.Remove(filepath.Join(c.agents[fragile].root, "etc", "fragile"))
	if out, code := c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color"); code != 0 || !strings.Contains(out, "pool was rolled back to "+good) {
		t.Fatalf("apply forward again: exit %d\n%s", code, lastLines(out, 40))
	}
	bad := c.node(t, "worker-0").Annotations[protocol.CurrentConfig]
	c.onConfig(t, "bad", bad)
	if out, code := c.mcp(t, "mcp-apply", "rollback", "-auto-approve", "-no-color", "worker"); code != 0 {
		t.Fatalf("rollback: exit %d\n%s", code, lastLines(out, 30))
	}
	c.onConfig(t, "good", good)
	if out, code := c.mcp(t, "mcp-apply", "prune", "-dry-run"); code != 0 || !strings.Contains(out, bad) {
		t.Errorf("prune -dry-run does not keep %s (the pool's history): exit %d\n%s", bad, code, out)
	}
}

// onConfig checks from each node's root and its Node that it carries content and runs
// rendered, settled.
func (c *kubeCluster) onConfig(t *testing.T, content, rendered string) {
	t.Helper()
	for name, a := range c.agents {
		b, err := os.ReadFile(filepath.Join(a.root, "etc", "x.conf"))
		ann := c.node(t, name).Annotations
		if err != nil || string(b) != content+"\n" || ann[protocol.CurrentConfig] != rendered || ann[protocol.State] != "Done" || c.node(t, name).Spec.Unschedulable {
			t.Errorf("node %s: x.conf %q (%v), current %s (want %q on %s), state %s", name, b, err, ann[protocol.CurrentConfig], content, rendered, ann[protocol.State])
		}
	}
}
