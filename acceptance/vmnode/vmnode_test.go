package vmnode

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestMachine boots a VM and plays its boot loader through a reboot and a power loss,
// judging each from inside the machine: the boot id changes, the command line is the
// default entry's, QMP tells the reboot from the power loss. MCP_VM_CAPTURE=FILE writes
// the booted node's `ostree admin status` to FILE (the parser's test data).
func TestMachine(t *testing.T) {
	img := Find(t)
	vm := New(t, img, "m0", Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	began := time.Now()
	first, err := vm.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("up in %v", time.Since(began).Round(time.Second))
	run := func(script string) string {
		t.Helper()
		out, err := vm.Run(ctx, script)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	if got := run("cat /proc/sys/kernel/random/boot_id"); got != first {
		t.Errorf("boot id %q, the channel said %q", got, first)
	}
	if cmdline := run("cat /proc/cmdline"); cmdline != vm.Boots()[0].Entry.Options {
		t.Errorf("/proc/cmdline %q, want the entry's options %q", cmdline, vm.Boots()[0].Entry.Options)
	}
	status := run("ostree admin status")
	if p := os.Getenv("MCP_VM_CAPTURE"); p != "" {
		os.WriteFile(p, []byte(status+"\n"), 0o644)
	}
	if !strings.Contains(status, "* debian "+img.Commits["v1"]) || !strings.Contains(status, "origin refspec: vm:mcp/v1") {
		t.Errorf("ostree admin status does not show v1 booted from vm:mcp/v1:\n%s", status)
	}
	if got := run("ls /sys/class/net | grep -v '^lo$' || true"); got == "" {
		t.Error("the VM has no network interface")
	}

	began = time.Now()
	run("systemctl reboot --no-block")
	second, err := vm.WaitNewBoot(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reboot cycle %v", time.Since(began).Round(time.Second))
	if b := vm.Boots(); len(b) != 2 || b[0].Ended != "guest-reset" {
		t.Errorf("boots %+v: want the first ended by guest-reset", b)
	}

	vm.Kill()
	if b := vm.Boots(); b[len(b)-1].Ended != "killed" {
		t.Errorf("last boot ended %q, want killed", b[len(b)-1].Ended)
	}
	third, err := vm.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if third == second || third == first {
		t.Errorf("boot ids %s %s %s: want three", first, second, third)
	}
	run("systemctl poweroff --no-block")
	for vm.Boots()[len(vm.Boots())-1].Ended == "" && ctx.Err() == nil {
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(time.Second)
	if b := vm.Boots(); len(b) != 3 || b[2].Ended != "guest-shutdown" {
		t.Errorf("boots %+v: want the third ended by guest-shutdown and no other", b)
	}
}
