package acceptance

import (
	"flag"
	"os"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/acceptance/k8senv"
	"github.com/mcpfleet/mcp/acceptance/vmnode"
)

// How the package's tests share the machine. Every test runs beside the others
// (t.Parallel), in one of three classes, so that the long ones — the real machines above
// all, which QEMU emulates where the CPU has no virtualisation — start at once instead of
// after everything else:
//
//   - waiting (kube tests): they mostly wait on agents, reboots, drains and Leases, on the
//     shared control plane; waitSlots of them at a time.
//   - exclusive: they burn CPU (the crash harness, the corpus) or time their own steps
//     (signals at moments, a terminal's frames); one at a time, as when the package ran in
//     series, but beside the waiting ones.
//   - machines (vm_*_test.go), one VM each: emulated by QEMU where the CPU has no
//     virtualisation, each burns a core while it boots; vmnode.MaxVMs at a time, which
//     vmnode also holds machine-wide (acceptance/vmnode's own test runs beside this
//     package in make test). The longest (TestVMPowerLoss, longestMachine) starts at once
//     and the others take turns in the other slot: alone here it took 10 minutes, the
//     rollout 8 and the first boot 3, so the machines take 11 minutes rather than 14
//     when the first boot happens to go first.
//
// The few tests that set the process's environment (t.Setenv: the systemd tests) cannot
// be parallel; Go runs them first, alone, for a second or two each.
var (
	waitSlots      = make(chan struct{}, 4)
	exclusiveSlots = make(chan struct{}, 1)
	machineSlots   = make(chan struct{}, vmnode.MaxVMs-1)
)

// waiting makes t a parallel test of the waiting class.
func waiting(t *testing.T) { inClass(t, waitSlots) }

// exclusive makes t a parallel test of the exclusive class.
func exclusive(t *testing.T) { inClass(t, exclusiveSlots) }

// machines makes t a parallel test of the machines' class.
func machines(t *testing.T) { inClass(t, machineSlots) }

// longestMachine makes t the machines' class's longest test, which takes the slot the
// others leave it (vmnode still waits for a free machine-wide one).
func longestMachine(t *testing.T) { t.Parallel() }

// inClass runs t beside the others once a slot of its class is free. A wait of a second
// or more is logged in the words scripts/testtiming takes off the test's time.
func inClass(t *testing.T, slots chan struct{}) {
	t.Helper()
	t.Parallel()
	began := time.Now()
	slots <- struct{}{}
	t.Cleanup(func() { <-slots })
	if d := time.Since(began); d >= time.Second {
		t.Logf("waited %v for a slot of its class", d.Round(100*time.Millisecond))
	}
}

// parallelAll is go test's -parallel for this package when none is given: more than its
// tests, so that every test gets past t.Parallel and waits in its class's queue. A test
// waiting for its class holds one of go test's slots: with 16, the tests queued for the
// exclusive class held them all, and the machines (last in file order) started two
// minutes late, some waiting tests fourteen.
const parallelAll = "256"

// TestMain lets the classes decide how many tests run at once, and stops what the tests
// share once they are all done: the control plane (k8senv.Shared) and the mcp binaries
// (mcpBinary).
func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", parallelAll)
	}
	code := m.Run()
	k8senv.StopShared(code != 0)
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}
