package liveproc

import (
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

func TestRuns(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	me := Self()
	if me.BootID == "" || me.PIDNamespace == "" || me.Start == 0 {
		t.Fatalf("Self() = %+v: no machine or start time from /proc", me)
	}
	if !Runs(me.PID, me.Start) || !Runs(me.PID, 0) {
		t.Error("this process does not run")
	}
	// Another process given this PID since started at another time.
	if Runs(me.PID, me.Start+1) {
		t.Error("a PID with another start time counts as the process recorded")
	}

	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	pid := cmd.Process.Pid
	start, err := startTime(pid)
	if err != nil || !Runs(pid, start) {
		t.Fatalf("a running child (start %d, %v) does not run", start, err)
	}
	cmd.Process.Kill()
	// Killed and not reaped: a zombie keeps its PID, and is dead.
	deadline := time.Now().Add(10 * time.Second)
	for Runs(pid, start) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the zombie is gone already (%v): nothing tested", err)
	}
	if Runs(pid, start) {
		t.Error("a killed, unreaped child counts as running")
	}
	cmd.Wait()
	if Runs(pid, start) || Runs(pid, 0) {
		t.Error("a reaped child counts as running")
	}
	if Runs(0, 0) || Runs(-1, 0) {
		t.Error("no PID counts as running")
	}
}
