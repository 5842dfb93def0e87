package acceptance

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/acceptance/vmnode"
)

// plFiles is how many files each power-loss update rewrites, each plLines lines of its
// generation, fsync'd one by one: the write phase lasts seconds on an emulated machine.
// (The rendered config, every file in it, stays well under a Secret's 1 MiB.)
const plFiles, plLines = 100, 128

// plPool is the power-loss pool: os_image image and plFiles files holding generation gen,
// written with no disruption of their own (the pivot reboots).
func plPool(image string, gen int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `
pool "vm" {
  node_selector   = { %q = "" }
  max_unavailable = 1
  os_image        = %q
}

config "20-many" {
  pools = ["vm"]
`, vmPoolLabel, image)
	for i := range plFiles {
		fmt.Fprintf(&b, `  file "/etc/mcp-pl/f%03d" {
    content   = join("", [for i in range(%d) : "gen %09d\n"])
    on_change = ["none"]
  }
`, i, plLines, gen)
	}
	b.WriteString("}\n")
	return b.String()
}

// TestVMPowerLoss kills a real machine (SIGKILL of QEMU: its disk keeps what the guest had
// handed to it) at seeded random moments of updates that rewrite plFiles files: while the
// files are written (an update of files alone, which must not reboot), after the new
// deployment of an update that also pivots is on disk, while that update reboots, and
// (a fourth round) once an update's deployment is staged ahead of its slot, behind the
// finalization lock. Each time it boots again; no file is torn (each holds one generation
// whole), the update converges (the apply that was running, or the next), the pool's
// deployment is booted, and the update rebooted the machine at most once (never, for
// files alone). MCP_VM_POWERLOSS=N makes N kills (default 3, the first three phases:
// where QEMU emulates, a round takes minutes; make chaos-vm makes 30); MCP_VM_SEED picks
// other moments.
func TestVMPowerLoss(t *testing.T) {
	longestMachine(t)
	kills, seed := 3, uint64(1)
	if n, err := strconv.Atoi(os.Getenv("MCP_VM_POWERLOSS")); err == nil && n > 0 {
		kills = n
	}
	if s, err := strconv.ParseUint(os.Getenv("MCP_VM_SEED"), 10, 64); err == nil {
		seed = s
	}
	rng := rand.New(rand.NewPCG(seed, 32))
	images := []string{"vm:mcp/v2", "vm:mcp/v3"}
	f := newVMFleet(t, plPool("vm:mcp/v1", 0), vmnode.Options{}, "vm-0")
	vm := f.vms["vm-0"]
	phases := []string{"writes", "deployed", "reboot", "staged"}
	image := "vm:mcp/v1"
	for round := 1; round <= kills; round++ {
		phase := phases[(round-1)%len(phases)]
		if phase != "writes" { // a writes round changes files alone: the machine must not reboot
			if image == images[0] {
				image = images[1]
			} else {
				image = images[0]
			}
		}
		t.Logf("round %d: update to generation %d on %s, power loss during %s (seed %d)", round, round, image, phase, seed)
		resetsBefore := countEnded(vm.Boots(), "guest-reset")
		f.setHCL(t, plPool(image, round))
		type result struct {
			out  string
			code int
		}
		applied := make(chan result, 1)
		start := func() { go func() { out, code := f.apply(t); applied <- result{out, code} }() }
		start()
		// An apply that started nothing because the fleet moved on between its plan and
		// its first node so that the plan derived again would do more than the one shown
		// (the agent, just booted after the last power loss, answering the first plan's
		// question late under load, which may change the node's steps) says to run it
		// again; the power loss waits for the apply that does.
		again := func() {
			select {
			case r := <-applied:
				if startedNothing(r.out, r.code) {
					t.Logf("round %d: the apply started nothing; applying again, as it says", round)
					start()
					return
				}
				applied <- r
			default:
			}
		}
		// An apply that ends before the machine is even touched is a broken test, not a power loss.
		select {
		case r := <-applied:
			if r.code != 0 {
				t.Fatalf("round %d: apply: exit %d before the power loss\n%s", round, r.code, r.out)
			}
			applied <- r
		case <-time.After(time.Second):
		}
		killed := f.powerLoss(t, vm, phase, round, rng, again)
		t.Logf("round %d: killed %s", round, killed)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		if _, err := vm.Start(ctx); err != nil {
			cancel()
			t.Fatalf("round %d: the machine did not boot after the power loss: %v", round, err)
		}
		cancel()
		checkGenerations(t, vm, round-1, round)
		r := <-applied
		for try := 0; r.code != 0 && try < 2; try++ {
			t.Logf("round %d: apply after the power loss: exit %d; applying again\n%s", round, r.code, lastLines(r.out, 8))
			out, code := f.apply(t)
			r = result{out, code}
		}
		if r.code != 0 {
			t.Fatalf("round %d: the update did not converge after the power loss: exit %d\n%s", round, r.code, r.out)
		}
		checkGenerations(t, vm, round, round)
		g := readGuest(t, vm)
		if b := g.booted(); b.Refspec != image {
			t.Errorf("round %d: booted %+v, want %s", round, b, image)
		}
		want := 1
		if phase == "writes" {
			want = 0
		}
		if n := countEnded(vm.Boots(), "guest-reset") - resetsBefore; n > want {
			t.Errorf("round %d: the update rebooted the machine %d times, at most %d wanted: %+v", round, n, want, vm.Boots()[len(vm.Boots())-n-1:])
		}
	}
}

