package boundedfile

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	for _, n := range []int{0, 1, 4095, 4096, 4097, 100000} {
		want := strings.Repeat("x", n)
		os.WriteFile(p, []byte(want), 0o644)
		if b, err := Read(p, 1<<20, NoFollow); err != nil || string(b) != want {
			t.Errorf("%d bytes: %d bytes, %v", n, len(b), err)
		}
	}
	if _, err := Read(p, 1000, 0); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "is 100000 bytes, larger than 1000 bytes") {
		t.Errorf("too large: %v", err)
	}
	if _, err := Read(filepath.Join(dir, "none"), 10, 0); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	os.Symlink(p, filepath.Join(dir, "link"))
	if _, err := Read(filepath.Join(dir, "link"), 1<<20, NoFollow); err == nil || !strings.Contains(err.Error(), "link is a symbolic link, not a regular file") {
		t.Errorf("symlink: %v", err)
	}
	if b, err := Read(filepath.Join(dir, "link"), 1<<20, 0); err != nil || len(b) != 100000 {
		t.Errorf("symlink followed: %d bytes, %v", len(b), err)
	}
	syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644)
	if _, err := Read(filepath.Join(dir, "fifo"), 10, 0); err == nil || !strings.Contains(err.Error(), "fifo is a named pipe (FIFO), not a regular file") {
		t.Errorf("fifo: %v", err)
	}
	if _, err := Read(dir, 10, 0); err == nil || !strings.Contains(err.Error(), "is a directory, not a regular file") {
		t.Errorf("directory: %v", err)
	}
	if _, err := Read("/dev/zero", 10, 0); err == nil || !strings.Contains(err.Error(), "is a character device, not a regular file") {
		t.Errorf("/dev/zero: %v", err)
	}
}

// TestReadIn: inside a root as Read outside it — a FIFO or a device is refused at once,
// naming the file by its full path, and a file past the bound is refused by its size.
func TestReadIn(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "etc"), 0o755)
	os.WriteFile(filepath.Join(dir, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\n"), 0o644)
	syscall.Mkfifo(filepath.Join(dir, "etc/group"), 0o644)
	os.WriteFile(filepath.Join(dir, "big"), make([]byte, 5000), 0o644)
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if b, err := ReadIn(r, "etc/passwd", 100); err != nil || string(b) != "root:x:0:0::/root:/bin/sh\n" {
		t.Errorf("passwd: %q, %v", b, err)
	}
	if _, err := ReadIn(r, "etc/group", 100); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "etc/group")+" is a named pipe (FIFO), not a regular file") {
		t.Errorf("fifo: %v", err)
	}
	if _, err := ReadIn(r, "big", 4096); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), filepath.Join(dir, "big")+" is 5000 bytes") {
		t.Errorf("too large: %v", err)
	}
	if _, err := ReadIn(r, "none", 10); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), filepath.Join(dir, "none")) {
		t.Errorf("missing: %v", err)
	}
	if _, err := ReadIn(r, "../x", 10); err == nil {
		t.Error("a name out of the root was read")
	}
	// Opened for writing, a FIFO without a reader fails at once (ENXIO); the error says why.
	if _, _, err := OpenIn(r, "etc/group", os.O_WRONLY|os.O_APPEND, 0); err == nil || !strings.Contains(err.Error(), "is a named pipe (FIFO), not a regular file") {
		t.Errorf("fifo for writing: %v", err)
	}
	if _, _, err := Open(filepath.Join(dir, "etc/group"), os.O_WRONLY|os.O_APPEND|os.O_CREATE|NoFollow, 0o644); err == nil || !strings.Contains(err.Error(), "is a named pipe (FIFO), not a regular file") {
		t.Errorf("fifo for appending: %v", err)
	}
}

// TestReadProcFile: files of /proc say size 0 and are read whole all the same.
func TestReadProcFile(t *testing.T) {
	b, err := Read("/proc/self/stat", 4096, 0)
	if err != nil || !strings.Contains(string(b), ")") || b[len(b)-1] != '\n' {
		t.Errorf("/proc/self/stat: %q, %v", b, err)
	}
}

func TestReadLimit(t *testing.T) {
	if b, err := ReadLimit("x", strings.NewReader("abc"), 3); err != nil || string(b) != "abc" {
		t.Errorf("%q %v", b, err)
	}
	if _, err := ReadLimit("the data", strings.NewReader("abcd"), 3); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "the data is larger than 3 bytes") {
		t.Errorf("%v", err)
	}
}

func TestReadDir(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b", "a", "c"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o644)
	}
	ents, err := ReadDir(dir)
	if err != nil || len(ents) != 3 || ents[0].Name() != "a" || ents[2].Name() != "c" {
		t.Errorf("%v %v", ents, err)
	}
	syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644)
	if _, err := ReadDir(filepath.Join(dir, "fifo")); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("fifo: %v", err)
	}
}

// TestLimitBody: up to the bound reads whole; one byte more is an error naming the source
// and the bound, wrapping ErrTooLarge.
func TestLimitBody(t *testing.T) {
	for _, tt := range []struct {
		n    int
		fail bool
	}{{0, false}, {1 << 20, false}, {1<<20 + 1, true}, {5 << 20, true}} {
		b, err := io.ReadAll(LimitBody("the answer of GET http://x/y", io.NopCloser(bytes.NewReader(make([]byte, tt.n))), 1<<20))
		if tt.fail {
			if !errors.Is(err, ErrTooLarge) || err.Error() != "the answer of GET http://x/y is larger than 1 MiB, more than mcp reads" || len(b) != 1<<20 {
				t.Errorf("%d bytes: read %d, error %v; want 1 MiB read and the error naming source and bound", tt.n, len(b), err)
			}
		} else if err != nil || len(b) != tt.n {
			t.Errorf("%d bytes: read %d, error %v", tt.n, len(b), err)
		}
	}
}
