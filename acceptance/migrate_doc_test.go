package acceptance

import (
	"context"
	"encoding/json"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mcpfleet/mcp/config"
	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/providers/kubernetes"
	"github.com/mcpfleet/mcp/state/kubestate"
)

// TestMigrateFromMCODoc runs docs/migrate-from-mco.md as written (its ```sh blocks; the
// ```sh mco ones act on the MCO, which this cluster has not) on the shared control plane:
// three worker Nodes annotated as the MCO leaves them (currentConfig rendered-worker-…),
// real mcp-agent processes whose roots carry what the MCO wrote — two exactly, one with
// another chrony.conf —, mc.yaml what `oc get machineconfig -l …role=worker -o yaml`
// prints. Judged from the nodes: two adopted with nothing on them touched (same inodes, no
// reboot), the third gets the one write and the reboot a change has by default, and every
// Node records mcp's target.
// The plan's observation of a Kubernetes node comes from its agent (issue 42 item 3,
// branch i42-kube-observe): without it the nodes are rewritten and this test fails.
func TestMigrateFromMCODoc(t *testing.T) {
	waiting(t)
	cmds := pageCommands(t, "../docs/migrate-from-mco.md", "")
	pool := "\npool \"worker\" {\n  node_selector = { \"node-role.kubernetes.io/worker\" = \"\" }\n}\n"
	c := newKubeCluster(t, pool, map[string]int{"worker": 3})
	kubectlBinary(t, c.env)
	work := t.TempDir()
	if err := os.Symlink(c.dir, filepath.Join(work, "config")); err != nil {
		t.Fatal(err)
	}
	mc, err := os.ReadFile("../config/machineconfig/testdata/oc/oc-get-machineconfig-worker.yaml")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(work, "mc.yaml"), mc, 0o644)
	const mcoRendered = "rendered-worker-b1e37c5d9a2f04e86c1d3b5a7e9f0c24"
	path := filepath.Dir(mcpBinary(t)) + string(os.PathListSeparator) + c.env.BinDir + string(os.PathListSeparator) + os.Getenv("PATH")
	var plans []string
	var target *model.Rendered
	inodes := map[string]uint64{}
	for _, cmd := range cmds {
		if strings.Contains(cmd, " plan") && target == nil {
			target = c.carryMCO(t, mcoRendered, inodes)
		}
		run := exec.Command("bash", "-euo", "pipefail", "-c", cmd)
		run.Dir = work
		run.Env = append(os.Environ(), "KUBECONFIG="+c.kc["mcp-apply"], "PATH="+path)
		out, err := run.CombinedOutput()
		if err != nil {
			t.Fatalf("docs/migrate-from-mco.md: %s: %v\n%s", cmd, err, out)
		}
		if strings.Contains(cmd, " plan") {
			plans = append(plans, string(out))
		}
	}
	if len(plans) != 2 || target == nil {
		t.Fatalf("the page plans %d times, want 2 (before and after apply)", len(plans))
	}
	// Two nodes carry the target whole: adopted. worker-2 differs in chrony.conf alone: that
	// one write, with the MCO's default for a change (no on_change: a reboot).
	first := plans[0]
	for _, want := range []string{"Plan: 1 node to update (1 reboot, 0 in place)", "2 nodes to adopt",
		"read from the MCO's annotation machineconfiguration.openshift.io/currentConfig", "differs in: /etc/chrony.conf"} {
		if !strings.Contains(first, want) {
			t.Errorf("the first plan does not say %q", want)
		}
	}
	if row := c.planRow(first, "worker-2"); !strings.Contains(row, "write 1 file,") || strings.Contains(row, "unit") {
		t.Errorf("worker-2's steps: %q, want the one write (of /etc/chrony.conf, as its observed line says)", row)
	}
	if t.Failed() {
		t.Logf("the first plan:\n%s", first)
	}
	c.checkMigrated(t, target, inodes)
}

