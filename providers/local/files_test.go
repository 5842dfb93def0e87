package local

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpfleet/mcp/testkit/within"
)

func TestHostileFleetFilesAreRefused(t *testing.T) {
	cases := []struct {
		name, file string
		make       func(path string) error
		want       []string
	}{
		{"node.json FIFO", "nodes/worker-1/node.json", mkfifo, []string{"nodes/worker-1/node.json", "named pipe"}},
		{"node.json symlink to /dev/zero", "nodes/worker-1/node.json", symlink("/dev/zero"), []string{"nodes/worker-1/node.json", "symbolic link"}},
		{"node.json {}", "nodes/worker-1/node.json", contents("{}"), []string{"nodes/worker-1/node.json", "no node name"}},
		{"node.json null", "nodes/worker-1/node.json", contents("null\n"), []string{"nodes/worker-1/node.json", "null"}},
		{"node.json of another node", "nodes/worker-1/node.json", contents(`{"name": "worker-2"}`), []string{"nodes/worker-1/node.json", `"worker-2"`}},
		{"node.json too large", "nodes/worker-1/node.json", large, []string{"nodes/worker-1/node.json", "larger than 16 MiB"}},
		{"node.json a directory", "nodes/worker-1/node.json", mkdir, []string{"nodes/worker-1/node.json", "directory"}},
		{"pods.json FIFO", "nodes/worker-1/pods.json", mkfifo, []string{"nodes/worker-1/pods.json", "named pipe"}},
		{"fleet.json symlink to /dev/zero", "fleet.json", symlink("/dev/zero"), []string{"fleet.json", "symbolic link"}},
		{"fleet.json null", "fleet.json", contents("null"), []string{"fleet.json", "format version 0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "fleet")
			if err := Init(dir, InitSpec{Pools: []PoolSize{{"worker", 3}}}); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, c.file)
			if err := os.RemoveAll(path); err != nil {
				t.Fatal(err)
			}
			if err := c.make(path); err != nil {
				t.Fatal(err)
			}
			err := within.Call(t, "reading the fleet", func() error {
				p, err := New(Options{Dir: dir})
				if err == nil {
					_, err = p.Refresh(context.Background())
				}
				return err
			})
			if err == nil {
				t.Fatal("the fleet was read")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// The write path and the event reader refuse them too.
func TestHostileFilesRefusedByWritersAndReadEvents(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fleet")
	if err := Init(dir, InitSpec{Pools: []PoolSize{{"worker", 2}}}); err != nil {
		t.Fatal(err)
	}
	if err := mkfifo(eventsFile(dir, "worker-0")); err != nil {
		t.Fatal(err)
	}
	p, _ := New(Options{Dir: dir})
	err := within.Call(t, "reading the fleet", func() error { return p.Cordon(context.Background(), "worker-0") })
	if err == nil || !strings.Contains(err.Error(), "events.jsonl is a named pipe") {
		t.Errorf("cordon with a FIFO event log: %v", err)
	}
	os.WriteFile(nodeFile(dir, "worker-1"), []byte("{}"), 0o644)
	err = within.Call(t, "reading the fleet", func() error { return Set(dir, "worker-1", []string{"ready=false"}) })
	if err == nil || !strings.Contains(err.Error(), "no node name") {
		t.Errorf("set on {}: %v", err)
	}
	os.WriteFile(nodeFile(dir, "worker-1"), []byte(`{"name": "worker-1"}`), 0o644)
	_, err = within2(t, func() (map[string][]Event, error) { return ReadEvents(dir) })
	if err == nil || !strings.Contains(err.Error(), "worker-0/events.jsonl is a named pipe") {
		t.Errorf("ReadEvents with a FIFO event log: %v", err)
	}
	os.Remove(eventsFile(dir, "worker-0"))
	os.Symlink("/dev/zero", eventsFile(dir, "worker-1"))
	_, err = within2(t, func() (map[string][]Event, error) { return ReadEvents(dir) })
	if err == nil || !strings.Contains(err.Error(), "worker-1/events.jsonl is a symbolic link") {
		t.Errorf("ReadEvents with an event log linked to /dev/zero: %v", err)
	}
	if _, err := p.ObserveNodes(context.Background(), []string{"../worker-0"}); err == nil || !strings.Contains(err.Error(), "not a node name") {
		t.Errorf("a node name with a slash: %v", err)
	}
}

func within2[T any](t *testing.T, f func() (T, error)) (T, error) {
	var v T
	err := within.Call(t, "reading the fleet", func() (err error) { v, err = f(); return err })
	return v, err
}

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o644) }
func mkdir(path string) error  { return os.Mkdir(path, 0o755) }

func symlink(target string) func(string) error {
	return func(path string) error { return os.Symlink(target, path) }
}

func contents(s string) func(string) error {
	return func(path string) error { return os.WriteFile(path, []byte(s), 0o644) }
}

func large(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Truncate(MaxFileSize + 1)
}
