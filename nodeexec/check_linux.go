package nodeexec

import (
	"errors"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// runAndEnd runs cmd (isolated) and ends its process group as soon as the command itself
// has exited, whatever its outcome: a check leaves nothing running, and a background child
// holding the output open does not keep the run waiting (only a process that left the
// group can, up to checkWaitDelay). The command is not reaped before its group is killed
// (waitid with WNOWAIT), so its id, which is the group's, cannot belong to anyone else yet.
func runAndEnd(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
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
	return cmd.Wait()
}