// carryMCO makes each node carry what the MCO wrote from the imported MachineConfigs (the
// configuration's target for the worker pool), worker-2 with another chrony.conf, and
// annotates the Nodes as the MCO's daemon leaves them; inodes records each file's inode.
func (c *kubeCluster) carryMCO(t *testing.T, mcoName string, inodes map[string]uint64) *model.Rendered {
	t.Helper()
	res, diags := config.Load(c.dir, config.Options{Schemas: config.Schemas{
		Providers: []model.BlockSpec{kubernetes.Spec.BlockSpec}, Backends: []model.BlockSpec{kubestate.Spec.BlockSpec}}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	rendered, _ := planner.Render(res.Desired, ignition.Renderer{})
	r := rendered["worker"]
	if r == nil {
		t.Fatal("the imported configuration renders no worker config")
	}
	for node, a := range c.agents {
		// An RHCOS node has the core user, whose SSH keys the MCO wrote.
		os.WriteFile(filepath.Join(a.root, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\ncore:x:1000:1000::/home/core:/bin/bash\n"), 0o644)
		os.WriteFile(filepath.Join(a.root, "etc/group"), []byte("root:x:0:\ncore:x:1000:\n"), 0o644)
		for _, d := range r.Directories {
			p := filepath.Join(a.root, d.Path)
			if err := os.MkdirAll(p, fs.FileMode(d.Mode)); err != nil {
				t.Fatal(err)
			}
			os.Chmod(p, fs.FileMode(d.Mode))
			os.Lchown(p, uid(d.User), uid(d.Group))
		}
		for _, f := range r.Files {
			content := f.Contents
			if node == "worker-2" && f.Path == "/etc/chrony.conf" {
				content = []byte("server ntp.example.com iburst\n")
			}
			putFile(t, filepath.Join(a.root, f.Path), content, fs.FileMode(f.Mode))
			os.Lchown(filepath.Join(a.root, f.Path), uid(f.User), uid(f.Group))
		}
		for _, u := range r.Units {
			putFile(t, filepath.Join(a.root, "etc/systemd/system", u.Name), []byte(u.Contents), 0o644)
			if u.Enabled != nil && *u.Enabled {
				wants := filepath.Join(a.root, "etc/systemd/system/multi-user.target.wants", u.Name)
				os.MkdirAll(filepath.Dir(wants), 0o755)
				if err := os.Symlink("/etc/systemd/system/"+u.Name, wants); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, f := range r.Files {
			inodes[node+f.Path] = inode(t, filepath.Join(a.root, f.Path))
		}
		ann := map[string]any{"metadata": map[string]any{"annotations": map[string]string{
			"machineconfiguration.openshift.io/currentConfig": mcoName, "machineconfiguration.openshift.io/desiredConfig": mcoName,
			"machineconfiguration.openshift.io/state": "Done"}}}
		b, _ := json.Marshal(ann)
		if _, err := c.env.Client.CoreV1().Nodes().Patch(context.Background(), c.name(node), types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// checkMigrated judges from the nodes: every Node records the target, no node rebooted,
// the adopted nodes' files are the inodes they were, worker-2's chrony.conf is the target's.
func (c *kubeCluster) checkMigrated(t *testing.T, target *model.Rendered, inodes map[string]uint64) {
	t.Helper()
	for node, a := range c.agents {
		if got := c.node(t, node).Annotations[protocol.CurrentConfig]; got != target.Name {
			t.Errorf("%s records %q, want %s", node, got, target.Name)
		}
		want := map[string]int{}
		if node == "worker-2" {
			want[target.Name] = 1 // its chrony.conf changed, and a change reboots
		}
		if r := a.rebootsInto(); !maps.Equal(r, want) {
			t.Errorf("%s rebooted %v, want %v", node, r, want)
		}
		for _, f := range target.Files {
			p := filepath.Join(a.root, f.Path)
			if b, _ := os.ReadFile(p); string(b) != string(f.Contents) {
				t.Errorf("%s %s: %q, want the target's", node, f.Path, b)
			}
			if node != "worker-2" || f.Path != "/etc/chrony.conf" {
				if inode(t, p) != inodes[node+f.Path] {
					t.Errorf("%s %s was rewritten (another inode), though it carried the target's", node, f.Path)
				}
			}
		}
	}
}

func putFile(t *testing.T, p string, b []byte, mode fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, mode); err != nil {
		t.Fatal(err)
	}
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Ino
}

// uid is the id carryMCO's /etc/passwd and /etc/group give name.
func uid(name string) int {
	if name == "core" {
		return 1000
	}
	return 0
}
