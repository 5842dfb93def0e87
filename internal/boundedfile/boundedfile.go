// Package boundedfile opens and reads every file mcp did not write in the same run — the
// state and its lock and journal, configurations, saved plans, fleet files, a node root's
// records and account databases, certificates and tokens — which may be anything: only
// regular files, opened without blocking (a FIFO without a writer would block the open
// forever), and never read past a bound (a symlink to /dev/zero must be an error, not an
// exhausted memory). Read and Open take a path; ReadIn and OpenIn a name inside an
// os.Root (a node's root), which they cannot leave. LimitBody bounds what is read from a
// network peer the same way.
package boundedfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// MaxCredential bounds a certificate, key, CA bundle or token file: a few KiB each.
const MaxCredential = 1 << 20

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
	if err != nil {
		return nil, nil, openError(path, flag, err, func() (fs.FileInfo, error) { return os.Stat(path) })
	}
	return checkOpened(f, path)
}

// OpenIn is Open for name inside r; errors name the file as r.Name()/name.
func OpenIn(r *os.Root, name string, flag int, perm fs.FileMode) (*os.File, fs.FileInfo, error) {
	var f *os.File
	err := whileLeased(func() (err error) {
		f, err = r.OpenFile(name, flag|syscall.O_NONBLOCK, perm)
		return err
	})
	full := filepath.Join(r.Name(), name)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, nil, openError(full, flag, &fs.PathError{Op: "open", Path: full, Err: err},
			func() (fs.FileInfo, error) { return r.Stat(name) })
	}
	return checkOpened(f, full)
}

// openError says plainly why an open failed where the file is the wrong kind: a link
// refused by NoFollow, or a FIFO opened for writing without a reader (ENXIO, which a
// non-blocking open gives instead of waiting for one).
func openError(path string, flag int, err error, stat func() (fs.FileInfo, error)) error {
	switch {
	case flag&syscall.O_NOFOLLOW != 0 && errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("%s is a symbolic link, not a regular file", path)
	case errors.Is(err, syscall.ENXIO):
		if st, serr := stat(); serr == nil && !st.Mode().IsRegular() {
			return fmt.Errorf("%s is %s, not a regular file", path, Describe(st.Mode()))
		}
	}
	return err
}

// checkOpened refuses an opened file that fstat does not call a regular file.
func checkOpened(f *os.File, path string) (*os.File, fs.FileInfo, error) {
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

// ReadIn is Read for name inside r, following links only within it; errors name the file
// as r.Name()/name.
func ReadIn(r *os.Root, name string, max int64) ([]byte, error) {
	f, st, err := OpenIn(r, name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	full := filepath.Join(r.Name(), name)
	if st.Size() > max {
		return nil, tooLarge(full, st.Size(), max)
	}
	return readAll(full, st.Size(), max, nil, func(b []byte) (int, error) {
		n, err := f.Read(b)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		return n, err
	})
}

// ReadDir is os.ReadDir (entries sorted by name) with the directory opened by OpenDir.
func ReadDir(path string) ([]fs.DirEntry, error) {
	f, err := OpenDir(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, err
}

// OpenDir opens a directory so that anything else at path — a FIFO, a device — is
// refused at once (ENOTDIR) instead of blocking the open.
func OpenDir(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
}

// OpenDirIn is OpenDir for name inside r.
func OpenDirIn(r *os.Root, name string) (*os.File, error) {
	return r.OpenFile(name, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
}

// ReadLimit reads the rest of a stream already open (a journal, a decompressor) up to max
// bytes; more is an error naming what, wrapping ErrTooLarge.
func ReadLimit(what string, r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is larger than %s, %w", what, size(max), ErrTooLarge)
	}
	return b, nil
}

func tooLarge(path string, n, max int64) error {
	return fmt.Errorf("%s is %d bytes, larger than %s, %w", path, n, size(max), ErrTooLarge)
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
		return nil, tooLarge(path, st.Size, max)
	}
	return readAll(path, st.Size, max, buf, func(b []byte) (int, error) {
		for {
			n, err := syscall.Read(fd, b)
			if !errors.Is(err, syscall.EINTR) {
				return n, err
			}
		}
	})
}

// readAll reads a regular file of the size fstat gave through read, which returns 0 at
// its end. One byte past the size: a read that does not fill it has reached the end (a
// regular file's read stops short only there), and a file that grew while being read is
// caught past the bound. Files of /proc say size 0 and are read on in 4 KiB steps.
func readAll(path string, size0, max int64, buf []byte, read func([]byte) (int, error)) ([]byte, error) {
	b := slices.Grow(buf[:0], int(size0)+1)
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, 4096)
		}
		n, err := read(b[len(b):cap(b)])
		if err != nil {
			var pe *fs.PathError
			if !errors.As(err, &pe) {
				err = &fs.PathError{Op: "read", Path: path, Err: err}
			}
			return nil, fmt.Errorf("reading %s: %w", path, err)
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

// ReadToken reads a bearer-token file (a regular file of at most MaxCredential bytes) and
// refuses one that is empty or holds only whitespace: an empty secret would make a server
// that asks for no token, or a client that sends none. The bytes are returned as read;
// each caller trims them as it always has.
func ReadToken(path string) ([]byte, error) {
	b, err := Read(path, MaxCredential, 0)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(string(b)) == "" {
		return nil, fmt.Errorf("token file %s is empty (or only whitespace): a token is required", path)
	}
	return b, nil
}

// LimitBody bounds a network answer's body (a Prometheus answer, a boot server's config):
// reading past max bytes is an error naming what and the bound, wrapping ErrTooLarge, so
// an answer that never ends costs at most max bytes, not all the memory there is.
func LimitBody(what string, body io.ReadCloser, max int64) io.ReadCloser {
	return &limitedBody{body: body, what: what, max: max, left: max}
}

type limitedBody struct {
	body      io.ReadCloser
	what      string
	max, left int64
	err       error
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1] // one byte past the bound tells "exactly max" from "more"
	}
	n, err := l.body.Read(p)
	if int64(n) <= l.left {
		l.left -= int64(n)
		return n, err
	}
	n, l.left = int(l.left), 0
	l.err = fmt.Errorf("%s is larger than %s, %w", l.what, size(l.max), ErrTooLarge)
	return n, l.err
}

func (l *limitedBody) Close() error { return l.body.Close() }
