package acceptance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
)

const pausedPool = `
pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = 1
  paused          = "disruptive"
}

config "80-cert" {
  pools = ["worker"]
  file "/etc/pki/mcp-ca.pem" {
    content   = "CA 2\n"
    on_change = ["none"]
  }
}
`

const rebootingConfig = `
config "81-sysctl" {
  pools = ["worker"]
  file "/etc/sysctl.d/90-mcp.conf" {
    content = "vm.swappiness = 10\n"
  }
}
`

// TestKubePausedForDisruptiveChanges: a pool paused = "disruptive" on the real apiserver
// with real agents takes a change that disrupts nothing (a certificate, on_change none:
// it lands on every node's root) and holds one that reboots (no node's root gets it; apply
// exits 2 with the nodes deferred, saying why); no Node is cordoned, no agent rebooted, and
// each Node still runs, and is told to run, the config with the certificate. Then a move
// that mixes both kinds (a new certificate beside the held reboot): each node moves to an
// interim config — the certificate lands, by no cordon and no reboot — and the reboot
// still waits.
func TestKubePausedForDisruptiveChanges(t *testing.T) {
	waiting(t)
	c := newKubeCluster(t, pausedPool, map[string]int{"worker": 2})
	out, code := c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color")
	if code != 0 {
		t.Fatalf("apply of the certificate: exit %d\n%s", code, out)
	}
	ran := map[string]string{}
	for name, a := range c.agents {
		if b, err := os.ReadFile(filepath.Join(a.root, "etc/pki/mcp-ca.pem")); err != nil || string(b) != "CA 2\n" {
			t.Errorf("node %s: the certificate did not land: %q, %v", name, b, err)
		}
		ran[name] = c.node(t, name).Annotations[protocol.CurrentConfig]
	}

	c.writeConfig(t, pausedPool+rebootingConfig)
	out, code = c.mcp(t, "mcp-apply", "plan", "-no-color")
	if code != 0 || !strings.Contains(out, "pause: paused for disruptive changes") || !strings.Contains(out, "2 nodes wait") ||
		!strings.Contains(out, "disruptive (drain or reboot)") {
		t.Fatalf("plan: exit %d, want the pause and what waits said\n%s", code, out)
	}
	out, code = c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color")
	if code != 2 || !strings.Contains(out, "paused for disruptive changes") {
		t.Fatalf("apply of the reboot: exit %d, want 2 (deferred by the pause)\n%s", code, out)
	}
	for name, a := range c.agents {
		if _, err := os.Stat(filepath.Join(a.root, "etc/sysctl.d/90-mcp.conf")); err == nil {
			t.Errorf("node %s: the held file landed", name)
		}
		if boots := a.boots.Load(); boots != 1 {
			t.Errorf("node %s booted %d times, want no reboot", name, boots)
		}
		n := c.node(t, name)
		if n.Spec.Unschedulable {
			t.Errorf("node %s cordoned", name)
		}
		if cur, want := n.Annotations[protocol.CurrentConfig], ran[name]; cur != want || n.Annotations[protocol.DesiredConfig] != want {
			t.Errorf("node %s: current %q desired %q, want both %q (the config with the certificate)", name, cur,
				n.Annotations[protocol.DesiredConfig], want)
		}
	}

	c.writeConfig(t, strings.Replace(pausedPool, "CA 2", "CA 3", 1)+rebootingConfig)
	out, code = c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color")
	if code != 2 || !strings.Contains(out, "on an interim config") {
		t.Fatalf("apply of the mixed move: exit %d, want 2 (the reboot waits) and the interim said\n%s", code, out)
	}
	for name, a := range c.agents {
		if b, err := os.ReadFile(filepath.Join(a.root, "etc/pki/mcp-ca.pem")); err != nil || string(b) != "CA 3\n" {
			t.Errorf("node %s: the new certificate did not land beside the held reboot: %q, %v", name, b, err)
		}
		if _, err := os.Stat(filepath.Join(a.root, "etc/sysctl.d/90-mcp.conf")); err == nil {
			t.Errorf("node %s: the held file landed", name)
		}
		if boots := a.boots.Load(); boots != 1 {
			t.Errorf("node %s booted %d times, want no reboot", name, boots)
		}
		n := c.node(t, name)
		cur := n.Annotations[protocol.CurrentConfig]
		if n.Spec.Unschedulable || cur == ran[name] || !strings.HasPrefix(cur, "rendered-worker-") || n.Annotations[protocol.DesiredConfig] != cur {
			t.Errorf("node %s: cordoned %v, current %q desired %q: want an interim config, not %q", name, n.Spec.Unschedulable,
				cur, n.Annotations[protocol.DesiredConfig], ran[name])
		}
	}
}
