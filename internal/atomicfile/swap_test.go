package atomicfile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/mcpfleet/mcp/internal/boundedfile"
	"github.com/mcpfleet/mcp/testkit/within"
)

// Plain readers racing a stream of swaps only ever see one whole version (without the
// lease, a reader that opened the file two swaps ago reads the inode being rewritten: seen
// as empty and cut reads); once no reader holds the twin, swaps reuse the two inodes. How
// often a racing reader holds the twin depends on the machine's load, so inode reuse is
// judged on the swaps after the readers stopped (under load in CI, 114 of 500 racing swaps
// took a new inode).
func TestSwapReadersSeeWholeVersions(t *testing.T) {
	p := filepath.Join(t.TempDir(), "node.json")
	versions := [][]byte{
		[]byte(strings.Repeat("a", 10)),
		[]byte(strings.Repeat("b", 5000)),
		[]byte(strings.Repeat("c", 1)),
	}
	if err := Swap(p, versions[0], 0o644); err != nil {
		t.Fatal(err)
	}
	inodes := map[uint64]bool{}
	var stop sync.WaitGroup
	done := make(chan struct{})
	for r := range 2 {
		stop.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				read := os.ReadFile // blocks on a lease
				if r%2 == 1 {
					read = func(p string) ([]byte, error) { // non-blocking open: EAGAIN on a lease
						return boundedfile.Read(p, 1<<20, boundedfile.NoFollow)
					}
				}
				b, err := read(p)
				if err != nil {
					t.Errorf("read during swaps: %v", err)
					return
				}
				whole := false
				for _, v := range versions {
					whole = whole || bytes.Equal(b, v)
				}
				if !whole {
					t.Errorf("a reader saw %d bytes that are no version", len(b))
					return
				}
			}
		})
	}
	for i := range 500 {
		if err := Swap(p, versions[i%len(versions)], 0o644); err != nil {
			t.Fatal(err)
		}
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		inodes[st.Ino] = true
	}
	close(done)
	stop.Wait()
	t.Logf("500 swaps, 2 readers: %d inodes", len(inodes))
	clear(inodes)
	for i := range 100 {
		if err := Swap(p, versions[i%len(versions)], 0o644); err != nil {
			t.Fatal(err)
		}
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		inodes[st.Ino] = true
	}
	if len(inodes) > 3 {
		t.Errorf("100 swaps with no reader went through %d inodes: the twin is not reused", len(inodes))
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, versions[99%len(versions)]) {
		t.Errorf("last version not in place: %.20q", b)
	}
}

// A twin that is a symbolic link is refused, not followed.
func TestSwapRefusesSymlinkedTwin(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "node.json")
	outside := filepath.Join(dir, "outside")
	os.WriteFile(outside, []byte("keep"), 0o644)
	if err := os.Symlink(outside, filepath.Join(dir, ".node.json.swap")); err != nil {
		t.Fatal(err)
	}
	if err := Swap(p, []byte("new"), 0o644); err == nil {
		t.Fatal("swap through a symlinked twin succeeded")
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep" {
		t.Errorf("the symlink's target was written: %q", b)
	}
}

// TestSwapRefusesAFIFOTwin: a FIFO where the twin goes is refused at once, not opened for
// writing (which waits for a reader for ever).
func TestSwapRefusesAFIFOTwin(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "node.json")
	os.WriteFile(p, []byte("old"), 0o644)
	if err := syscall.Mkfifo(filepath.Join(dir, ".node.json.swap"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := within.Call(t, "swap", func() error { return Swap(p, []byte("new"), 0o644) })
	if err == nil || !strings.Contains(err.Error(), "named pipe") {
		t.Fatalf("swap with a FIFO twin: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("the file was changed: %q", b)
	}
}
