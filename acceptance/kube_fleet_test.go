package acceptance

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
)

// fleetPools is the configuration both clusters of TestKubeFleetCanaryStopsProduction run:
// /etc/fleet.conf written in place, and a health check that fails where it says "broken".
func fleetPools(mode string) string {
	return fmt.Sprintf(`
pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = 1
  health_check "not-broken" {
    command = ["/bin/sh", "-c", "! grep -q broken \"$MCP_NODE_ROOT/etc/fleet.conf\" || { echo \"$MCP_NODE: fleet.conf says broken\"; exit 1; }"]
    timeout = "3s"
  }
}

config "50-fleet" {
  pools = ["worker"]
  file "/etc/fleet.conf" {
    content   = "mode = %s\nntp = ${var.ntp_server}\n"
    on_change = ["none"]
  }
}
`, mode)
}

// clusterBlock is the cluster block of c, reached through context name of the fleet's
// kubeconfig, its state in its own cluster.
func clusterBlock(name, stage, variables string, c *kubeCluster) string {
	return fmt.Sprintf(`
cluster %[1]q {
  stage     = %[2]q
  variables = { %[3]s }

  provider "kubernetes" {
    kubeconfig     = "./kubeconfig"
    context        = %[1]q
    fleet_selector = %[4]q
    namespace      = %[5]q
  }
  state {
    backend    = "kubernetes"
    kubeconfig = "./kubeconfig"
    context    = %[1]q
    namespace  = %[6]q
  }
}
`, name, stage, variables, c.fleet(), c.mcpNS, c.stateNS)
}

