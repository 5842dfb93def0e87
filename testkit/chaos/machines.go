package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state"
)

const (
	// FaultAnotherMachine: a second apply in a PID namespace of its own (unshare --pid
	// --fork --mount-proc: a container or another host sharing the state directory, as far
	// as PIDs go) beside a live apply, which runs on either side: from there force-unlock
	// without -force must be refused and the lock stay, and an apply with -lock=false
	// starts no node beside the live one. Half the time the live apply is then SIGKILLed
	// (its machine lost): its lock is removed with -force, as an operator who knows it dead
	// would, and the next apply takes its claims over.
	FaultAnotherMachine Fault = "another-machine"
	// FaultRollback: a node's OS rolls back at its update's reboot (fault.reboot=rollback):
	// apply fails it, Degraded. The cause is then fixed and the next apply must update the
	// node again from what it runs, with one new reboot.
	FaultRollback Fault = "os-rollback"
)

// pidNamespace is the command line that runs a command in a PID namespace of its own, or
// why there is none here.
func pidNamespace() ([]string, string) {
	if os.Geteuid() != 0 {
		return nil, "a PID namespace of its own needs root"
	}
	ns := []string{"unshare", "--pid", "--fork", "--mount-proc"}
	if out, err := exec.Command(ns[0], append(ns[1:], "true")...).CombinedOutput(); err != nil {
		return nil, fmt.Sprintf("unshare does not run here: %v %s", err, bytes.TrimSpace(out))
	}
	return ns, ""
}

// inPlace makes cmd run behind prefix (a namespace's command line; none: as it is).
func inPlace(cmd *exec.Cmd, prefix []string) *exec.Cmd {
	if len(prefix) > 0 {
		cmd.Args = append(append([]string{}, prefix...), cmd.Args...)
		cmd.Path, cmd.Err = "", nil
		if lp, err := exec.LookPath(prefix[0]); err == nil {
			cmd.Path = lp
		} else {
			cmd.Err = err
		}
	}
	return cmd
}

// anotherMachine runs FaultAnotherMachine.
func (h *harness) anotherMachine(ctx context.Context) error {
	ns, why := pidNamespace()
	if ns == nil {
		h.o.Log("another machine: no PID namespace (%s): a SIGKILL instead", why)
		return h.signalled(ctx, FaultKill)
	}
	liveIn, otherIn := []string(nil), ns
	if h.rng.IntN(2) == 0 {
		liveIn, otherIn = ns, nil
	}
	side := map[bool]string{true: "in a PID namespace of its own", false: "here"}
	live := inPlace(h.applyCmd(ctx), liveIn)
	var out bytes.Buffer
	live.Stdout, live.Stderr = &out, &out
	if err := live.Start(); err != nil {
		return err
	}
	h.rep.Runs++
	started := time.Now()
	exited := make(chan struct{})
	go func() { live.Wait(); close(exited) }()
	h.waitForLock(exited)

	if id := h.lockID(); id != "" {
		fu := inPlace(exec.CommandContext(ctx, h.o.MCP, "-chdir="+h.o.Dir, "force-unlock", id), otherIn)
		fuOut, err := fu.CombinedOutput()
		if err == nil && !ended(exited) {
			h.problem("force-unlock without -force, run %s, removed the lock of the live apply %s:\n%s",
				side[otherIn != nil], side[liveIn != nil], lastLines(string(fuOut), 8))
		}
	}
	other := inPlace(h.applyCmd(ctx, "-lock=false", "-budget-wait=1s"), otherIn)
	otherOut, _ := other.CombinedOutput()
	h.rep.Runs++
	if code := other.ProcessState.ExitCode(); code != 0 && code != 2 {
		h.problem("an apply with -lock=false %s beside the live one %s exited %d:\n%s",
			side[otherIn != nil], side[liveIn != nil], code, lastLines(string(otherOut), 12))
	}
	h.o.Log("another machine: live apply %s, the other %s (exit %d)", side[liveIn != nil], side[otherIn != nil], other.ProcessState.ExitCode())
	if h.rng.IntN(2) == 0 && !ended(exited) {
		syscall.Kill(-live.Process.Pid, syscall.SIGKILL)
		<-exited
		h.kills = append(h.kills, time.Now())
		h.rep.Kills++
		h.o.Log("another machine: the live apply %s SIGKILLed", side[liveIn != nil])
		if err := h.audit(out.String()+string(otherOut), started); err != nil {
			return err
		}
		if err := h.checkState(ctx); err != nil {
			h.rep.Problems = append(h.rep.Problems, fmt.Sprintf("after kill %d: %v", h.rep.Kills, err))
			return err
		}
		return h.run.UnlockKilled()
	}
	select {
	case <-exited:
	case <-time.After(gracefulWait + 10*h.o.MaxDelay):
		syscall.Kill(-live.Process.Pid, syscall.SIGKILL)
		<-exited
		h.problem("the live apply did not end:\n%s", lastLines(out.String(), 12))
		return h.run.UnlockKilled()
	}
	if code := live.ProcessState.ExitCode(); code > 2 {
		h.problem("the live apply %s exited %d:\n%s", side[liveIn != nil], code, lastLines(out.String(), 12))
	}
	h.lockReleased(FaultAnotherMachine, out.String())
	return h.audit(out.String()+string(otherOut), started)
}

