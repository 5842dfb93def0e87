package chaos

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Fault is what the harness does to one apply.
type Fault string

const (
	// FaultKill: SIGKILL at a random moment.
	FaultKill Fault = "sigkill"
	// FaultTerm: one SIGTERM at a random moment: a graceful stop.
	FaultTerm Fault = "sigterm"
	// FaultTimeout: SIGTERM to apply, then at once to its process group, as timeout(1)
	// sends it: one interrupt, not two.
	FaultTimeout Fault = "timeout"
	// FaultHangup: SIGHUP, SIGCONT and SIGHUP to the process group, as a closing terminal.
	FaultHangup Fault = "sighup"
	// FaultClosedStdout: apply's stdout is a pipe whose reader leaves after the first line
	// (mcp apply | head -1): the rollout must go on to its end.
	FaultClosedStdout Fault = "closed-stdout"
	// FaultSpecialFile: a FIFO, or a link to /dev/zero, is dropped where mcp reads (the
	// journal, the lock, the state's backup): apply must refuse it at once, naming it, and
	// touch no node.
	FaultSpecialFile Fault = "special-file"
	// FaultOutside: before the apply a node is changed from outside — put on hold, made
	// NotReady or Degraded, or given an injected fault — and later put back.
	FaultOutside Fault = "outside"
	// FaultNoLock: two applies with -lock=false at once: node claims alone keep them apart.
	FaultNoLock Fault = "lock-false"
)

// AllFaults are the faults a run draws from when Options.Faults is empty.
var AllFaults = []Fault{FaultKill, FaultTerm, FaultTimeout, FaultHangup, FaultClosedStdout, FaultSpecialFile, FaultOutside, FaultNoLock,
	FaultAnotherMachine, FaultRollback}

// gracefulWait bounds how long apply may take to stop after a graceful signal: its
// started nodes finish (a simulated reboot is well under a second), and it saves the state.
const gracefulWait = 2 * time.Minute

// applyCmd is an `mcp apply` of the run's configuration, in a process group of its own so
// that signals can be sent to the group as timeout(1) and a terminal send them.
func (h *harness) applyCmd(ctx context.Context, extra ...string) *exec.Cmd {
	args := append([]string{"-chdir=" + h.o.Dir, "apply", "-auto-approve", "-no-color", "-budget-wait=2m"}, extra...)
	cmd := exec.CommandContext(ctx, h.o.MCP, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// disrupt runs one apply under fault f. It returns an error only when the harness cannot
// go on; a broken promise is a problem in the report.
func (h *harness) disrupt(ctx context.Context, f Fault) error {
	h.rep.Faults[f]++
	switch f {
	case FaultClosedStdout:
		return h.closedStdout(ctx)
	case FaultSpecialFile:
		return h.specialFile(ctx)
	case FaultNoLock:
		return h.noLock(ctx)
	case FaultAnotherMachine:
		return h.anotherMachine(ctx)
	case FaultRollback:
		return h.rollback(ctx)
	case FaultOutside:
		if err := h.outside(); err != nil {
			return err
		}
		return h.signalled(ctx, FaultKill)
	}
	return h.signalled(ctx, f)
}

// signalled starts an apply and, after a random delay, sends it the fault's signals (or
// lets it finish first). SIGKILL leaves the lock to force-unlock; every other signal must
// stop apply within gracefulWait with the lock released.
func (h *harness) signalled(ctx context.Context, f Fault) error {
	delay := time.Duration(h.rng.Int64N(int64(h.o.MaxDelay) + 1))
	cmd := h.applyCmd(ctx)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return err
	}
	h.rep.Runs++
	started := time.Now()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		h.o.Log("apply finished before its %s at %s (%v)", f, delay, err)
		return h.audit(out.String(), started)
	case <-time.After(delay):
	}
	pid := cmd.Process.Pid
	switch f {
	case FaultKill:
		syscall.Kill(pid, syscall.SIGKILL)
	case FaultTerm:
		syscall.Kill(pid, syscall.SIGTERM)
	case FaultTimeout:
		syscall.Kill(pid, syscall.SIGTERM)
		syscall.Kill(-pid, syscall.SIGTERM)
	case FaultHangup:
		syscall.Kill(-pid, syscall.SIGHUP)
		syscall.Kill(-pid, syscall.SIGCONT)
		syscall.Kill(-pid, syscall.SIGHUP)
	}
	if f == FaultKill {
		<-exited
		h.kills = append(h.kills, time.Now())
		h.rep.Kills++
		h.o.Log("%s after %s", f, delay.Round(time.Millisecond))
		if err := h.audit(out.String(), started); err != nil {
			return err
		}
		if err := h.checkState(ctx); err != nil {
			h.rep.Problems = append(h.rep.Problems, fmt.Sprintf("after kill %d: %v", h.rep.Kills, err))
			return err
		}
		return h.run.UnlockDead()
	}
	select {
	case <-exited:
	case <-time.After(gracefulWait):
		syscall.Kill(-pid, syscall.SIGKILL)
		<-exited
		h.problem("apply did not stop within %s of %s:\n%s", gracefulWait, f, lastLines(out.String(), 12))
		return h.run.UnlockDead()
	}
	h.o.Log("%s after %s: apply stopped (%s)", f, delay.Round(time.Millisecond), exitOf(cmd))
	if code := cmd.ProcessState.ExitCode(); code > 2 {
		h.problem("apply exited %d after %s (want a graceful stop: 0, 1 or 2):\n%s", code, f, lastLines(out.String(), 12))
	}
	h.lockReleased(f, out.String())
	return h.audit(out.String(), started)
}

