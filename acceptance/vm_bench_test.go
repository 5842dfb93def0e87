package acceptance

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/acceptance/vmnode"
)

// TestVMBenchUpdateVsReboot measures, on one real machine, a bare reboot (systemctl
// reboot → the machine answers again) against mcp's update of it (apply of a kernel
// argument and a new OS commit: write, pull, deploy, reboot, verify, Done), alternately,
// MCP_VM_BENCH_RUNS times each (default 3). It asserts nothing about time (timings are for
// docs/benchmarks.md, `make bench-vm`) and runs only with MCP_VM_BENCH=1.
func TestVMBenchUpdateVsReboot(t *testing.T) {
	if os.Getenv("MCP_VM_BENCH") != "1" {
		t.Skip("a measurement: set MCP_VM_BENCH=1 (make bench-vm)")
	}
	runs := 3
	if n, err := strconv.Atoi(os.Getenv("MCP_VM_BENCH_RUNS")); err == nil && n > 0 {
		runs = n
	}
	f := newVMFleet(t, vmPool("vm:mcp/v1", "", "generation 1\n"), vmnode.Options{}, "vm-0")
	vm := f.vms["vm-0"]
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	images := []string{"vm:mcp/v2", "vm:mcp/v3"}
	var reboots, updates []time.Duration
	for i := range runs {
		id := readGuest(t, vm).bootID
		began := time.Now()
		sh(t, vm, "systemctl reboot --no-block")
		if _, err := vm.WaitNewBoot(ctx, id); err != nil {
			t.Fatal(err)
		}
		reboots = append(reboots, time.Since(began))
		f.setHCL(t, vmPool(images[i%2], `"mcp.bench=`+strconv.Itoa(i)+`"`, "generation 1\n"))
		began = time.Now()
		if out, code := f.apply(t); code != 0 {
			t.Fatalf("apply: exit %d\n%s", code, out)
		}
		updates = append(updates, time.Since(began))
		t.Logf("run %d: bare reboot %v, update %v", i+1, reboots[i].Round(100*time.Millisecond), updates[i].Round(100*time.Millisecond))
	}
	t.Logf("bare reboot %v, update %v (runs: %v / %v)", median(reboots), median(updates), reboots, updates)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2].Round(100 * time.Millisecond)
}
