//go:build !linux

package atomicfile

import (
	"errors"
	"os"
	"syscall"
)

const noFollow = syscall.O_NOFOLLOW

func exchange(a, b string) error { return errors.ErrUnsupported }

func flockEx(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }
