package acceptance

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/acceptance/vmnode"
	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
)

// TestVMFirstBoot boots a fresh machine, from the image's v1, into a pool whose OS image is
// v2, the way a new node comes up: its boot loader passes ignition.firstboot and the
// boot server's URL for the pool on the first boot only; the real Ignition client fetches
// the pool's config from `mcp serve` and writes it; the node's agent finds the first-boot
// record, pivots to v2 and reboots once, verifies and reports Done, so the node joins
// already on its pool's config. Judged from inside the machine (its files, its units, the
// booted deployment, boot ids) and from the Node.
func TestVMFirstBoot(t *testing.T) {
	machines(t)
	f := newVMCluster(t, vmPool("vm:mcp/v2", "", "first boot\n"))
	// The pool has no node yet: apply renders its config and the boot server serves it.
	if out, code := f.apply(t); code != 0 {
		t.Fatalf("apply with no nodes: exit %d\n%s", code, out)
	}
	url := guestURL(f.server) + "/config/vm"
	vm := f.addVM(t, "vm-new", vmnode.Options{FirstBootArgs: "ignition.firstboot ignition.platform.id=metal ignition.config.url=" + url})
	ign, err := os.ReadFile(ignitionClient(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vm.Share, "ignition"), ign, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	first, err := vm.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.waitReported(t, "vm-new", "vm:mcp/v2")
	waitUntil(t, 5*time.Minute, func() bool {
		return f.node(t, "vm-new").Annotations[protocol.State] == model.StateDone
	}, func() string {
		a := f.node(t, "vm-new").Annotations
		return "the new node did not report Done: " + a[protocol.State] + " " + a[protocol.Reason] + "\n" + vm.SerialTail(40)
	})

	g := readGuest(t, vm)
	if g.bootID == first {
		t.Errorf("the machine still runs its first boot (%s): the pivot needs a reboot", first)
	}
	boots := vm.Boots()
	if len(boots) != 2 || boots[0].Ended != "guest-reset" {
		t.Errorf("boots %+v: want the first boot and the pivot's reboot, nothing more", boots)
	}
	if !strings.Contains(boots[0].Args, "ignition.firstboot") || strings.Contains(g.cmdline, "ignition") {
		t.Errorf("first boot's command line %q, now %q: want Ignition's arguments on the first boot only", boots[0].Args, g.cmdline)
	}
	if b := g.booted(); b.Checksum != f.img.Commits["v2"] || b.Refspec != "vm:mcp/v2" {
		t.Errorf("booted %+v, want v2 %s from vm:mcp/v2", b, f.img.Commits["v2"])
	}
	if got := sh(t, vm, "cat /etc/mcp-demo.conf /run/mcp-demo.out /usr/share/mcp-vm/image; systemctl is-enabled mcp-demo.service; test -e /var/lib/mcp/firstboot.json && echo record left || true"); got != "first boot\nfirst boot\nv2\nenabled" {
		t.Errorf("the machine has %q, want the pool's file, its unit enabled and run, v2, and no first-boot record", got)
	}
	a := f.node(t, "vm-new").Annotations
	if a[protocol.CurrentConfig] == "" || a[protocol.CurrentConfig] != a[protocol.DesiredConfig] {
		t.Errorf("node reports current %q, desired %q: want the pool's config as both", a[protocol.CurrentConfig], a[protocol.DesiredConfig])
	}
	if out, code := f.mcp(t, "mcp-apply", "plan", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Errorf("plan after the first boot: exit %d, want 0 (the node joined on its pool's config)\n%s", code, out)
	}
}
