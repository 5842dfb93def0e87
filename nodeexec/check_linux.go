package nodeexec

import (
	"errors"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// runAndEnd runs cmd (isolated) in a jail it cannot leave (newJail) and ends it as soon as
// the command itself has exited, whatever its outcome: its process group, then whatever
// of it is left in the jail — a daemon it forked off into a session of its own included. A
// check leaves nothing running, and nothing it started keeps the run waiting on its output.
// The command is not reaped before its group is killed (waitid with WNOWAIT), so its id,
// which is the group's, cannot belong to anyone else yet.
func runAndEnd(cmd *exec.Cmd) error {
	j, err := newJail(cmd)
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		j.end(0)
		return err
	}
	pid := cmd.Process.Pid
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	syscall.Kill(-pid, syscall.SIGKILL)
	j.end(pid)
	return cmd.Wait()
}
