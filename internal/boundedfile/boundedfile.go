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

	"golang.org/x/sys/unix"
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

// Read reads the whole of a regular file of at most max bytes (flag: 0 or NoFollow). It
// makes the system calls itself — open, fstat, read, close — rather than through an
// os.File, which would try to register the file with the network poller each time: fleets
// are read a file per node.
func Read(path string, max int64, flag int) ([]byte, error) { return ReadBuf(path, max, flag, nil) }

// ReadBuf is Read into buf's storage when it is large enough (for a caller that reads many
// files and keeps none of their bytes).
func ReadBuf(path string, max int64, flag int, buf []byte) ([]byte, error) {
	b, _, err := readBuf(path, max, flag, buf, false)
	return b, err
}

// ReadSwapped is ReadBuf for a file that atomicfile.Swap replaces, whose inodes are
// rewritten in place once they are no longer the file's: it reads under a shared flock(2)
// — the writer takes the exclusive one before it rewrites an inode — and then checks that
// the inode read is still the one the path names; if not, it reads again. So it returns a
// version the path named, whole, never one being written or never published.
func ReadSwapped(path string, max int64, flag int, buf []byte) ([]byte, error) {
	for range 1000 {
		b, same, err := readBuf(path, max, flag, buf, true)
		if err != nil || same {
			return b, err
		}
		buf = b
	}
	return nil, fmt.Errorf("%s was replaced each of 1000 times it was read", path)
}

// readBuf reads path; with swapped, under a shared lock, reporting whether the inode read is
// the one path names once read.
func readBuf(path string, max int64, flag int, buf []byte, swapped bool) ([]byte, bool, error) {
	fd, err := openRead(path, flag)
	if flag&syscall.O_NOFOLLOW != 0 && errors.Is(err, syscall.ELOOP) {
		return nil, false, fmt.Errorf("%s is a symbolic link, not a regular file", path)
	}
	if err != nil {
		return nil, false, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := ignoringEINTR(func() error { return syscall.Fstat(fd, &st) }); err != nil {
		return nil, false, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if m := fileType(uint32(st.Mode)); !m.IsRegular() {
		return nil, false, fmt.Errorf("%s is %s, not a regular file", path, Describe(m))
	}
	if swapped {
		if err := ignoringEINTR(func() error { return syscall.Flock(fd, syscall.LOCK_SH) }); err != nil {
			return nil, false, &fs.PathError{Op: "flock", Path: path, Err: err}
		}
		// The size may have changed before the lock was granted.
		if err := ignoringEINTR(func() error { return syscall.Fstat(fd, &st) }); err != nil {
			return nil, false, &fs.PathError{Op: "stat", Path: path, Err: err}
		}
	}
	b, err := readFD(fd, path, max, st.Size, buf)
	if err != nil || !swapped {
		return b, true, err
	}
	var now unix.Stat_t
	err = ignoringEINTR(func() error { return unix.Fstatat(unix.AT_FDCWD, path, &now, unix.AT_SYMLINK_NOFOLLOW) })
	if errors.Is(err, syscall.ENOENT) {
		return b, false, nil
	}
	if err != nil {
		return nil, false, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	return b, now.Ino == st.Ino && now.Dev == uint64(st.Dev), nil
}

// readFD reads the rest of an open regular file of size bytes, at most max.
func readFD(fd int, path string, max, fileSize int64, buf []byte) ([]byte, error) {
	if fileSize > max {
		return nil, fmt.Errorf("%s is %d bytes, larger than %s, %w", path, fileSize, size(max), ErrTooLarge)
	}
	// One byte past the size: a read that does not fill it has reached the end (a regular
	// file's read stops short only there), and a file that grew while being read is caught
	// past the bound.
	b := slices.Grow(buf[:0], int(fileSize)+1)
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

func openRead(path string, flag int) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC|flag, 0)
		if !errors.Is(err, syscall.EINTR) {
			return fd, err
		}
	}
}

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
