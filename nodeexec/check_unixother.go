//go:build unix && !linux

package nodeexec

import (
	"os/exec"
	"syscall"
)

// runAndEnd runs cmd (isolated) and then ends its process group, whatever its outcome.
// Without waitid(WNOWAIT) the command is reaped first: a background child holding the
// output open keeps the run up to checkWaitDelay.
func runAndEnd(cmd *exec.Cmd) error {
	err := cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	return err
}
