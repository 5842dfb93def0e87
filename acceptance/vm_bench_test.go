package acceptance

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/acceptance/vmnode"
	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/nodeexec"
)

// TestVMBenchUpdateVsReboot measures, on one real machine, a bare reboot (systemctl
// reboot → the machine answers again) against mcp's update of it (apply of a kernel
// argument and a new OS commit: write, pull, deploy, reboot, verify, Done), alternately,
// MCP_VM_BENCH_RUNS times each (default 3), and breaks each update down into phases seen
// from outside the machine: apply until the hand-over (refresh, plan, cordon, drain), the
// agent until it asks for the reboot (its pending record appears: writes, pull, deploy),
// the machine down and up again, the agent until Done (its start, verify, report), and
// apply's end (uncordon, health gates, state). It asserts nothing about time (timings are
// for docs/benchmarks.md, `make bench-vm`) and runs only with MCP_VM_BENCH=1.
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
	phases := map[string][]time.Duration{}
	for i := range runs {
		id := readGuest(t, vm).bootID
		began := time.Now()
		sh(t, vm, "systemctl reboot --no-block")
		if _, err := vm.WaitNewBoot(ctx, id); err != nil {
			t.Fatal(err)
		}
		reboots = append(reboots, time.Since(began))
		f.setHCL(t, vmPool(images[i%2], `"mcp.bench=`+strconv.Itoa(i)+`"`, "generation 1\n"))
		desired := f.node(t, "vm-0").Annotations[protocol.DesiredConfig]
		w := f.watchUpdate(t, vm, desired)
		began = time.Now()
		if out, code := f.apply(t); code != 0 {
			t.Fatalf("apply: exit %d\n%s", code, out)
		}
		updates = append(updates, time.Since(began))
		ph := w.phases(began, time.Now())
		for k, d := range ph {
			phases[k] = append(phases[k], d)
		}
		t.Logf("run %d: bare reboot %v, update %v: %s", i+1, reboots[i].Round(100*time.Millisecond), updates[i].Round(100*time.Millisecond), w.describe(ph))
	}
	med := map[string]time.Duration{}
	for k, ds := range phases {
		med[k] = median(ds)
	}
	t.Logf("bare reboot %v, update %v (runs: %v / %v); phases (medians): %s", median(reboots), median(updates), reboots, updates, (&updateWatch{}).describe(med))
}

// updateWatch records, from outside the machine, when an update's moments happen.
type updateWatch struct {
	mu                                  sync.Mutex
	handover, pending, down, up, doneAt time.Time
	stop                                context.CancelFunc
}

var updatePhases = []string{"apply to hand-over", "agent to reboot", "down and up", "agent to Done", "apply's end"}

func (f *vmFleet) watchUpdate(t *testing.T, vm *vmnode.VM, oldDesired string) *updateWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &updateWatch{stop: cancel}
	t.Cleanup(cancel)
	bootsBefore := len(vm.Boots())
	go func() { // the Node: hand-over and Done
		for ctx.Err() == nil {
			a := f.node(t, f.short(vm.Name)).Annotations
			now := time.Now()
			w.mu.Lock()
			if w.handover.IsZero() && a[protocol.DesiredConfig] != oldDesired {
				w.handover = now
			}
			if !w.handover.IsZero() && w.doneAt.IsZero() && a[protocol.CurrentConfig] == a[protocol.DesiredConfig] && a[protocol.State] == "Done" {
				w.doneAt = now
			}
			w.mu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
	}()
	go func() { // the machine: the pending record, the boot
		for ctx.Err() == nil {
			bs := vm.Boots()
			w.mu.Lock()
			if len(bs) > bootsBefore && w.down.IsZero() {
				w.down = bs[len(bs)-1].Began
			}
			if len(bs) > bootsBefore && bs[len(bs)-1].Up > 0 && w.up.IsZero() {
				w.up = bs[len(bs)-1].Began.Add(bs[len(bs)-1].Up)
			}
			seen := !w.pending.IsZero() || !w.down.IsZero()
			w.mu.Unlock()
			if !seen {
				c, cancel := context.WithTimeout(ctx, 2*time.Second)
				if _, err := vm.Run(c, "test -e "+nodeexec.PendingPath); err == nil {
					w.mu.Lock()
					w.pending = time.Now()
					w.mu.Unlock()
				}
				cancel()
			}
			time.Sleep(500 * time.Millisecond) // each look runs a shell in the guest: not too often
		}
	}()
	return w
}

// phases: began → hand-over → pending record (or, when the looks missed it, the old
// boot's end) → up → Done → end. "down and up" runs from the pending record (the agent asks for the
// reboot just after writing it) to the command channel's answer, so it holds the
// shutdown of the old deployment and the boot of the new, as a bare reboot does.
func (w *updateWatch) phases(began, end time.Time) map[string]time.Duration {
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	asked := w.pending
	if asked.IsZero() { // the agent rebooted between two looks: the old boot's end is the nearest
		asked = w.down
	}
	ts := []time.Time{began, w.handover, asked, w.up, w.doneAt, end}
	out := map[string]time.Duration{}
	for i, name := range updatePhases {
		if !ts[i].IsZero() && !ts[i+1].IsZero() {
			out[name] = ts[i+1].Sub(ts[i])
		}
	}
	return out
}

func (w *updateWatch) describe(ph map[string]time.Duration) string {
	var parts []string
	for _, name := range updatePhases {
		if d, ok := ph[name]; ok {
			parts = append(parts, fmt.Sprintf("%s %v", name, d.Round(100*time.Millisecond)))
		} else {
			parts = append(parts, name+" (not seen)")
		}
	}
	return strings.Join(parts, ", ")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2].Round(100 * time.Millisecond)
}
