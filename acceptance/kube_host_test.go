package acceptance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec"
)

// The host tests judge what a node runs from the node: each agent runs -host=record, which
// keeps the machine it stands in for in its root (nodeexec.MachineDir: the running kernel's
// command line, the booted image, what is staged for the next boot). A test changes those
// files as someone on the machine would; what mcp must then say is read from the real Node
// object's annotations and from mcp's own output.

const (
	fcos41        = "quay.io/fedora/fedora-coreos:41"
	fcos42Release = "quay.io/fedora/fedora-coreos:42.20250705.3.0"
	// cmdline is a node's own kernel command line, as its boot loader gives it.
	cmdline = "BOOT_IMAGE=(hd0,gpt3)/boot/ostree/fedora-coreos-126b/vmlinuz-6.15.4 rw root=UUID=34bfd606 console=ttyS0,115200n8"
)

// machine writes a file of node's simulated machine: what the node runs, changed on the
// machine itself.
func (c *kubeCluster) machine(t *testing.T, node, name, content string) {
	t.Helper()
	dir := filepath.Join(c.agents[node].root, nodeexec.MachineDir)
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// bootedFrom makes every node's machine run image with the kernel command line cmdline, and
// waits until each agent reports them on its Node.
func (c *kubeCluster) bootedFrom(t *testing.T, image string) {
	t.Helper()
	for name := range c.agents {
		c.machine(t, name, nodeexec.MachineCmdline, cmdline)
		c.machine(t, name, nodeexec.MachineBootedImage, image)
	}
	for name := range c.agents {
		c.waitAnnotations(t, name, image, "rw", "root=UUID=34bfd606", "console=ttyS0,115200n8")
	}
}

// waitAnnotations waits until node's agent reports image and exactly the kernel arguments
// kargs, and returns the Node.
func (c *kubeCluster) waitAnnotations(t *testing.T, node, image string, kargs ...string) *corev1.Node {
	t.Helper()
	want, _ := json.Marshal(kargs)
	var n *corev1.Node
	waitUntil(t, 30*time.Second, func() bool {
		n = c.node(t, node)
		return n.Annotations[protocol.OSImage] == image && n.Annotations[protocol.KernelArgs] == string(want)
	}, func() string {
		return fmt.Sprintf("node %s never reported image %s and kernel arguments %s; it reports %q and %s", node, image, want,
			n.Annotations[protocol.OSImage], n.Annotations[protocol.KernelArgs])
	})
	return n
}

const hostPools = `
pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = 1
  os_image        = "quay.io/fedora/fedora-coreos:42.20250705.3.0"
}

config "10-kargs" {
  pools       = ["worker"]
  kernel_args = ["nosmt"]
  file "/etc/mcp-marker" { content = "v1\n" }
}
`

// TestKubeHostReportsWhatTheNodeRuns: on a real API server with real agent processes, the
// Node's os-image and kernel-args annotations are what the machine runs, not what the
// config says. After a rollout (a kargs step and a pivot, booted at the reboot) they are
// the target's because the machine booted them; when someone on worker-0 boots another
// image and drops nosmt, the annotations say so, `mcp drift` and `mcp plan` show both
// differences with expected and found, and apply restores them — through the machine's
// next boot, the node's own arguments (root=, console=, mitigations=off) left alone.
func TestKubeHostReportsWhatTheNodeRuns(t *testing.T) {
	waiting(t)
	c := newKubeCluster(t, hostPools, map[string]int{"worker": 2})
	c.bootedFrom(t, fcos41)
	if out, code := c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color", "-drain-retry-delay=500ms"); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	for name := range c.agents {
		n := c.waitAnnotations(t, name, fcos42Release, "rw", "root=UUID=34bfd606", "console=ttyS0,115200n8", "nosmt")
		if n.Annotations[protocol.State] != model.StateDone || c.agents[name].boots.Load() != 2 {
			t.Errorf("node %s: %s after %d boots; want Done after one reboot", name, n.Annotations[protocol.State], c.agents[name].boots.Load())
		}
	}

	// On worker-0, behind mcp's back: booted into 41 again, without nosmt.
	c.machine(t, "worker-0", nodeexec.MachineBootedImage, fcos41)
	c.machine(t, "worker-0", nodeexec.MachineCmdline, cmdline+" mitigations=off")
	c.waitAnnotations(t, "worker-0", fcos41, "rw", "root=UUID=34bfd606", "console=ttyS0,115200n8", "mitigations=off")
	kargsDrift := "drift: kernel_args: kernel-args (expected nosmt, found (none))"
	imageDrift := "drift: os_image: os-image (expected " + fcos42Release + ", found " + fcos41 + ")"

	out, code := c.mcp(t, "mcp-apply", "drift", "-no-color", "-detailed-exitcode")
	if code != 2 || !strings.Contains(out, "node."+c.name("worker-0")+" (pool worker") || strings.Contains(out, "node."+c.name("worker-1")+" (pool") {
		t.Errorf("drift: exit %d, want 2 naming worker-0 alone\n%s", code, out)
	}
	for _, want := range []string{kargsDrift, imageDrift} {
		if !strings.Contains(out, want) {
			t.Errorf("drift does not say %q:\n%s", want, out)
		}
	}
	if out, code := c.mcp(t, "mcp-apply", "plan", "-no-color", "-detailed-exitcode=config"); code != 0 {
		t.Errorf("plan -detailed-exitcode=config restoring drift: exit %d, want 0 (drift is not a configuration change)\n%s", code, out)
	}
	out, code = c.mcp(t, "mcp-apply", "plan", "-no-color", "-detailed-exitcode")
	if code != 2 {
		t.Errorf("plan restoring drift: exit %d, want 2 (apply would change the node)\n%s", code, out)
	}
	for _, want := range []string{kargsDrift, imageDrift, "restored by this plan"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan does not show %q:\n%s", want, out)
		}
	}
	if row := c.planRow(out, "worker-0"); !strings.Contains(row, "kargs") || !strings.Contains(row, "pivot") || !strings.Contains(row, "reboot") {
		t.Errorf("plan's steps for worker-0: %q; want kargs, pivot and reboot\n%s", row, out)
	}
	if row := c.planRow(out, "worker-1"); row != "" {
		t.Errorf("plan changes worker-1, which runs what its config says: %q", row)
	}

	if out, code := c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color", "-drain-retry-delay=500ms"); code != 0 {
		t.Fatalf("apply restoring worker-0: exit %d\n%s", code, out)
	}
	c.waitAnnotations(t, "worker-0", fcos42Release, "rw", "root=UUID=34bfd606", "console=ttyS0,115200n8", "mitigations=off", "nosmt")
	if b := c.agents["worker-0"].boots.Load(); b != 3 {
		t.Errorf("worker-0 booted %d times; want once more, for the restore", b)
	}
	if out, code := c.mcp(t, "mcp-apply", "drift", "-no-color", "-detailed-exitcode"); code != 0 {
		t.Errorf("drift after the restore: exit %d, want 0\n%s", code, out)
	}
}

