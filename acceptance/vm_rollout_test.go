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
	"github.com/mcpfleet/mcp/nodeexec/systemdhost"
)

// TestVMRollout runs one real machine through mcp's node operations in turn, each judged
// from inside it:
//   - a file and unit change with a restart: the unit runs the new file, no reboot (same
//     boot id);
//   - a kernel argument and a new OS commit: staged ahead — samples of the machine taken
//     during the apply, each between two reads of the Node, show the commit pulled and its
//     deployment checked out while the Node was schedulable (the plan shows the stage as
//     its own phase) — then exactly one reboot, the new deployment booted with the
//     argument on /proc/cmdline (the staged one itself, serial 0: not checked out again in
//     the slot), nothing left staged or locked, the old one kept as the rollback;
//   - a commit that does not boot: the boot loader (with boot counting) falls back to the
//     previous deployment, and mcp reports the node Degraded with what it expected and
//     what it found, its config not current; a fixed commit applied next heals it.
func TestVMRollout(t *testing.T) {
	machines(t)
	f := newVMFleet(t, vmPool("vm:mcp/v1", "", "generation 1\n"), vmnode.Options{BootCounter: true}, "vm-0")
	vm := f.vms["vm-0"]
	first := readGuest(t, vm)

	t.Run("restart without reboot", func(t *testing.T) {
		for gen, content := range []string{"generation 1\n", "generation 2\n"} {
			f.setHCL(t, vmPool("vm:mcp/v1", "", content))
			if out, code := f.apply(t); code != 0 {
				t.Fatalf("apply %d: exit %d\n%s", gen+1, code, out)
			}
			if got := sh(t, vm, "cat /run/mcp-demo.out; systemctl is-active mcp-demo.service"); got != strings.TrimSpace(content)+"\nactive" {
				t.Errorf("apply %d: the unit runs with %q, want %q", gen+1, got, content)
			}
		}
		if now := readGuest(t, vm); now.bootID != first.bootID {
			t.Errorf("the machine rebooted (boot id %s, then %s): a restart needs none", first.bootID, now.bootID)
		}
	})

	t.Run("kernel argument and OS commit", func(t *testing.T) {
		v2 := f.img.Commits["v2"]
		if out := sh(t, vm, "ostree rev-parse vm:mcp/v2 2>/dev/null || echo none"); out != "none" {
			t.Fatalf("the machine has vm:mcp/v2 before the update: %q", out)
		}
		f.setHCL(t, vmPool("vm:mcp/v2", `"mcp.test=b"`, "generation 2\n"))
		plan, _ := f.mcp(t, "mcp-apply", "plan", "-no-color")
		if !strings.Contains(plan, "stage ahead; in its slot: cordon, drain") {
			t.Errorf("the plan does not show staging as its own phase:\n%s", lastLines(plan, 20))
		}
		seen := watchStaging(t, f, vm, first.bootID, v2)
		out, code := f.apply(t)
		seen.stop()
		if code != 0 {
			t.Fatalf("apply: exit %d\n%s", code, out)
		}
		seen.check(t)
		if got := sh(t, vm, "ostree admin status | grep -c '(staged)' || true; ls /run/ostree/staged-deployment-locked 2>/dev/null || true"); got != "0" {
			t.Errorf("after the update the machine has (staged deployments, the finalization lock): %q, want none", got)
		}
		now := readGuest(t, vm)
		if now.bootID == first.bootID {
			t.Fatalf("the machine did not reboot (boot id %s)", now.bootID)
		}
		if resets := countEnded(vm.Boots(), "guest-reset"); resets != 1 {
			t.Errorf("the machine rebooted %d times, want once: %+v", resets, vm.Boots())
		}
		if !slices.Contains(strings.Fields(now.cmdline), "mcp.test=b") {
			t.Errorf("/proc/cmdline %q lacks mcp.test=b", now.cmdline)
		}
		if b := now.booted(); b.Checksum != v2 || b.Refspec != "vm:mcp/v2" || b.Serial != 0 {
			t.Errorf("booted deployment %+v, want commit v2 %s from vm:mcp/v2, serial 0 (the staged deployment, not a second checkout)", b, v2)
		}
		if rb := rollback(now); rb.Checksum != f.img.Commits["v1"] {
			t.Errorf("rollback deployment %+v, want v1 %s kept: %+v", rb, f.img.Commits["v1"], now.deploys)
		}
		if got := sh(t, vm, "cat /usr/share/mcp-vm/image /run/mcp-demo.out"); got != "v2\ngeneration 2" {
			t.Errorf("after the pivot the machine has %q, want v2's file and the config's", got)
		}
		if n := f.node(t, "vm-0"); n.Annotations[protocol.State] != model.StateDone {
			t.Errorf("node is %s (%s), want Done", n.Annotations[protocol.State], n.Annotations[protocol.Reason])
		}
	})

	t.Run("commit that does not boot", func(t *testing.T) {
		before := readGuest(t, vm)
		f.setHCL(t, vmPool("vm:mcp/broken", `"mcp.test=b"`, "generation 2\n"))
		out, code := f.apply(t)
		if code == 0 {
			t.Errorf("apply: exit 0 although the node fell back to its old deployment\n%s", out)
		}
		boots := vm.Boots()
		if failed := boots[len(boots)-2]; failed.BootID != "" || !strings.Contains(failed.Entry.Title, "broken") {
			t.Errorf("the broken commit's boot %+v: want one that never came up", failed)
		}
		now := readGuest(t, vm)
		if b := now.booted(); b.Checksum != before.booted().Checksum {
			t.Errorf("booted %+v after the fallback, want the previous deployment %+v", b, before.booted())
		}
		n := f.node(t, "vm-0")
		ann := n.Annotations
		if ann[protocol.State] != model.StateDegraded || !strings.Contains(ann[protocol.Reason], "expected vm:mcp/broken, found vm:mcp/v2") {
			t.Errorf("node is %s (%s), want Degraded naming expected vm:mcp/broken and found vm:mcp/v2", ann[protocol.State], ann[protocol.Reason])
		}
		if ann[protocol.CurrentConfig] == ann[protocol.DesiredConfig] {
			t.Errorf("node reports current-config %s, which it did not boot", ann[protocol.CurrentConfig])
		}

		f.setHCL(t, vmPool("vm:mcp/v3", `"mcp.test=b"`, "generation 2\n"))
		out, code = f.apply(t)
		if code != 0 {
			t.Errorf("apply of the fixed commit: exit %d\n%s", code, out)
		}
		now = readGuest(t, vm)
		if b := now.booted(); b.Checksum != f.img.Commits["v3"] {
			t.Errorf("booted %+v, want v3 %s", b, f.img.Commits["v3"])
		}
		if n := f.node(t, "vm-0"); n.Annotations[protocol.State] != model.StateDone {
			t.Errorf("node is %s (%s) after the fixed commit, want Done", n.Annotations[protocol.State], n.Annotations[protocol.Reason])
		}
	})
}

