package boundedfile

import (
	"errors"
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
