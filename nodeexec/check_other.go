//go:build !unix

package nodeexec

import (
	"errors"
	"os/exec"
)

func isolate(cmd *exec.Cmd, dir string) error {
	if dir != "" {
		return errors.New("chroot is not supported on this system")
	}
	return nil
}

func runAndEnd(cmd *exec.Cmd) error { return cmd.Run() }
