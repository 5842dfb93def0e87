package acceptance

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
)

// adoptPools is one pool of three nodes and a config of two files: one whose change
// restarts chronyd, one whose change reboots (the default on_change).
const adoptPools = `
pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = 3
}

config "50-adopt" {
  pools = ["worker"]
  file "/etc/chrony.conf" {
    mode      = "0644"
    content   = "server a.example.com iburst\n"
    on_change = ["restart:chronyd.service"]
  }
  file "/etc/motd" {
    mode    = "0644"
    content = "managed by mcp\n"
  }
}
`

// adoptFiles is what adoptPools puts on a node.
var adoptFiles = map[string]string{"/etc/chrony.conf": "server a.example.com iburst\n", "/etc/motd": "managed by mcp\n"}

// fileStamp is a file's inode and modification time: a rewrite changes one of them.
type fileStamp struct {
	ino   uint64
	mtime time.Time
}

func stampFiles(t *testing.T, root string) map[string]fileStamp {
	t.Helper()
	out := map[string]fileStamp{}
	for p := range adoptFiles {
		fi, err := os.Stat(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		out[p] = fileStamp{ino: fi.Sys().(*syscall.Stat_t).Ino, mtime: fi.ModTime()}
	}
	return out
}

// newAdoptFleet is a fleet of three workers, never managed by mcp, whose agents' roots
// carry adoptFiles (differ: the content of some on some nodes, by the test's node name);
// worker-0's Node names no current config, the others a name mcp never made (the MCO's).
func newAdoptFleet(t *testing.T, differ map[string]map[string]string) *kubeCluster {
	t.Helper()
	c := newKubeCluster(t, adoptPools, map[string]int{"worker": 3})
	for name, a := range c.agents {
		for p, content := range adoptFiles {
			if d, ok := differ[name][p]; ok {
				content = d
			}
			full := filepath.Join(a.root, p)
			os.MkdirAll(filepath.Dir(full), 0o755)
			if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if name != "worker-0" {
			patch, _ := protocol.AnnotationsPatch(map[string]string{protocol.CurrentConfig: "rendered-worker-7d3f1c0b5e2a9f84c6d1e0a3b2f5c4d7"})
			if _, err := c.env.Client.CoreV1().Nodes().Patch(context.Background(), c.name(name), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.waitAnnounced(t)
	return c
}

// waitAnnounced waits until every agent of c said which protocol it speaks, in its first
// check: its first report is in, and a plan made now sees the nodes as they stay.
func (c *kubeCluster) waitAnnounced(t *testing.T) {
	t.Helper()
	waitUntil(t, 30*time.Second, func() bool {
		for name := range c.agents {
			if c.node(t, name).Annotations[protocol.AgentProtocol] != strconv.Itoa(protocol.Version) {
				return false
			}
		}
		return true
	}, func() string { return "the agents did not announce their protocol version within 30s" })
}

// planSteps are the steps of each of the test's nodes in `mcp plan -json` ("adopt",
// "write /etc/chrony.conf", ...).
func (c *kubeCluster) planSteps(t *testing.T) map[string][]string {
	t.Helper()
	out, code := c.mcp(t, "mcp-apply", "plan", "-json")
	if code != 0 {
		t.Fatalf("plan -json: exit %d\n%s", code, lastLines(out, 30))
	}
	var pj struct {
		ResourceChanges []struct {
			Address string `json:"address"`
			MCP     struct {
				Steps []struct{ Kind, Target string } `json:"steps"`
			} `json:"mcp"`
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal([]byte(out), &pj); err != nil {
		t.Fatalf("plan -json: %v\n%s", err, lastLines(out, 30))
	}
	steps := map[string][]string{}
	for _, rc := range pj.ResourceChanges {
		if n, ok := strings.CutPrefix(rc.Address, "node."); ok {
			for _, s := range rc.MCP.Steps {
				steps[c.short(n)] = append(steps[c.short(n)], strings.TrimSpace(s.Kind+" "+s.Target))
			}
		}
	}
	return steps
}

// TestKubeAdoptFromObservation: on the real apiserver with real mcp-agent processes whose
// roots already carry the config, and whose Nodes name no current config or a foreign
// one, the plan asks each agent what it carries and adopts every node; apply writes,
// restarts and reboots nothing and records every node on the target. With one file
// differing on one node, that node gets exactly that write and its restart; the others
// are adopted.
func TestKubeAdoptFromObservation(t *testing.T) {
	waiting(t)
	t.Run("AllCarry", func(t *testing.T) {
		c := newAdoptFleet(t, nil)
		want := map[string][]string{"worker-0": {"adopt"}, "worker-1": {"adopt"}, "worker-2": {"adopt"}}
		if got := c.planSteps(t); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("plan's steps by node:\n got %v\nwant %v", got, want)
		}
		c.applyAndJudge(t, nil)
	})
	t.Run("OneFileDiffers", func(t *testing.T) {
		c := newAdoptFleet(t, map[string]map[string]string{"worker-2": {"/etc/chrony.conf": "server old.example.com iburst\n"}})
		want := map[string][]string{"worker-0": {"adopt"}, "worker-1": {"adopt"},
			"worker-2": {"write /etc/chrony.conf", "restart chronyd.service"}}
		if got := c.planSteps(t); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("plan's steps by node:\n got %v\nwant %v", got, want)
		}
		c.applyAndJudge(t, map[string]string{"worker-2": "/etc/chrony.conf"})
	})
}

// applyAndJudge applies and judges from the nodes: every Node Done on the pool's target;
// no file rewritten but the one written on each node of writes, whose agent restarted
// chronyd and nothing else; no other host call; no reboot.
func (c *kubeCluster) applyAndJudge(t *testing.T, writes map[string]string) {
	t.Helper()
	before := map[string]map[string]fileStamp{}
	for name, a := range c.agents {
		before[name] = stampFiles(t, a.root)
	}
	out, code := c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color")
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, lastLines(out, 40))
	}
	if want := fmt.Sprintf("Nodes: %d updated, %d adopted", len(writes), len(c.agents)-len(writes)); !strings.Contains(out, want) {
		t.Errorf("apply's counts: want %q\n%s", want, lastLines(out, 20))
	}
	target := c.pointer(t, "worker")
	for name, a := range c.agents {
		ann := c.node(t, name).Annotations
		if ann[protocol.CurrentConfig] != target || ann[protocol.State] != model.StateDone {
			t.Errorf("node %s: %s on %q, want Done on %s", name, ann[protocol.State], ann[protocol.CurrentConfig], target)
		}
		after := stampFiles(t, a.root)
		for p, was := range before[name] {
			if rewritten := after[p] != was; rewritten != (writes[name] == p) {
				t.Errorf("node %s: %s rewritten %v, want %v", name, p, rewritten, writes[name] == p)
			}
			if b, _ := os.ReadFile(filepath.Join(a.root, p)); string(b) != adoptFiles[p] {
				t.Errorf("node %s: %s = %q, want %q", name, p, b, adoptFiles[p])
			}
		}
		var wantCalls []string
		if writes[name] != "" {
			wantCalls = []string{"restart chronyd.service"}
		}
		if calls := fullHostCalls(t, a); !slices.Equal(calls, wantCalls) {
			t.Errorf("node %s: host calls %q, want %q", name, calls, wantCalls)
		}
		if b := a.boots.Load(); b != 1 {
			t.Errorf("node %s booted %d times, want no reboot", name, b)
		}
	}
}
