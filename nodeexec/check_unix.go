//go:build unix

package nodeexec

import (
	"os/exec"
	"syscall"
)

// isolate runs cmd in a process group of its own, killed whole at its timeout (a shell's
// children with it), and chrooted into dir when dir is set.
func isolate(cmd *exec.Cmd, dir string) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Chroot: dir}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return nil
}
