package acceptance

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/mcpfleet/mcp/acceptance/vmnode"
	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/nodeexec"
)

// outOfServiceTarget is issue 46's target for an update of kernel arguments and the OS
// commit: the node out of service (cordoned) no longer than this many times its bare
// reboot plus its drain.
const outOfServiceTarget = 1.15

// TestVMBenchUpdateVsReboot measures, on one real machine, a bare reboot (systemctl
// reboot → the machine answers again) against mcp's update of it (apply of a kernel
// argument and a new OS commit), alternately, MCP_VM_BENCH_RUNS times each (default 3).
//
// What counts is the time the node is out of service, read from the Node object itself
// (a watch of spec.unschedulable: cordon → uncordon), not from anything mcp says; it is
// compared with the bare reboot plus the drain (cordon → the hand-over annotation), and
// the target outOfServiceTarget is checked and reported (not asserted: a measurement on
// a shared, emulated machine). Each update is broken down from outside the machine:
// before the slot (apply's refresh and plan, and whatever it stages ahead of the cordon),
// the drain, the update's work inside the slot up to the reboot (write, `ostree pull`,
// `ostree admin deploy`: the staging the slot still holds — its end is the agent's
// pending record appearing in the guest), down and up (the machine's shutdown and boot),
// the agent to Done (its start, verify, report) and Done to the uncordon; the agent's
// start is broken down inside the guest from systemd's and the journal's monotonic
// clock (command channel up → the agent's process → its first log line → its Done
// sent). Runs only with MCP_VM_BENCH=1 (make bench-vm).
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
	// A persistent journal (/var stays across deployments): the slot's steps, logged by the
	// agent before the update's reboot, are read back after it (slotSteps).
	sh(t, vm, "mkdir -p /var/log/journal && journalctl --flush")
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	images := []string{"vm:mcp/v2", "vm:mcp/v3"}
	var reboots, outs, drains, budgets []time.Duration
	phases := map[string][]time.Duration{}
	met := 0
	for i := range runs {
		id := readGuest(t, vm).bootID
		began := time.Now()
		sh(t, vm, "systemctl reboot --no-block")
		if _, err := vm.WaitNewBoot(ctx, id); err != nil {
			t.Fatal(err)
		}
		reboot := time.Since(began)
		reboots = append(reboots, reboot)
		t.Logf("run %d: bare reboot %v; %s", i+1, reboot.Round(100*time.Millisecond), agentStart(t, vm, false))
		f.setHCL(t, vmPool(images[i%2], `"mcp.bench=`+strconv.Itoa(i)+`"`, "generation 1\n"))
		desired := f.node(t, "vm-0").Annotations[protocol.DesiredConfig]
		w := f.watchUpdate(t, vm, desired)
		began = time.Now()
		if out, code := f.apply(t); code != 0 {
			t.Fatalf("apply: exit %d\n%s", code, out)
		}
		end := time.Now()
		ph := w.phases(t, began, end)
		for k, d := range ph {
			phases[k] = append(phases[k], d)
		}
		out, drain := ph[phaseOut], ph[phaseDrain]
		if out == 0 {
			t.Fatalf("run %d: the Node was not seen cordoned and uncordoned: %s", i+1, w.describe(ph))
		}
		outs, drains, budgets = append(outs, out), append(drains, drain), append(budgets, reboot+drain)
		verdict := "target met"
		if float64(out) > outOfServiceTarget*float64(reboot+drain) {
			verdict = fmt.Sprintf("target NOT met, by %v", (out - time.Duration(outOfServiceTarget*float64(reboot+drain))).Round(100*time.Millisecond))
		} else {
			met++
		}
		t.Logf("run %d: out of service %v against bare reboot + drain %v (%.2f×; target ≤ %.2f×: %s); update %v: %s; %s", i+1,
			out.Round(100*time.Millisecond), (reboot + drain).Round(100*time.Millisecond), float64(out)/float64(reboot+drain),
			outOfServiceTarget, verdict, end.Sub(began).Round(100*time.Millisecond), w.describe(ph), agentStart(t, vm, true))
		t.Logf("run %d: %s", i+1, slotSteps(t, vm))
	}
	med := map[string]time.Duration{}
	for k, ds := range phases {
		med[k] = median(ds)
	}
	t.Logf("medians of %d runs: out of service %v against bare reboot %v + drain %v = %v (%.2f×; target ≤ %.2f×, met in %d of %d runs); phases: %s; load average %s",
		runs, median(outs), median(reboots), median(drains), median(budgets), float64(median(outs))/float64(median(budgets)),
		outOfServiceTarget, met, runs, (&updateWatch{}).describe(med), loadAverage())
}

