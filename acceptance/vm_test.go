package acceptance

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/mcpfleet/mcp/acceptance/vmnode"
	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/nodeexec/systemdhost"
)

// The VM tests run mcp on real machines (acceptance/vmnode): QEMU nodes booting a Debian
// OSTree system, each running the real mcp-agent (-os-tool ostree) as a systemd unit,
// reporting to the real apiserver through QEMU's user network (the host's loopback is
// 10.0.2.2 in the guest). What they prove is judged from inside the machines: the boot id,
// /proc/cmdline, `ostree admin status`, the files.

// vmFleet is a control plane with mcp deployed (kubeCluster, no simulated agents) and one
// VM per node.
type vmFleet struct {
	*kubeCluster
	img *vmnode.Image
	vms map[string]*vmnode.VM
}

const vmPoolLabel = "node-role.kubernetes.io/vm"

// newVMFleet starts the control plane and boots a VM per name, each running mcp-agent as
// the Node of that name, and waits until every agent reports what its machine runs.
func newVMFleet(t *testing.T, hcl string, opts vmnode.Options, names ...string) *vmFleet {
	t.Helper()
	f := newVMCluster(t, hcl)
	for _, name := range names {
		f.addVM(t, name, opts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	f.eachVM(t, func(vm *vmnode.VM) error {
		began := time.Now()
		_, err := vm.Start(ctx)
		t.Logf("%s up in %v", vm.Name, time.Since(began).Round(time.Second))
		return err
	})
	for _, name := range names {
		f.waitReported(t, name, "vm:mcp/v1")
	}
	return f
}

// newVMCluster starts the control plane (mcp deployed, the boot server running) for VM
// nodes; it has none yet.
func newVMCluster(t *testing.T, hcl string) *vmFleet {
	t.Helper()
	img := vmnode.Find(t)
	return &vmFleet{kubeCluster: newKubeCluster(t, hcl, nil), img: img, vms: map[string]*vmnode.VM{}}
}

// addVM makes the test's Node name in the VM pool and its machine, with the agent in its
// share; it does not start it. The machine is named as the cluster names the Node.
func (f *vmFleet) addVM(t *testing.T, name string, opts vmnode.Options) *vmnode.VM {
	t.Helper()
	f.addNode(t, name, "vm", "")
	vm := vmnode.New(t, f.img, f.name(name), opts)
	f.vms[name] = vm
	f.configureAgent(t, vm, vmAgentBinary(t))
	return vm
}

// eachVM runs fn on every VM at once and fails the test with every error.
func (f *vmFleet) eachVM(t *testing.T, fn func(vm *vmnode.VM) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, 0, len(f.vms))
	var mu sync.Mutex
	for _, vm := range f.vms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(vm); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
}

var (
	vmAgentOnce sync.Once
	vmAgentPath string
	vmAgentErr  error
)

// vmAgentBinary is mcp-agent built static (CGO_ENABLED=0), to run in the VM's own root.
func vmAgentBinary(t *testing.T) string {
	t.Helper()
	vmAgentOnce.Do(func() {
		dir := filepath.Dir(mcpBinary(t))
		vmAgentPath = filepath.Join(dir, "mcp-agent-static")
		cmd := exec.Command("go", "build", "-o", vmAgentPath, "../cmd/mcp-agent")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			vmAgentErr = fmt.Errorf("go build mcp-agent (static): %v\n%s", err, out)
		}
	})
	if vmAgentErr != nil {
		t.Fatal(vmAgentErr)
	}
	return vmAgentPath
}

// guestURL is a loopback URL as the guest reaches it: QEMU's user network maps 10.0.2.2
// to the host's 127.0.0.1.
func guestURL(u string) string { return strings.Replace(u, "127.0.0.1", "10.0.2.2", 1) }