// closedStdout runs apply into a pipe whose reader leaves after the first line.
func (h *harness) closedStdout(ctx context.Context) error {
	cmd := h.applyCmd(ctx)
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &errOut
	if err := cmd.Start(); err != nil {
		return err
	}
	w.Close()
	h.rep.Runs++
	started := time.Now()
	first, _ := bufio.NewReader(r).ReadString('\n')
	r.Close() // the reader leaves: apply's next write gets EPIPE
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(gracefulWait + h.o.MaxDelay*10):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		h.problem("apply with its stdout closed did not end:\n%s", lastLines(errOut.String(), 12))
		return h.run.UnlockDead()
	}
	h.o.Log("closed stdout after %q: apply ended (%s)", strings.TrimSpace(first), exitOf(cmd))
	// It ends as the rollout does (a node failing from an outside fault is exit 1), never
	// by the signal a closed pipe sends.
	if !cmd.ProcessState.Exited() {
		h.problem("apply with its stdout closed was ended by a signal (%s):\n%s", exitOf(cmd), lastLines(errOut.String(), 12))
	}
	h.lockReleased(FaultClosedStdout, errOut.String())
	return h.audit(first+errOut.String(), started)
}

// specialFile drops a FIFO or a link to /dev/zero where mcp reads, runs apply, and
// expects a prompt refusal naming the file and no node touched; then it puts things back.
func (h *harness) specialFile(ctx context.Context) error {
	targets := []string{"mcp.state.journal", "mcp.state.lock", "mcp.state.backup"}
	rel := targets[h.rng.IntN(len(targets))]
	path := filepath.Join(h.o.Dir, rel)
	aside := path + ".chaos-aside"
	if err := os.Rename(path, aside); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	fifo := h.rng.IntN(2) == 0
	var err error
	if fifo {
		err = syscall.Mkfifo(path, 0o644)
	} else {
		err = os.Symlink("/dev/zero", path)
	}
	if err != nil {
		return err
	}
	before, err := eventCount(h.fleet())
	if err != nil {
		return err
	}
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := h.applyCmd(tctx)
	out, runErr := cmd.CombinedOutput()
	h.rep.Runs++
	what := map[bool]string{true: "a FIFO", false: "a link to /dev/zero"}[fifo]
	h.o.Log("special file: %s at %s: apply %s", what, rel, exitOf(cmd))
	switch {
	case tctx.Err() != nil:
		h.problem("apply with %s at %s did not end within 30s (a hang)", what, rel)
	case runErr == nil:
		h.problem("apply with %s at %s exited 0", what, rel)
	case !strings.Contains(string(out), rel):
		h.problem("apply with %s at %s did not name it:\n%s", what, rel, lastLines(string(out), 8))
	}
	if after, err := eventCount(h.fleet()); err == nil && after != before {
		h.problem("apply with %s at %s changed nodes (%d events, %d before)", what, rel, after, before)
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	if err := os.Rename(aside, path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// noLock runs two applies with -lock=false at once; node claims keep them off each
// other's nodes. Neither may fail for a node the other holds (exit 0 or 2).
func (h *harness) noLock(ctx context.Context) error {
	type result struct {
		out  string
		code int
	}
	results := make(chan result, 2)
	started := time.Now()
	for range 2 {
		cmd := h.applyCmd(ctx, "-lock=false")
		go func() {
			out, _ := cmd.CombinedOutput()
			results <- result{string(out), cmd.ProcessState.ExitCode()}
		}()
	}
	h.rep.Runs += 2
	var outs []string
	for range 2 {
		r := <-results
		outs = append(outs, r.out)
		if r.code != 0 && r.code != 2 {
			h.problem("one of two applies with -lock=false exited %d:\n%s", r.code, lastLines(r.out, 12))
		}
	}
	h.o.Log("two applies with -lock=false ended")
	return h.audit(strings.Join(outs, "\n"), started)
}

// outside changes a node from outside before the next apply — a hold, NotReady,
// Degraded, or an injected restart failure — or puts back one changed before.
func (h *harness) outside() error {
	if len(h.changed) > 0 && h.rng.IntN(2) == 0 {
		return h.putBack(h.rng.IntN(len(h.changed)))
	}
	p := h.o.Pools[h.rng.IntN(len(h.o.Pools))]
	node := fmt.Sprintf("%s-%d", p.Name, h.rng.IntN(p.Size))
	changes := [][2]string{
		{"hold=chaos", "hold="},
		{"ready=false", "ready=true"},
		{"state=Degraded", "state=Done"},
		{"fault.restart=chronyd.service", "fault.restart-"},
	}
	c := changes[h.rng.IntN(len(changes))]
	if _, err := h.run.Run("fleet", "set", "-fleet", h.fleet(), node, c[0]); err != nil {
		return err
	}
	h.o.Log("outside: %s %s", node, c[0])
	h.changed = append(h.changed, [3]string{node, c[0], c[1]})
	return nil
}

// putBack undoes the i-th outside change.
func (h *harness) putBack(i int) error {
	c := h.changed[i]
	h.changed = append(h.changed[:i], h.changed[i+1:]...)
	h.o.Log("outside: %s %s (was %s)", c[0], c[2], c[1])
	_, err := h.run.Run("fleet", "set", "-fleet", h.fleet(), c[0], c[2])
	return err
}

// putAllBack undoes every outside change, before the run converges.
func (h *harness) putAllBack() error {
	for len(h.changed) > 0 {
		if err := h.putBack(0); err != nil {
			return err
		}
	}
	return nil
}

// audit holds an apply's words about reboots to the event logs.
func (h *harness) audit(out string, started time.Time) error {
	problems, err := AuditReboots(h.fleet(), out, started, time.Now())
	h.rep.Problems = append(h.rep.Problems, problems...)
	return err
}

// lockReleased: an apply that stopped by itself must have released the state lock.
func (h *harness) lockReleased(f Fault, out string) {
	if _, err := os.Lstat(filepath.Join(h.o.Dir, "mcp.state.lock")); err == nil {
		h.problem("apply left the state lock after %s:\n%s", f, lastLines(out, 12))
		h.run.UnlockDead()
	}
}

func (h *harness) problem(format string, a ...any) {
	h.rep.Problems = append(h.rep.Problems, fmt.Sprintf(format, a...))
}

// eventCount is how many events the fleet's nodes have logged.
func eventCount(fleet string) (int, error) {
	files, err := filepath.Glob(filepath.Join(fleet, "nodes", "*", "events.jsonl"))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return 0, err
		}
		c, err := countLines(fh)
		fh.Close()
		if err != nil {
			return 0, err
		}
		n += c
	}
	return n, nil
}

func countLines(r io.Reader) (int, error) {
	n := 0
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		n++
	}
	return n, s.Err()
}

func exitOf(cmd *exec.Cmd) string {
	if cmd.ProcessState == nil {
		return "not run"
	}
	return cmd.ProcessState.String()
}