// The phases of an update, in order, and the out-of-service time they make up (all but
// the first).
const (
	phaseBefore = "before the slot (refresh, plan, staging ahead of the cordon)"
	phaseDrain  = "drain (cordon → hand-over)"
	phaseStage  = "staging in the slot (write, pull, deploy → reboot asked)"
	phaseBoot   = "down and up"
	phaseAgent  = "agent to Done"
	phaseEnd    = "Done → uncordon"
	phaseOut    = "out of service (cordon → uncordon)"
)

var updatePhases = []string{phaseBefore, phaseDrain, phaseStage, phaseBoot, phaseAgent, phaseEnd, phaseOut}

// updateWatch records, from outside the machine, when an update's moments happen.
type updateWatch struct {
	mu                                                    sync.Mutex
	cordon, handover, pending, down, up, doneAt, uncordon time.Time
	stop                                                  context.CancelFunc
	watchErr                                              error
}

func (f *vmFleet) watchUpdate(t *testing.T, vm *vmnode.VM, oldDesired string) *updateWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &updateWatch{stop: cancel}
	t.Cleanup(cancel)
	bootsBefore := len(vm.Boots())
	name := f.name(f.short(vm.Name))
	seen := func(n *corev1.Node) {
		a, now := n.Annotations, time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.cordon.IsZero() && n.Spec.Unschedulable {
			w.cordon = now
		}
		if !w.cordon.IsZero() && w.uncordon.IsZero() && !n.Spec.Unschedulable {
			w.uncordon = now
		}
		// The slot's hand-over: after the cordon (a stage's, ahead of it, is not the drain's end).
		if w.handover.IsZero() && !w.cordon.IsZero() && a[protocol.DesiredConfig] != oldDesired {
			w.handover = now
		}
		if !w.handover.IsZero() && w.doneAt.IsZero() && a[protocol.CurrentConfig] == a[protocol.DesiredConfig] && a[protocol.State] == "Done" {
			w.doneAt = now
		}
	}
	started := make(chan struct{})
	go func() { // the Node, as the API server changes it: a watch, each event timed as it comes
		sel := fields.OneTermEqualSelector("metadata.name", name).String()
		once := sync.OnceFunc(func() { close(started) })
		defer once()
		for ctx.Err() == nil {
			wi, err := f.env.Client.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: sel})
			if err != nil {
				w.mu.Lock()
				w.watchErr = err
				w.mu.Unlock()
				time.Sleep(100 * time.Millisecond)
				continue
			}
			once()
			for ev := range wi.ResultChan() {
				if n, ok := ev.Object.(*corev1.Node); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
					seen(n)
				}
			}
			wi.Stop()
		}
	}()
	<-started
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