// writeKubeconfig writes one kubeconfig with a context per cluster, named as the map's
// keys, each holding the mcp-apply identity of that cluster.
func writeKubeconfig(t *testing.T, path string, clusters map[string]*kubeCluster) {
	t.Helper()
	out := clientcmdapi.NewConfig()
	for name, c := range clusters {
		in, err := clientcmd.LoadFromFile(c.kc["mcp-apply"])
		if err != nil {
			t.Fatal(err)
		}
		ctx := in.Contexts[in.CurrentContext]
		out.Clusters[name], out.AuthInfos[name] = in.Clusters[ctx.Cluster], in.AuthInfos[ctx.AuthInfo]
		out.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	if err := clientcmd.WriteToFile(*out, path); err != nil {
		t.Fatal(err)
	}
}

// applyMarks are what an apply leaves on a Node it takes up (a claim, a desired config,
// an update, a check request) and its cordon: a node untouched keeps them as they were.
func applyMarks(c *kubeCluster, t *testing.T, node string) string {
	n := c.node(t, node)
	a := n.Annotations
	return fmt.Sprintf("claim %q desired %q update %q check %q unschedulable %v",
		a[protocol.Claim], a[protocol.DesiredConfig], a[protocol.UpdateID], a[protocol.CheckRequest], n.Spec.Unschedulable)
}

// TestKubeFleetCanaryStopsProduction: a configuration of two clusters, each a real
// apiserver with real agents — canary on the shared control plane, prod on one of its
// own (a second apiserver is the point: each cluster is reached through its own context
// of one kubeconfig, and keeps its state in itself). A config whose health check fails on
// canary's first node stops the promotion: prod's Nodes keep no claim, no desired config,
// no cordon, and its agents' roots get nothing; prod's own plan refuses the config, which
// canary's state records as failed there. Fixed in the HCL, one apply updates
// canary, then prod — the soak gate reading canary's records from canary's own state —
// with prod's own value, judged from its Nodes and roots.
func TestKubeFleetCanaryStopsProduction(t *testing.T) {
	waiting(t)
	canary := newKubeCluster(t, fleetPools("broken"), map[string]int{"worker": 2})
	// A control plane of its own: production is a second cluster, with its own apiserver.
	prod := newPrivateKubeCluster(t, fleetPools("broken"), map[string]int{"worker": 2})
	fleet := &kubeCluster{bin: canary.bin, dir: t.TempDir(), kc: map[string]string{}}
	writeKubeconfig(t, filepath.Join(fleet.dir, "kubeconfig"), map[string]*kubeCluster{"canary": canary, "prod": prod})
	writeFleet := func(mode string) {
		hcl := "variable \"ntp_server\" { default = \"time.example.com\" }\n" + fleetPools(mode) +
			"\nstage \"canary\" {}\nstage \"prod\" {\n  after = [\"canary\"]\n}\n" +
			clusterBlock("canary", "canary", "", canary) + clusterBlock("prod", "prod", `ntp_server = "ntp.prod.example"`, prod)
		if err := os.WriteFile(filepath.Join(fleet.dir, "main.hcl"), []byte(hcl), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeFleet("broken")
	// The agents' first reports are in before the plan: one landing between the plan and a
	// cluster's apply would move the cluster on (its saved part refused as stale).
	canary.waitAnnounced(t)
	prod.waitAnnounced(t)
	nodes := []string{"worker-0", "worker-1"}
	before := map[string]string{}
	for _, n := range nodes {
		before[n] = applyMarks(prod, t, n)
	}

	// A: canary's first node fails its health check; promotion stops before prod.
	out, code := fleet.mcp(t, "", "apply", "-auto-approve", "-no-color")
	if code != 1 {
		t.Errorf("apply with a failing canary: exit %d, want 1\n%s", code, lastLines(out, 30))
	}
	for _, want := range []string{`health gate "not-broken" did not pass`, "Not started: prod (stage prod)."} {
		if !strings.Contains(out, want) {
			t.Errorf("apply's output lacks %q:\n%s", want, lastLines(out, 30))
		}
	}
	if b, _ := os.ReadFile(filepath.Join(canary.agents["worker-0"].root, "etc/fleet.conf")); !strings.Contains(string(b), "mode = broken") {
		t.Errorf("canary's worker-0 was not updated before it failed: fleet.conf %q", b)
	}
	prodUntouched := func(when string) {
		for _, n := range nodes {
			if got := applyMarks(prod, t, n); got != before[n] {
				t.Errorf("%s: prod's node %s was touched: %s, before %s", when, n, got, before[n])
			}
			if _, err := os.Stat(filepath.Join(prod.agents[n].root, "etc/fleet.conf")); !os.IsNotExist(err) {
				t.Errorf("%s: prod's node %s has /etc/fleet.conf (%v)", when, n, err)
			}
		}
	}
	prodUntouched("after the failed canary")
	// The config that failed on canary is recorded so in canary's state: prod refuses it.
	out, code = fleet.mcp(t, "", "plan", "-no-color", "-cluster", "prod")
	if want := "did not stay healthy on canary: node " + canary.name("worker-0") + " failed its health gates"; code != 1 || !strings.Contains(unboxed(out), want) {
		t.Errorf("prod's plan after the failed canary: exit %d, want 1 and %q\n%s", code, want, lastLines(out, 20))
	}
	prodUntouched("after prod's plan")

	// B: fixed in the HCL; one apply takes canary, then prod (no soak: it ran, healthy).
	writeFleet("good")
	out, code = fleet.mcp(t, "", "apply", "-auto-approve", "-no-color")
	if code != 0 {
		t.Fatalf("apply of the fix: exit %d\n%s", code, lastLines(out, 40))
	}
	for name, c := range map[string]*kubeCluster{"canary": canary, "prod": prod} {
		ntp := map[string]string{"canary": "time.example.com", "prod": "ntp.prod.example"}[name]
		for _, n := range nodes {
			node := c.node(t, n)
			a := node.Annotations
			if a[protocol.State] != "Done" || a[protocol.CurrentConfig] == "" || a[protocol.CurrentConfig] != a[protocol.DesiredConfig] || node.Spec.Unschedulable {
				t.Errorf("%s's node %s: state %q current %q desired %q unschedulable %v", name, n, a[protocol.State],
					a[protocol.CurrentConfig], a[protocol.DesiredConfig], node.Spec.Unschedulable)
			}
			want := "mode = good\nntp = " + ntp + "\n"
			if b, err := os.ReadFile(filepath.Join(c.agents[n].root, "etc/fleet.conf")); string(b) != want {
				t.Errorf("%s's node %s: fleet.conf %q, %v; want %q", name, n, b, err, want)
			}
		}
	}
	if out, code := fleet.mcp(t, "", "plan", "-no-color", "-detailed-exitcode"); code != 0 {
		t.Errorf("plan after the promotion: exit %d, want 0\n%s", code, lastLines(out, 20))
	}
}
