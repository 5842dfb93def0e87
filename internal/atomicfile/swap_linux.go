package atomicfile

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

const noFollow = unix.O_NOFOLLOW

// exchange swaps the names a and b atomically. It reports fs.ErrNotExist when either is
// missing and errors.ErrUnsupported when the filesystem cannot exchange.
func exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOENT):
		return fs.ErrNotExist
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		return errors.ErrUnsupported
	}
	return &os.LinkError{Op: "renameat2", Old: a, New: b, Err: err}
}

// writeLease takes a write lease on f: refused (EAGAIN) while anyone else has the file
// open. The signal a lease break sends its holder (SIGIO) is ignored by Go programs that
// do not ask for it, and this holder gives the lease up within the write anyway.
func writeLease(f *os.File) error {
	_, err := unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_WRLCK)
	return err
}