// phases: began → cordon → hand-over → pending record (or, when the looks missed it, the
// old boot's end) → up → Done → uncordon. "down and up" runs from the pending record
// (the agent asks for the reboot just after writing it) to the command channel's answer,
// so it holds the shutdown of the old deployment and the boot of the new, as a bare
// reboot does.
func (w *updateWatch) phases(t *testing.T, began, end time.Time) map[string]time.Duration {
	// The watch may deliver the uncordon an instant after apply returns.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		w.mu.Lock()
		done := !w.uncordon.IsZero()
		w.mu.Unlock()
		if done {
			break
		}
	}
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watchErr != nil {
		t.Logf("watching the node: %v", w.watchErr)
	}
	asked := w.pending
	if asked.IsZero() { // the agent rebooted between two looks: the old boot's end is the nearest
		asked = w.down
	}
	ts := []time.Time{began, w.cordon, w.handover, asked, w.up, w.doneAt, w.uncordon}
	out := map[string]time.Duration{}
	for i, name := range updatePhases[:len(ts)-1] {
		if !ts[i].IsZero() && !ts[i+1].IsZero() {
			out[name] = ts[i+1].Sub(ts[i])
		}
	}
	if !w.cordon.IsZero() && !w.uncordon.IsZero() {
		out[phaseOut] = w.uncordon.Sub(w.cordon)
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

// agentStart says, from inside the machine's running boot (systemd's and the journal's
// monotonic clock, seconds since the kernel started), when the command channel came up,
// when the agent's process started, when it logged its first line (before its
// kubeconfig and D-Bus) and its "agent" line (after them) and, after an
// update's reboot, when it had reported Done ("resumed after reboot" is logged once the
// Done patch is in); and what the agent's unit waited for (systemd-analyze
// critical-chain).
func agentStart(t *testing.T, vm *vmnode.VM, resumed bool) string {
	out := sh(t, vm, `systemctl show -P ActiveEnterTimestampMonotonic vm-agent.service
systemctl show -P ExecMainStartTimestampMonotonic mcp-agent.service
journalctl -b -u mcp-agent.service -o short-monotonic --no-pager | grep -m1 '"msg":"starting"' || echo -
journalctl -b -u mcp-agent.service -o short-monotonic --no-pager | grep -m1 '"msg":"agent"' || echo -
journalctl -b -u mcp-agent.service -o short-monotonic --no-pager | grep -m1 '"msg":"resumed after reboot"' || echo -
systemd-analyze critical-chain --no-pager mcp-agent.service 2>&1 | tail -n +3 | head -8 | tr -s ' \n' ' '`)
	lines := strings.SplitN(out, "\n", 6)
	for len(lines) < 6 {
		lines = append(lines, "")
	}
	us := func(s string) float64 { n, _ := strconv.ParseFloat(strings.TrimSpace(s), 64); return n / 1e6 }
	stamp := regexp.MustCompile(`^\[\s*([0-9.]+)\]`)
	js := func(s string) float64 {
		if m := stamp.FindStringSubmatch(s); m != nil {
			n, _ := strconv.ParseFloat(m[1], 64)
			return n
		}
		return 0
	}
	channel, exec, first, ready, done := us(lines[0]), us(lines[1]), js(lines[2]), js(lines[3]), js(lines[4])
	s := fmt.Sprintf("in the guest: command channel up at %.1f s, agent's process %.1f s, its first line %.1f s, kubeconfig and D-Bus ready %.1f s", channel, exec, first, ready)
	if resumed {
		s += fmt.Sprintf(", its Done sent %.1f s", done)
	}
	return s + "; the unit's critical chain: " + strings.TrimSpace(lines[5])
}

// slotSteps says, from the agent's journal of the boot before the update's reboot, when
// the slot's hand-over came and each of its steps was done, in seconds after the
// hand-over, with the commands each ran and their time, and when the machine reached its
// shutdown target.
func slotSteps(t *testing.T, vm *vmnode.VM) string {
	out := sh(t, vm, `journalctl -b -1 -o short-monotonic --no-pager -u mcp-agent.service | grep -E '"msg":"(hand-over|step done|ran)"' || true
journalctl -b -1 -o short-monotonic --no-pager | grep -m1 -E 'Reached target.*(Reboot|System Shutdown)' || true`)
	stamp := regexp.MustCompile(`^\[\s*([0-9.]+)\]`)
	step := regexp.MustCompile(`"step":"([^"]*)"`)
	ran := regexp.MustCompile(`"command":"((?:\S+ ){0,2}\S+)[^"]*","took":"([^"]*)"`)
	var parts []string
	var t0 float64
	for _, line := range strings.Split(out, "\n") {
		m := stamp.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		at, _ := strconv.ParseFloat(m[1], 64)
		switch {
		case strings.Contains(line, `"msg":"hand-over"`):
			t0 = at
			parts = append(parts[:0], fmt.Sprintf("hand-over at %.1f s", at))
		case ran.MatchString(line):
			m := ran.FindStringSubmatch(line)
			parts = append(parts, fmt.Sprintf("(%s: %s)", m[1], m[2]))
		case step.MatchString(line):
			parts = append(parts, fmt.Sprintf("%s +%.1f", step.FindStringSubmatch(line)[1], at-t0))
		case at >= t0:
			parts = append(parts, fmt.Sprintf("shutdown target reached +%.1f", at-t0))
		}
	}
	if len(parts) == 0 {
		return "the slot's steps: not in the journal"
	}
	return "the slot's steps (s after the last hand-over): " + strings.Join(parts, ", ")
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2].Round(100 * time.Millisecond)
}
