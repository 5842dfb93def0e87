package acceptance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/testkit/chaos"
)

// signalRuns is how many times each way of stopping apply is tried (MCP_SIGNAL_RUNS).
func signalRuns(t *testing.T) int { return runsFrom(t, "MCP_SIGNAL_RUNS") }

// runsFrom is how many times a test that runs the real binary over and over runs its case:
// 20, or the number in the environment variable env; none under -short.
func runsFrom(t *testing.T, env string) int {
	if testing.Short() {
		t.Skip("runs the real binary many times")
	}
	if n, err := strconv.Atoi(os.Getenv(env)); err == nil && n > 0 {
		return n
	}
	return 20
}

// stopTally sums up, over runs, what the fleet showed once a stopped apply had exited.
type stopTally struct {
	runs, cordoned, notReady, locks int
	signalled                       int // runs whose apply was still running when the signal came
	reRun                           int // runs whose rollout the stop cut short (a re-run had work)
}

func (s stopTally) String() string {
	return fmt.Sprintf("%d runs (signalled while apply ran: %d): nodes left cordoned %d, NotReady %d, locks left %d; rollouts cut short (re-run needed) %d",
		s.runs, s.signalled, s.cordoned, s.notReady, s.locks, s.reRun)
}

// judge reads the fleet the moment apply has exited — no node cordoned or NotReady, the
// state lock released — then re-runs apply until the plan is empty (converge).
func (s *stopTally) judge(t *testing.T, dir, out string) {
	t.Helper()
	s.runs++
	nodes, _ := filepath.Glob(filepath.Join(dir, "fleet/nodes/*/node.json"))
	for _, p := range nodes {
		var n model.Node
		b, err := os.ReadFile(p)
		if err != nil || json.Unmarshal(b, &n) != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if n.Unschedulable {
			s.cordoned++
			t.Errorf("%s left cordoned once apply exited", n.Name)
		}
		if !n.Ready {
			s.notReady++
			t.Errorf("%s left NotReady once apply exited", n.Name)
		}
	}
	s.lockReleased(t, dir)
	if t.Failed() {
		t.Logf("the end of apply's output:\n%s", lastLines(out, 15))
		return
	}
	s.converge(t, dir)
}

func (s *stopTally) lockReleased(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "mcp.state.lock")); !os.IsNotExist(err) {
		s.locks++
		t.Errorf("the state lock is left once apply exited (%v)", err)
	}
}

// converge re-runs apply until the plan is empty and judges the event logs: each infra
// node rebooted once into its config, nothing left cordoned, budgets held.
func (s *stopTally) converge(t *testing.T, dir string) {
	t.Helper()
	runs, failed, err := chaos.Runner{MCP: mcpBinary(t), Dir: dir}.Converge(3, t.Logf)
	if err != nil || len(failed) > 0 {
		t.Fatalf("re-runs after the stop: %v %v", failed, err)
	}
	if runs > 0 {
		s.reRun++
	}
	logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	if r := chaos.Judge(logs, map[string]int{"worker": 2, "infra": 1}); !r.OK() || r.Reboots != 2 {
		t.Errorf("from the event logs (want the 2 infra nodes rebooted once each):\n%s", r)
	}
}

// signalQuickstart is the quickstart with short drains and reboots: a rollout of about
// a second and a half, mostly the infra nodes rebooting one at a time.
func signalQuickstart(t *testing.T) string { return localQuickstart(t, "100ms", "500ms") }

// `timeout 1 mcp apply`: coreutils signals mcp and then its process group, so two SIGTERMs
// arrive together. They are one interrupt: the nodes started finish, none is left
// cordoned, the lock is released, and the next apply converges without a second reboot.
func TestTimeoutStopsApplyGracefully(t *testing.T) {
	exclusive(t)
	n := signalRuns(t)
	timeout, err := exec.LookPath("timeout")
	if err != nil {
		t.Skip("no timeout(1) here")
	}
	var tally stopTally
	for i := range n {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			// Reboots of a second: the rollout lasts past the signal.
			dir := localQuickstart(t, "100ms", "1s")
			cmd := exec.Command(timeout, "1", mcpBinary(t), "-chdir="+dir, "apply", "-auto-approve", "-no-color")
			out, err := cmd.CombinedOutput()
			if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 124 { // timeout's "it timed out"
				tally.signalled++
			}
			tally.judge(t, dir, string(out))
		})
	}
	t.Log(tally)
}

// `mcp apply | head -1` (and `mcp apply -json | head -3`): the reader goes away at once,
// the apply goes on to the end without its audience and exits 0, its real result; nothing
// is left cordoned, the lock is released, and the plan is empty without a re-run.
func TestApplyIntoHeadGoesOn(t *testing.T) {
	exclusive(t)
	n := signalRuns(t)
	head, err := exec.LookPath("head")
	if err != nil {
		t.Skip("no head(1) here")
	}
	var tally stopTally
	cut := 0 // runs in which apply saw its stdout closed (rather than finishing first)
	for i := range n {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			dir := signalQuickstart(t)
			args, lines := []string{"-chdir=" + dir, "apply", "-auto-approve", "-no-color"}, "-1"
			if i%2 == 1 {
				args, lines = append(args, "-json"), "-3"
			}
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			apply, reader := exec.Command(mcpBinary(t), args...), exec.Command(head, lines)
			var stderr, shown bytes.Buffer
			apply.Stdout, apply.Stderr = w, &stderr
			reader.Stdin, reader.Stdout = r, &shown
			if err := reader.Start(); err != nil {
				t.Fatal(err)
			}
			if err := apply.Start(); err != nil {
				t.Fatal(err)
			}
			r.Close()
			w.Close()
			reader.Wait()
			err = apply.Wait()
			if err != nil {
				t.Errorf("apply with its reader gone: %v (want exit 0: every node updated)", err)
			}
			if shown.Len() == 0 {
				t.Errorf("head read nothing")
			}
			if bytes.Contains(stderr.Bytes(), []byte("the apply goes on without showing its progress there")) {
				cut++
			}
			tally.judge(t, dir, stderr.String())
			if tally.reRun > 0 {
				t.Fatalf("the apply stopped short of the end: a re-run had work")
			}
		})
	}
	t.Logf("%s; stdout closed under apply in %d", tally, cut)
}