// configureAgent fills the VM's share: the agent, its kubeconfig (a token of mcp-agent
// bound to its pod on the node, as in the DaemonSet; the apiserver's certificate names
// 127.0.0.1, which the guest reaches as 10.0.2.2), and its flags.
func (f *vmFleet) configureAgent(t *testing.T, vm *vmnode.VM, agent string) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(f.agentKubeconfig(t, vm.Name))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server, c.TLSServerName = guestURL(c.Server), "127.0.0.1"
	}
	if err := clientcmd.WriteToFile(*cfg, filepath.Join(vm.Share, "kubeconfig")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(agent)
	if err != nil {
		t.Fatal(err)
	}
	args := fmt.Sprintf("-node %s -namespace %s -kubeconfig /run/mcp/kubeconfig -server %s -os-tool ostree -interval 2s -reboot-wait 5m",
		vm.Name, f.mcpNS, guestURL(f.server))
	for name, content := range map[string][]byte{"mcp-agent": b, "agent.env": []byte("MCP_AGENT_ARGS=" + args + "\n")} {
		if err := os.WriteFile(filepath.Join(vm.Share, name), content, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// waitReported waits until node's agent reports that its machine boots image: up to two
// boots' worth of vmnode's boot timeout, as a first boot pivots and boots again (the
// machines are emulated beside the package's other tests, on 2 cores).
func (f *vmFleet) waitReported(t *testing.T, node, image string) {
	t.Helper()
	waitUntil(t, 10*time.Minute, func() bool {
		a := f.node(t, node).Annotations
		return a[protocol.OSImage] == image && a[protocol.AgentProtocol] == strconv.Itoa(protocol.Version)
	}, func() string {
		n := f.node(t, node)
		return fmt.Sprintf("node %s never reported OS image %s; it reports %q (state %q: %s)\nVM serial:\n%s", node, image,
			n.Annotations[protocol.OSImage], n.Annotations[protocol.State], n.Annotations[protocol.Reason], f.vms[node].SerialTail(30))
	})
}

// sh runs a script in the VM, failing the test when it fails. It waits for the machine's
// command channel, which comes up with its boot: as long as a boot may take.
func sh(t *testing.T, vm *vmnode.VM, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := vm.Run(ctx, script)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// guestState is what a VM says it runs.
type guestState struct {
	bootID  string
	cmdline string
	deploys []systemdhost.OSTreeDeployment
}

func (s guestState) booted() systemdhost.OSTreeDeployment {
	for _, d := range s.deploys {
		if d.Booted {
			return d
		}
	}
	return systemdhost.OSTreeDeployment{}
}

func readGuest(t *testing.T, vm *vmnode.VM) guestState {
	t.Helper()
	out := sh(t, vm, "cat /proc/sys/kernel/random/boot_id; cat /proc/cmdline; echo ---; ostree admin status")
	head, status, _ := strings.Cut(out, "---\n")
	lines := strings.SplitN(head, "\n", 2)
	if len(lines) != 2 {
		t.Fatalf("%s: unexpected answer %q", vm.Name, out)
	}
	if dir := os.Getenv("MCP_VM_CAPTURE_DIR"); dir != "" { // the parser's test data
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("status-%d.txt", time.Now().UnixNano())), []byte(status), 0o644)
	}
	ds, err := systemdhost.ParseOSTreeStatus([]byte(status))
	if err != nil {
		t.Fatalf("%s: %v", vm.Name, err)
	}
	return guestState{bootID: lines[0], cmdline: strings.TrimSpace(lines[1]), deploys: ds}
}

// setHCL replaces the configuration's pools and configs.
func (f *vmFleet) setHCL(t *testing.T, hcl string) {
	t.Helper()
	f.writeConfig(t, hcl)
}

// apply runs mcp apply and returns its output and exit code.
func (f *vmFleet) apply(t *testing.T) (string, int) {
	t.Helper()
	began := time.Now()
	out, code := f.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color", "-drain-retry-delay=500ms")
	t.Logf("apply: exit %d in %v", code, time.Since(began).Round(time.Second))
	if code != 0 {
		// Said now: a test may fail on the machine before it reads this apply's output.
		t.Logf("apply's last lines:\n%s", lastLines(out, 15))
	}
	return out, code
}

// vmPool is the VM nodes' pool at os_image image with kernel arguments kargs (HCL list
// items), and a config whose file /etc/mcp-demo.conf holds content and restarts the unit
// mcp-demo.service, which copies that file to /run/mcp-demo.out when it starts.
func vmPool(image, kargs, content string) string {
	return fmt.Sprintf(`
pool "vm" {
  node_selector   = { %q = "" }
  max_unavailable = 1
  os_image        = %q
  kernel_args     = [%s]
}

config "10-demo" {
  pools = ["vm"]
  file "/etc/mcp-demo.conf" {
    content   = %q
    on_change = ["restart:mcp-demo.service"]
  }
  unit "mcp-demo.service" {
    enabled   = true
    contents  = <<-EOT
      [Unit]
      Description=reads /etc/mcp-demo.conf when it starts
      [Service]
      ExecStart=/bin/sh -c 'cp /etc/mcp-demo.conf /run/mcp-demo.out && exec sleep infinity'
      [Install]
      WantedBy=multi-user.target
    EOT
    on_change = ["restart:mcp-demo.service"]
  }
}
`, vmPoolLabel, image, kargs, content)
}
