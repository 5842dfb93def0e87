package atomicfile

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

const noFollow = unix.O_NOFOLLOW

// flockEx waits for the readers of f's inode (boundedfile.ReadSwapped) to be done.
func flockEx(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

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