// staging is what watchStaging saw of a machine during an apply.
type staging struct {
	stop  func()
	check func(t *testing.T)
}

// watchStaging samples the machine and its Node until stop: whether the commit v2 was
// pulled and its deployment checked out while the node was in service (schedulable before
// and after the machine was read, still on the boot bootID), and when the Node was
// cordoned and uncordoned (logged: what the budget's slot covers of the node's service).
func watchStaging(t *testing.T, f *vmFleet, vm *vmnode.VM, bootID, v2 string) staging {
	type sample struct {
		schedulable, bootedBefore, pulled, deployed bool
	}
	var mu sync.Mutex
	var samples []sample
	var cordoned, uncordoned time.Duration
	done := make(chan struct{})
	var wg sync.WaitGroup
	// every runs f each d until stop.
	every := func(d time.Duration, f func()) {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				case <-time.After(d):
				}
				f()
			}
		})
	}
	began := time.Now()
	every(200*time.Millisecond, func() {
		u := f.node(t, "vm-0").Spec.Unschedulable
		mu.Lock()
		if u && cordoned == 0 {
			cordoned = time.Since(began)
		}
		if !u && cordoned != 0 && uncordoned == 0 {
			uncordoned = time.Since(began)
		}
		mu.Unlock()
	})
	every(500*time.Millisecond, func() {
		u1 := f.node(t, "vm-0").Spec.Unschedulable
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, err := vm.Run(ctx, "cat /proc/sys/kernel/random/boot_id; ostree rev-parse vm:mcp/v2 2>/dev/null || echo none; ls /ostree/deploy/debian/deploy/")
		cancel()
		u2 := f.node(t, "vm-0").Spec.Unschedulable
		if err != nil {
			return // rebooting
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		s := sample{schedulable: !u1 && !u2, bootedBefore: len(lines) > 0 && lines[0] == bootID}
		s.pulled = len(lines) > 1 && lines[1] == v2
		s.deployed = slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, v2+".") && !strings.HasSuffix(l, ".origin") })
		mu.Lock()
		samples = append(samples, s)
		mu.Unlock()
	})
	var ended time.Duration
	return staging{
		stop: func() { ended = time.Since(began); close(done); wg.Wait() },
		check: func(t *testing.T) {
			t.Helper()
			if uncordoned == 0 { // uncordoned between the last look and the apply's end: at most then
				uncordoned = ended
			}
			var pulled, deployed bool
			for _, s := range samples {
				pulled = pulled || (s.schedulable && s.bootedBefore && s.pulled)
				deployed = deployed || (s.schedulable && s.bootedBefore && s.deployed)
			}
			t.Logf("%d samples of the machine during the apply; cordoned %v after the apply began (the stage, in service), uncordoned at most %v later (out of service)",
				len(samples), cordoned.Round(time.Second), (uncordoned - cordoned).Round(time.Second))
			if !pulled {
				t.Errorf("no sample shows v2 pulled while the node was schedulable: %+v", samples)
			}
			if !deployed {
				t.Errorf("no sample shows v2's deployment checked out while the node was schedulable: %+v", samples)
			}
		},
	}
}

func countEnded(boots []vmnode.Boot, reason string) int {
	n := 0
	for _, b := range boots {
		if b.Ended == reason {
			n++
		}
	}
	return n
}

func rollback(s guestState) systemdhost.OSTreeDeployment {
	for _, d := range s.deploys {
		if d.Rollback {
			return d
		}
	}
	return systemdhost.OSTreeDeployment{}
}