// TestKubeRollbackDegradesThenHeals: the machine's boot fails and comes back on the
// deployment it ran (its staged one rolled back), once.
//
// It degrades the node: the agent after the boot verifies what the host runs, so the Node
// is Degraded with the image expected and the one found, the config is not reported as
// current, and the os-image annotation is the machine's image.
//
// Then, the cause gone, the next apply updates the node again from what it runs — kargs,
// pivot and one new reboot, each a real call to the host — and the plan never says the
// rolled-back reboot finished the update.
func TestKubeRollbackDegradesThenHeals(t *testing.T) {
	waiting(t)
	c := newKubeCluster(t, hostPools, map[string]int{"worker": 1})
	c.bootedFrom(t, fcos41)
	c.machine(t, "worker-0", nodeexec.MachineRollback, "")
	t.Run("the rolled-back reboot degrades the node", func(t *testing.T) {
		out, code := c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color", "-drain-retry-delay=500ms")
		if code != 1 {
			t.Errorf("apply: exit %d although the node booted the old image; want 1\n%s", code, out)
		}
		ann := c.node(t, "worker-0").Annotations
		if ann[protocol.State] != model.StateDegraded {
			t.Fatalf("worker-0 is %q (%s), want Degraded", ann[protocol.State], ann[protocol.Reason])
		}
		for _, want := range []string{"after reboot: verify",
			"os_image: os-image (expected " + fcos42Release + ", found " + fcos41 + ")",
			"kernel_args: kernel-args (expected nosmt, found (none))"} {
			if !strings.Contains(ann[protocol.Reason], want) {
				t.Errorf("reason %q does not say %q", ann[protocol.Reason], want)
			}
		}
		if ann[protocol.CurrentConfig] != "" {
			t.Errorf("worker-0 reports current-config %s, which it did not boot", ann[protocol.CurrentConfig])
		}
		if b := c.agents["worker-0"].boots.Load(); b != 2 {
			t.Errorf("worker-0 booted %d times, want one reboot", b)
		}
		c.waitAnnotations(t, "worker-0", fcos41, "rw", "root=UUID=34bfd606", "console=ttyS0,115200n8")
		if !strings.Contains(out, fcos41) {
			t.Errorf("apply's output does not name the image found:\n%s", out)
		}
	})
	if t.Failed() {
		return
	}
	t.Run("fixed, the next apply heals it", func(t *testing.T) {
		if err := os.Remove(filepath.Join(c.agents["worker-0"].root, nodeexec.MachineDir, nodeexec.MachineRollback)); err != nil {
			t.Fatal(err)
		}
		calls := len(hostCalls(t, c.agents["worker-0"]))
		out, _ := c.mcp(t, "mcp-apply", "plan", "-no-color")
		if row := c.planRow(out, "worker-0"); strings.Contains(out, "rebooted into") ||
			!strings.Contains(row, "kargs") || !strings.Contains(row, "pivot") || !strings.Contains(row, "reboot") {
			t.Errorf("plan after the fix: worker-0's steps %q; want kargs, pivot and reboot, and no reboot said to have happened\n%s", row, out)
		}
		if out, code := c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color", "-drain-retry-delay=500ms"); code != 0 {
			t.Fatalf("apply after the fix: exit %d\n%s", code, out)
		}
		n := c.waitAnnotations(t, "worker-0", fcos42Release, "rw", "root=UUID=34bfd606", "console=ttyS0,115200n8", "nosmt")
		if n.Annotations[protocol.State] != model.StateDone || n.Annotations[protocol.CurrentConfig] != c.pointer(t, "worker") {
			t.Errorf("worker-0: %s on %q, want Done on the pool's config", n.Annotations[protocol.State], n.Annotations[protocol.CurrentConfig])
		}
		if b := c.agents["worker-0"].boots.Load(); b != 3 {
			t.Errorf("worker-0 booted %d times; want 3 (first boot, the rolled-back reboot, one more)", b)
		}
		after := hostCalls(t, c.agents["worker-0"])[calls:]
		for _, want := range []string{"kargs", "pivot", "reboot"} {
			if !slices.ContainsFunc(after, func(c string) bool { return strings.Contains(c, want) }) {
				t.Errorf("the second apply made no %s call to the host: %v", want, after)
			}
		}
	})
}

