package acceptance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
)

// writesState keeps the state out of the cluster, as make bench-kube does: what the API
// server counts is then the rollout's own traffic (hand-overs and the agents' reports),
// not the state backend's.
const writesState = "state {\n  backend = \"local\"\n}\n"

// writesPools is one pool of in-place updates (a file whose change restarts a unit), k at
// a time.
func writesPools(k int, server string) string {
	return fmt.Sprintf(`
pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = %d
}

config "50-chrony" {
  pools = ["worker"]
  file "/etc/chrony.conf" {
    content   = "server %s iburst\n"
    on_change = ["restart:chronyd.service"]
  }
}
`, k, server)
}

// maxWritesPerNode is issue 35's floor: the hand-over and the agent's final report, and
// half a write to spare.
const maxWritesPerNode = 2.5

// TestKubeInPlaceWritesPerNode rolls an in-place change over N nodes (MCP_KUBE_WRITES_NODES,
// default 20), each with its real agent process, and counts the writes (POST, PUT, PATCH,
// DELETE) of every client from the API server's own apiserver_request_total. The writes the
// cluster makes anyway (leader election, the agents' and controllers' background) are
// measured over a quiet stretch before the rollout and taken off at that rate; what is left,
// per node updated, must be at most 2.5.
func TestKubeInPlaceWritesPerNode(t *testing.T) {
	waiting(t)
	n := 20
	if s := os.Getenv("MCP_KUBE_WRITES_NODES"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("MCP_KUBE_WRITES_NODES=%q: want a node count", s)
		}
		n = v
	}
	k := max(n/4, 1)
	// A control plane of its own: the API server's counts are of every client, and other
	// tests' would be in them.
	c := newPrivateKubeCluster(t, writesPools(k, "a.example.com"), map[string]int{"worker": n},
		func(c *kubeCluster) { c.stateBlock = writesState })
	out, code := c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color")
	if code != 0 {
		t.Fatalf("first apply: exit %d\n%s", code, lastLines(out, 60))
	}
	c.settled(t)

	// The background: writes per second while nothing rolls out.
	ctx := context.Background()
	quiet0, err := scrapeAPIServer(ctx, c.env.Client)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	time.Sleep(10 * time.Second)
	quiet1, err := scrapeAPIServer(ctx, c.env.Client)
	if err != nil {
		t.Fatal(err)
	}
	background := writes(quiet1.requestsSince(quiet0)) / time.Since(t0).Seconds()

	c.writeConfig(t, writesPools(k, "b.example.com"))
	before, err := scrapeAPIServer(ctx, c.env.Client)
	if err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	out, code = c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color")
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, lastLines(out, 20))
	}
	// What the agents write after their Done (a drift check) is the rollout's too.
	c.settled(t)
	after, err := scrapeAPIServer(ctx, c.env.Client)
	if err != nil {
		t.Fatal(err)
	}
	window := time.Since(t1)
	reqs := after.requestsSince(before)
	total := writes(reqs)
	perNode := (total - background*window.Seconds()) / float64(n)

	var s strings.Builder
	fmt.Fprintf(&s, "in-place rollout of %d nodes (k=%d) in %v: %.0f writes by all clients, background %.2f/s over the window (%.1f), %.2f writes per node\n",
		n, k, window.Round(time.Millisecond), total, background, background*window.Seconds(), perNode)
	for _, key := range sortedKeys(reqs) {
		fmt.Fprintf(&s, "  %-28s %6.0f  (%.2f per node)\n", key, reqs[key], reqs[key]/float64(n))
	}
	t.Log(s.String())
	if perNode > maxWritesPerNode {
		t.Errorf("%.2f writes per node for an in-place update; want at most %.1f", perNode, maxWritesPerNode)
	}
	for name := range c.agents {
		ann := c.node(t, name).Annotations
		if ann[protocol.State] != model.StateDone || ann[protocol.CurrentConfig] != ann[protocol.DesiredConfig] {
			t.Errorf("node %s: %s on %q, desired %q", name, ann[protocol.State], ann[protocol.CurrentConfig], ann[protocol.DesiredConfig])
		}
		if b, err := os.ReadFile(filepath.Join(c.agents[name].root, "etc/chrony.conf")); err != nil || !strings.Contains(string(b), "b.example.com") {
			t.Errorf("node %s: /etc/chrony.conf = %q, %v", name, b, err)
		}
	}
}

// writes sums the writes (POST, PUT, PATCH, DELETE) of requests by "VERB resource".
func writes(reqs map[string]float64) float64 {
	var w float64
	for key, v := range reqs {
		verb, _, _ := strings.Cut(key, " ")
		switch verb {
		case "POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY":
			w += v
		}
	}
	return w
}

// settled waits until every node is Done on its desired config and the agents have
// written nothing to the Nodes for 5s (their drift checks run every 2s).
func (c *kubeCluster) settled(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(90 * time.Second)
	for {
		done := true
		for name := range c.agents {
			ann := c.node(t, name).Annotations
			if ann[protocol.State] != model.StateDone || ann[protocol.CurrentConfig] != ann[protocol.DesiredConfig] {
				done = false
			}
		}
		m0, err := scrapeAPIServer(ctx, c.env.Client)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		m1, err := scrapeAPIServer(ctx, c.env.Client)
		if err != nil {
			t.Fatal(err)
		}
		d := m1.requestsSince(m0)
		if done && d["PATCH nodes"]+d["PUT nodes"] == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the nodes did not settle within 90s (last 5s: %v)", d)
		}
	}
}
