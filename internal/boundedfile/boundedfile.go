// Package boundedfile opens and reads files mcp takes as input — configurations, saved
// plans, fleet files — which may be anything: only regular files, opened without blocking
// (a FIFO without a writer would block the open forever), and never read past a bound (a
// symlink to /dev/zero must be an error, not an exhausted memory).
package boundedfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"syscall"
	"time"
)

// ErrTooLarge is wrapped by the error for a file past the bound.
var ErrTooLarge = errors.New("more than mcp reads")

// Open opens path (flag as os.OpenFile; NoFollow refuses a symlink at the last element) and
// refuses anything fstat does not call a regular file, naming what it is.
func Open(path string, flag int, perm fs.FileMode) (*os.File, fs.FileInfo, error) {
	var f *os.File
	err := whileLeased(func() (err error) {
		f, err = os.OpenFile(path, flag|syscall.O_NONBLOCK, perm)
		return err
	})
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

// Read reads the whole of a regular file of at most max bytes (flag: 0 or NoFollow). It
// makes the system calls itself — open, fstat, read, close — rather than through an
// os.File, which would try to register the file with the network poller each time: fleets
// are read a file per node.
func Read(path string, max int64, flag int) ([]byte, error) { return ReadBuf(path, max, flag, nil) }

// ReadBuf is Read into buf's storage when it is large enough (for a caller that reads many
// files and keeps none of their bytes).
func ReadBuf(path string, max int64, flag int, buf []byte) ([]byte, error) {
	fd, err := openRead(path, flag)
	if flag&syscall.O_NOFOLLOW != 0 && errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symbolic link, not a regular file", path)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := ignoringEINTR(func() error { return syscall.Fstat(fd, &st) }); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if m := fileType(uint32(st.Mode)); !m.IsRegular() {
		return nil, fmt.Errorf("%s is %s, not a regular file", path, Describe(m))
	}
	if st.Size > max {
		return nil, fmt.Errorf("%s is %d bytes, larger than %s, %w", path, st.Size, size(max), ErrTooLarge)
	}
	// One byte past the size: a read that does not fill it has reached the end (a regular
	// file's read stops short only there), and a file that grew while being read is caught
	// past the bound.
	b := slices.Grow(buf[:0], int(st.Size)+1)
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, 4096)
		}
		n, err := syscall.Read(fd, b[len(b):cap(b)])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, &fs.PathError{Op: "read", Path: path, Err: err})
		}
		if n == 0 {
			return b, nil
		}
		short := len(b)+n < cap(b)
		if b = b[:len(b)+n]; int64(len(b)) > max {
			return nil, fmt.Errorf("%s grew past %s while being read, %w", path, size(max), ErrTooLarge)
		}
		if short {
			return b, nil
		}
	}
}

// openRead opens path without blocking (see whileLeased).
func openRead(path string, flag int) (fd int, err error) {
	err = whileLeased(func() (err error) {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC|flag, 0)
		return err
	})
	return fd, err
}

// whileLeased runs a non-blocking open until it does not fail with EINTR or EAGAIN. A
// non-blocking open of a file someone holds a write lease on fails with EAGAIN instead of
// waiting for the lease to be given up (atomicfile.Swap holds one for the length of a
// write): it is tried again, for as long as the kernel would make a blocking open wait
// (lease-break-time, 45 s by default).
func whileLeased(open func() error) error {
	var waited time.Duration
	pause := 50 * time.Microsecond
	for {
		err := open()
		switch {
		case errors.Is(err, syscall.EINTR):
		case errors.Is(err, syscall.EAGAIN) && waited < leaseBreakTime:
			time.Sleep(pause)
			waited += pause
			pause = min(2*pause, 10*time.Millisecond)
		default:
			return err
		}
	}
}

const leaseBreakTime = 45 * time.Second

func ignoringEINTR(f func() error) error {
	for {
		if err := f(); !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// fileType is the type bits of a stat(2) mode as an fs.FileMode.
func fileType(mode uint32) fs.FileMode {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFREG:
		return 0
	case syscall.S_IFDIR:
		return fs.ModeDir
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	case syscall.S_IFLNK:
		return fs.ModeSymlink
	}
	return fs.ModeIrregular
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