// waitForLock waits, a random part of MaxDelay at most, for the live apply to hold the
// state lock (or to end).
func (h *harness) waitForLock(exited <-chan struct{}) {
	deadline := time.Now().Add(time.Duration(h.rng.Int64N(int64(h.o.MaxDelay) + 1)))
	for time.Now().Before(deadline) && h.lockID() == "" && !ended(exited) {
		time.Sleep(10 * time.Millisecond)
	}
}

// lockID is the state lock's ID ("" when it is not held or does not read yet).
func (h *harness) lockID() string {
	var info state.LockInfo
	b, err := os.ReadFile(filepath.Join(h.o.Dir, "mcp.state.lock"))
	if err != nil || json.Unmarshal(b, &info) != nil {
		return ""
	}
	return info.ID
}

// ended says whether exited is closed: the apply has ended.
func ended(exited <-chan struct{}) bool {
	select {
	case <-exited:
		return true
	default:
		return false
	}
}

// rollback runs FaultRollback: a node's OS rolls back under an apply, which is stopped
// (SIGTERM) once the node has failed; then the fault is fixed and the next apply runs until
// the node is healed, and is stopped too. A node the rollback Degraded must be Done after
// that, with no second reboot of its own for one update (the judge's count).
//
// Both applies are stopped rather than run to their end, and their drains bounded to 5 s: a
// node Degraded keeps the pod its drain evicted away, and other nodes' drains wait for that
// PodDisruptionBudget until their timeout.
func (h *harness) rollback(ctx context.Context) error {
	p := h.o.Pools[h.rng.IntN(len(h.o.Pools))]
	node := fmt.Sprintf("%s-%d", p.Name, h.rng.IntN(p.Size))
	if _, err := h.run.Run("fleet", "set", "-fleet", h.fleet(), node, "fault.reboot=rollback"); err != nil {
		return err
	}
	failed := func() bool { return strings.Contains(h.nodeReason(node), "after reboot: verify") }
	first, err := h.applyUntil(ctx, failed)
	if err != nil {
		return err
	}
	if _, err := h.run.Run("fleet", "set", "-fleet", h.fleet(), node, "fault.reboot-"); err != nil {
		return err
	}
	rolledBack := failed()
	healed := func() bool { return h.nodeState(node) == model.StateDone }
	second, err := h.applyUntil(ctx, healed)
	if err != nil {
		return err
	}
	h.o.Log("os rollback on %s: apply %d, rolled back %v; fixed: apply %d, healed %v", node, first, rolledBack, second, healed())
	if rolledBack && !healed() {
		h.problem("node %s, its OS rolled back and the cause fixed, is not healed by the next apply: %s %s", node, h.nodeState(node), h.nodeReason(node))
	}
	return nil
}

// applyUntil runs one apply until it ends or done holds, then stops it gracefully
// (SIGTERM), audits it, and returns its exit code.
func (h *harness) applyUntil(ctx context.Context, done func() bool) (int, error) {
	cmd := h.applyCmd(ctx, "-drain-timeout=5s", "-drain-retry-delay=100ms")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	h.rep.Runs++
	started := time.Now()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	// Until apply holds the lock it may not have its signal handling yet.
	for !ended(exited) && (h.lockID() == "" || !done()) && time.Since(started) < gracefulWait {
		time.Sleep(20 * time.Millisecond)
	}
	if !ended(exited) {
		syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(gracefulWait):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
			h.problem("apply did not stop within %s of SIGTERM:\n%s", gracefulWait, lastLines(out.String(), 12))
			return -1, h.run.UnlockKilled()
		}
	}
	code := cmd.ProcessState.ExitCode()
	h.o.Log("apply ended (%s): %s", exitOf(cmd), lastLines(out.String(), 3))
	if code > 2 || code < 0 {
		h.problem("apply exited %d (%s):\n%s", code, exitOf(cmd), lastLines(out.String(), 12))
	}
	h.lockReleased(FaultRollback, out.String())
	return code, h.audit(out.String(), started)
}

// nodeState is the state the node reports.
func (h *harness) nodeState(node string) string {
	var n model.Node
	b, err := os.ReadFile(filepath.Join(h.fleet(), "nodes", node, "node.json"))
	if err != nil || json.Unmarshal(b, &n) != nil {
		return ""
	}
	return n.State
}

// nodeReason is why the node says it is Degraded ("" when it is not).
func (h *harness) nodeReason(node string) string {
	var n model.Node
	b, err := os.ReadFile(filepath.Join(h.fleet(), "nodes", node, "node.json"))
	if err != nil || json.Unmarshal(b, &n) != nil || n.State != model.StateDegraded {
		return ""
	}
	return n.Reason
}
