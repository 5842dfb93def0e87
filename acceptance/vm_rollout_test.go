package acceptance

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/acceptance/vmnode"
	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec/systemdhost"
)

// TestVMRollout runs one real machine through mcp's node operations in turn, each judged
// from inside it:
//   - a file and unit change with a restart: the unit runs the new file, no reboot (same
//     boot id);
//   - a kernel argument and a new OS commit: exactly one reboot, the new deployment booted
//     with the argument on /proc/cmdline, the old one kept as the rollback;
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
		f.setHCL(t, vmPool("vm:mcp/v2", `"mcp.test=b"`, "generation 2\n"))
		if out, code := f.apply(t); code != 0 {
			t.Fatalf("apply: exit %d\n%s", code, out)
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
		if b := now.booted(); b.Checksum != f.img.Commits["v2"] || b.Refspec != "vm:mcp/v2" {
			t.Errorf("booted deployment %+v, want commit v2 %s from vm:mcp/v2", b, f.img.Commits["v2"])
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
