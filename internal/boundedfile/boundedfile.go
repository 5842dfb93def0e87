// Package boundedfile opens and reads files mcp takes as input — configurations, saved
// plans, fleet files — which may be anything: only regular files, opened without blocking
// (a FIFO without a writer would block the open forever), and never read past a bound (a
// symlink to /dev/zero must be an error, not an exhausted memory).
package boundedfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrTooLarge is wrapped by the error for a file past the bound.
var ErrTooLarge = errors.New("more than mcp reads")

// Open opens path (flag as os.OpenFile; NoFollow refuses a symlink at the last element) and
// refuses anything fstat does not call a regular file, naming what it is.
func Open(path string, flag int, perm fs.FileMode) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK, perm)
	if flag&syscall.O_NOFOLLOW != 0 && errors.Is(err, syscall.ELOOP) {
		return nil, nil, fmt.Errorf("%s is a symbolic link, not a regular file", path)
	}
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s is %s, not a regular file", path, Describe(st.Mode()))
	}
	return f, st, nil
}

// NoFollow is the flag that makes Open refuse a symbolic link.
const NoFollow = syscall.O_NOFOLLOW

// Read reads the whole of a regular file of at most max bytes (flag: 0 or NoFollow).
func Read(path string, max int64, flag int) ([]byte, error) {
	f, st, err := Open(path, os.O_RDONLY|flag, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > max {
		return nil, fmt.Errorf("%s is %d bytes, larger than %s, %w", path, st.Size(), size(max), ErrTooLarge)
	}
	// One byte past the bound, so a file that grew since the stat is caught too.
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s grew past %s while being read, %w", path, size(max), ErrTooLarge)
	}
	return b, nil
}

func size(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Describe names a file's type for people: "a named pipe (FIFO)", "a directory", ….
func Describe(m fs.FileMode) string {
	switch {
	case m&fs.ModeDir != 0:
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "an irregular file (" + m.Type().String() + ")"
}