// A terminal closed under apply: its output goes nowhere and SIGHUP, SIGCONT and SIGHUP
// again (the kernel's and the shell's) reach its process group — at a node's cordon, its
// reboot or its return. One interrupt: the nodes started finish, none is left cordoned,
// the lock is released, and the next apply converges without a second reboot.
func TestHangupStopsApplyGracefully(t *testing.T) {
	exclusive(t)
	n := signalRuns(t)
	moments := []local.EventKind{local.EventCordon, local.EventReboot, local.EventReady}
	var tally stopTally
	for i := range n {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			dir := signalQuickstart(t)
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			apply := exec.Command(mcpBinary(t), "-chdir="+dir, "apply", "-auto-approve", "-no-color")
			var stderr bytes.Buffer
			apply.Stdout, apply.Stderr = w, &stderr
			apply.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := apply.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			at := moments[i%len(moments)]
			waitEvent(t, dir, func(e local.Event) bool { return e.Kind == at })
			r.Close()
			for _, s := range []syscall.Signal{syscall.SIGHUP, syscall.SIGCONT, syscall.SIGHUP} {
				syscall.Kill(-apply.Process.Pid, s)
			}
			tally.signalled++
			apply.Wait()
			if st, ok := apply.ProcessState.Sys().(syscall.WaitStatus); ok && st.Signaled() {
				t.Errorf("apply was killed by %v", st.Signal())
			}
			tally.judge(t, dir, stderr.String())
		})
	}
	t.Log(tally)
}

// A second interrupt, given after the first was taken (more than a second later), quits at
// once — and still releases the state lock, so the next apply needs no force-unlock; it
// continues the node left mid-reboot without rebooting it again.
func TestSecondInterruptForcesAndReleasesTheLock(t *testing.T) {
	exclusive(t)
	if testing.Short() {
		t.Skip("runs real processes")
	}
	dir := localQuickstart(t, "100ms", "5s")
	apply := exec.Command(mcpBinary(t), "-chdir="+dir, "apply", "-auto-approve", "-no-color")
	var stderr lockedBuffer
	apply.Stdout, apply.Stderr = io.Discard, &stderr
	if err := apply.Start(); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, dir, func(e local.Event) bool { return e.Kind == local.EventReboot })
	apply.Process.Signal(os.Interrupt)
	waitUntil(t, time.Minute, func() bool { return strings.Contains(stderr.String(), "Interrupt received (interrupt)") },
		func() string { return "the first interrupt was not taken:\n" + stderr.String() })
	time.Sleep(1500 * time.Millisecond) // a person insisting, not the same burst
	apply.Process.Signal(os.Interrupt)
	apply.Wait()
	if code := apply.ProcessState.ExitCode(); code != 130 || !strings.Contains(stderr.String(), "releasing the state lock and quitting now") {
		t.Fatalf("the second interrupt: exit %d, want 130 at once\n%s", code, stderr.String())
	}
	// The node stopped mid-reboot is left as it was; the lock is not.
	var tally stopTally
	if tally.lockReleased(t, dir); !t.Failed() {
		tally.converge(t, dir)
	}
}

// Each long-running command says on an interrupt what it does — none of them starts nodes —
// and ends with exit 0.
func TestInterruptNoticesOfLongRunningCommands(t *testing.T) {
	exclusive(t)
	if testing.Short() {
		t.Skip("runs real processes")
	}
	dir := signalQuickstart(t)
	for _, tt := range []struct {
		args   []string
		ready  func(stdout, stderr string) bool
		notice string
	}{
		{[]string{"serve", "-listen", "127.0.0.1:0"}, func(_, e string) bool { return strings.Contains(e, `"listening"`) },
			"stopping the boot server"},
		{[]string{"drift", "-every", "1h", "-listen", "127.0.0.1:0"}, func(o, _ string) bool { return o != "" },
			"stopping the periodic drift runs"},
		{[]string{"status", "-watch"}, func(o, _ string) bool { return o != "" }, "stopped watching; nothing was changed"},
	} {
		t.Run(tt.args[0], func(t *testing.T) {
			cmd := exec.Command(mcpBinary(t), append([]string{"-chdir=" + dir}, tt.args...)...)
			var stdout, stderr lockedBuffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			waitUntil(t, time.Minute, func() bool { return tt.ready(stdout.String(), stderr.String()) },
				func() string { return "not started:\n" + stderr.String() })
			cmd.Process.Signal(os.Interrupt)
			err := cmd.Wait()
			msg := stderr.String()
			if err != nil || !strings.Contains(msg, "Interrupt received (interrupt): "+tt.notice) || strings.Contains(msg, "nodes") {
				t.Errorf("mcp %s interrupted: %v\n%s", tt.args[0], err, msg)
			}
		})
	}
}
