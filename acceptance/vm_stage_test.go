package acceptance

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/acceptance/vmnode"
	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
)

// TestVMStageBeforeSlot: an update of kernel arguments and OS commit on a real machine
// pulls the commit and deploys it (not as the default boot entry) while the node is still
// in service — before its cordon — and the slot switches to that deployment. Judged from
// the machine: samples taken during the apply, each between two reads of the Node, show
// the commit in the node's repository and its deployment written while the Node was
// schedulable; after the apply the machine boots the commit with the arguments, rebooted
// once, from a second deployment of it (the slot's, serial 1: the staged one was serial
// 0), and nothing staged is left.
func TestVMStageBeforeSlot(t *testing.T) {
	machines(t)
	f := newVMFleet(t, vmPool("vm:mcp/v1", "", "generation 1\n"), vmnode.Options{}, "vm-0")
	vm := f.vms["vm-0"]
	// A config of mcp's first (no reboot): a node whose config is unknown stages in its
	// slot, a node on a known config ahead of it.
	if out, code := f.apply(t); code != 0 {
		t.Fatalf("first apply: exit %d\n%s", code, out)
	}
	first := readGuest(t, vm)
	v2 := f.img.Commits["v2"]
	if out := sh(t, vm, "ostree rev-parse vm:mcp/v2 2>/dev/null || echo none"); out != "none" {
		t.Fatalf("the machine has vm:mcp/v2 before the update: %q", out)
	}

	f.setHCL(t, vmPool("vm:mcp/v2", `"mcp.test=s"`, "generation 2\n"))
	plan, _ := f.mcp(t, "mcp-apply", "plan", "-no-color")
	if !strings.Contains(plan, "stage ahead; in its slot: cordon, drain") {
		t.Errorf("the plan does not show staging as its own phase:\n%s", lastLines(plan, 20))
	}

	type sample struct {
		schedulable   bool // before and after the machine was read
		pulled        bool // vm:mcp/v2 resolves to v2 in the node's repository
		deployed      bool // a deployment of v2 is on disk
		bootedV1, ran bool
	}
	var mu sync.Mutex
	var samples []sample
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// The Node alone, more often: when it was cordoned and uncordoned (what the budget's
	// slot covers of the node's service), for the log.
	began := time.Now()
	var cordoned, uncordoned time.Duration
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			u := f.node(t, "vm-0").Spec.Unschedulable
			mu.Lock()
			if u && cordoned == 0 {
				cordoned = time.Since(began)
			}
			if !u && cordoned != 0 && uncordoned == 0 {
				uncordoned = time.Since(began)
			}
			mu.Unlock()
		}
	})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
			u1 := f.node(t, "vm-0").Spec.Unschedulable
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			out, err := vm.Run(ctx, "cat /proc/sys/kernel/random/boot_id; ostree rev-parse vm:mcp/v2 2>/dev/null || echo none; ls /ostree/deploy/debian/deploy/")
			cancel()
			u2 := f.node(t, "vm-0").Spec.Unschedulable
			if err != nil {
				continue // rebooting
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			s := sample{schedulable: !u1 && !u2, ran: true, bootedV1: len(lines) > 0 && lines[0] == first.bootID}
			s.pulled = len(lines) > 1 && lines[1] == v2
			s.deployed = slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, v2+".") && !strings.HasSuffix(l, ".origin") })
			mu.Lock()
			samples = append(samples, s)
			mu.Unlock()
		}
	})
	out, code := f.apply(t)
	ended := time.Since(began)
	close(stop)
	wg.Wait()
	if uncordoned == 0 { // uncordoned between the last look and the apply's end: at most then
		uncordoned = ended
	}
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}

	var pulledInService, deployedInService bool
	for _, s := range samples {
		pulledInService = pulledInService || (s.schedulable && s.bootedV1 && s.pulled)
		deployedInService = deployedInService || (s.schedulable && s.bootedV1 && s.deployed)
	}
	t.Logf("%d samples of the machine during the apply; cordoned %v after the apply began (the stage, in service), uncordoned at most %v later (out of service)",
		len(samples), cordoned.Round(time.Second), (uncordoned - cordoned).Round(time.Second))
	if !pulledInService {
		t.Errorf("no sample shows v2 pulled while the node was schedulable: %+v", samples)
	}
	if !deployedInService {
		t.Errorf("no sample shows a deployment of v2 written while the node was schedulable: %+v", samples)
	}

	now := readGuest(t, vm)
	if now.bootID == first.bootID {
		t.Fatalf("the machine did not reboot")
	}
	if b := now.booted(); b.Checksum != v2 || b.Refspec != "vm:mcp/v2" || b.Serial != 1 {
		t.Errorf("booted %+v, want v2 %s from vm:mcp/v2, serial 1 (the staged deployment was serial 0)", b, v2)
	}
	if !slices.Contains(strings.Fields(now.cmdline), "mcp.test=s") {
		t.Errorf("/proc/cmdline %q lacks mcp.test=s", now.cmdline)
	}
	if left := sh(t, vm, "grep -l staged-kargs /ostree/deploy/*/deploy/*.origin || true"); left != "" {
		t.Errorf("a staged deployment is left after the update: %s", left)
	}
	n := f.node(t, "vm-0")
	if n.Spec.Unschedulable || n.Annotations[protocol.State] != model.StateDone {
		t.Errorf("node unschedulable %v, state %s (%s): want uncordoned, Done", n.Spec.Unschedulable,
			n.Annotations[protocol.State], n.Annotations[protocol.Reason])
	}
}