// TestKubePoolImageAlreadyBootedPlansNoReboot: nodes that run a config of mcp's and boot
// image X; the pool's os_image is set to X. The plan gives them the new config with no
// pivot and no reboot, and apply does not reboot them: the Node's reported image is what
// counts, not the config's (which named none).
func TestKubePoolImageAlreadyBootedPlansNoReboot(t *testing.T) {
	waiting(t)
	const noImage = `
pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = 1
}

config "10-motd" {
  pools = ["worker"]
  file "/etc/motd" {
    content   = "managed\n"
    on_change = ["none"]
  }
}
`
	c := newKubeCluster(t, noImage, map[string]int{"worker": 2})
	c.bootedFrom(t, fcos41)
	if out, code := c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	withImage := strings.Replace(noImage, "max_unavailable = 1", "max_unavailable = 1\n  os_image        = \""+fcos41+"\"", 1)
	c.writeConfig(t, withImage)
	out, code := c.mcp(t, "mcp-apply", "plan", "-no-color", "-detailed-exitcode")
	if code != 2 {
		t.Errorf("plan: exit %d, want 2 (a new config)\n%s", code, out)
	}
	for name := range c.agents {
		row := c.planRow(out, name)
		for _, never := range []string{"pivot", "reboot", "drain"} {
			if row == "" || strings.Contains(row, never) {
				t.Errorf("plan's steps for %s, which boots the pool's image: %q; want the new config without %s\n%s", name, row, never, out)
			}
		}
	}
	if out, code := c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	target := c.pointer(t, "worker")
	for name, a := range c.agents {
		n := c.waitAnnotations(t, name, fcos41, "rw", "root=UUID=34bfd606", "console=ttyS0,115200n8")
		if n.Annotations[protocol.CurrentConfig] != target || n.Annotations[protocol.State] != model.StateDone {
			t.Errorf("node %s: %s on %q, want Done on %s", name, n.Annotations[protocol.State], n.Annotations[protocol.CurrentConfig], target)
		}
		if b := a.boots.Load(); b != 1 || slices.Contains(hostCalls(t, a), "reboot") {
			t.Errorf("node %s booted %d times; want no reboot", name, b)
		}
	}
}

// planRow is the test's node's row of the human plan's table of node changes ("" when it
// has none).
func (c *kubeCluster) planRow(plan, node string) string {
	for _, line := range strings.Split(plan, "\n") {
		if strings.Contains(line, "node."+c.name(node)+" ") && !strings.Contains(line, "(pool ") {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// hostCalls are the Host calls a's agent logged, by kind ("restart", "reboot").
func hostCalls(t *testing.T, a *kubeAgent) []string {
	t.Helper()
	var kinds []string
	for _, c := range fullHostCalls(t, a) {
		kinds = append(kinds, strings.Fields(c)[0])
	}
	return kinds
}

// fullHostCalls are the Host calls a's agent logged, whole ("restart chronyd.service").
func fullHostCalls(t *testing.T, a *kubeAgent) []string {
	t.Helper()
	b, _ := os.ReadFile(a.log)
	var calls []string
	for _, line := range strings.Split(string(b), "\n") {
		var l struct {
			Msg  string `json:"msg"`
			Call string `json:"call"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "host" && l.Call != "" {
			calls = append(calls, l.Call)
		}
	}
	return calls
}
