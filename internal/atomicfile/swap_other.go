//go:build !linux

package atomicfile

import (
	"errors"
	"os"
	"syscall"
)

const noFollow = syscall.O_NOFOLLOW

func exchange(a, b string) error { return errors.ErrUnsupported }

func writeLease(f *os.File) error { return errors.ErrUnsupported }