// startedNothing says whether an apply exited as one that started no node because the
// fleet or the state moved on between its plan and its first node, and said to run it again.
func startedNothing(out string, code int) bool {
	return code == 2 && strings.Contains(out, "no node was started; run mcp apply again")
}

// powerLoss kills the VM in phase of the update to generation gen, after a seeded random
// delay within it, and says when it did; while it waits for the moment, again is called
// (to run an apply again that started nothing).
func (f *vmFleet) powerLoss(t *testing.T, vm *vmnode.VM, phase string, gen int, rng *rand.Rand, again func()) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// poll waits until script succeeds in the boot the update started in; it reports false
	// when that boot ended first (the moment was missed: the kill lands later).
	boots := len(vm.Boots())
	poll := func(script string) bool {
		for ctx.Err() == nil && len(vm.Boots()) == boots {
			if _, err := vm.Run(ctx, script); err == nil {
				return true
			}
			again()
			time.Sleep(200 * time.Millisecond)
		}
		if ctx.Err() != nil {
			t.Fatalf("waiting for %q in the VM: %v", script, ctx.Err())
		}
		return false
	}
	seen := true
	var delay time.Duration
	switch phase {
	case "writes": // the first file of the new generation is there
		seen = poll(fmt.Sprintf("grep -qs 'gen %09d' /etc/mcp-pl/f*", gen))
		delay = time.Duration(rng.IntN(2000)) * time.Millisecond
	case "staged": // the deployment is staged ahead of the slot (no boot entry yet)
		seen = poll("ostree admin status | grep -q '(staged)'")
		delay = time.Duration(rng.IntN(2000)) * time.Millisecond
	case "deployed": // the new deployment's boot entry is on disk
		seen = poll("ostree admin status | grep -q '(pending)'")
		delay = time.Duration(rng.IntN(3000)) * time.Millisecond
	case "reboot": // the machine went down for the update's reboot and boots again
		for len(vm.Boots()) == boots && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
		}
		delay = time.Duration(rng.IntN(15000)) * time.Millisecond
	}
	if !seen {
		delay = time.Duration(rng.IntN(15000)) * time.Millisecond
		phase = "reboot (the " + phase + " moment passed unseen)"
	}
	time.Sleep(delay)
	vm.Kill()
	return fmt.Sprintf("during %s, %v after it was seen", phase, delay)
}

// checkGenerations: every managed file in the VM holds one generation whole, from lo to hi.
func checkGenerations(t *testing.T, vm *vmnode.VM, lo, hi int) {
	t.Helper()
	// Each file is plLines lines of one generation: its line count, and its distinct lines.
	// The agent may reboot the machine while this runs (its update's reboot): read again.
	var out string
	for try := 0; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		o, err := vm.Run(ctx, `cd /etc/mcp-pl 2>/dev/null || exit 0
for f in f*; do printf '%s %s %s\n' "$f" "$(wc -l <"$f")" "$(sort -u "$f" | tr '\n' '|')"; done`)
		cancel()
		if err == nil {
			out = strings.TrimSpace(o)
			break
		}
		if try == 3 {
			t.Fatal(err)
		}
		t.Logf("reading the files: %v; again", err)
	}
	seen := 0
	for _, line := range strings.Split(out, "\n") {
		if line == "" {
			continue
		}
		seen++
		fs := strings.Fields(line)
		ok := len(fs) == 4 && fs[1] == strconv.Itoa(plLines)
		if ok {
			g, err := strconv.Atoi(strings.TrimSuffix(fs[3], "|"))
			ok = err == nil && fs[2] == "gen" && g >= lo && g <= hi
		}
		if !ok {
			t.Errorf("torn or unexpected file: %q (want %d lines of one generation in %d..%d)", line, plLines, lo, hi)
		}
	}
	if hi == lo && lo > 0 && seen != plFiles {
		t.Errorf("%d files in /etc/mcp-pl, want %d", seen, plFiles)
	}
}
