package local

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers/providertest"
)

// Observing what a node carries is bounded whatever its root holds: 10,000 managed files,
// a 1 GiB file where a small one belongs, a FIFO where a file belongs (which would block a
// read forever). Each is a listed difference saying why, the list is cut at
// model.MaxObserved and the rest counted; the observation ends (a hang fails the test by
// its timeout).
func TestObserveConfigBounded(t *testing.T) {
	dir := fixture(t, providertest.Standard())
	p, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	root := rootDir(dir, "w-0")
	target := &model.Rendered{Name: "rendered-worker-many", Pool: "worker"}
	const many, lacking = 10000, 1500
	for i := range many {
		path := fmt.Sprintf("/etc/many/f%05d", i)
		target.Files = append(target.Files, model.File{Entry: model.Entry{Path: path}, Mode: 0o644, Contents: []byte("x\n")})
		if i >= lacking {
			writeRootFile(t, root, path, "x\n")
		}
	}
	target.Files = append([]model.File{
		{Entry: model.Entry{Path: "/etc/big"}, Mode: 0o644, Contents: []byte("small\n")},
		{Entry: model.Entry{Path: "/etc/fifo"}, Mode: 0o644, Contents: []byte("a file\n")},
	}, target.Files...)
	big := filepath.Join(root, "etc/big")
	writeRootFile(t, root, "/etc/big", "")
	if err := os.Truncate(big, 1<<30); err != nil { // sparse: 1 GiB that costs no disk
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "etc/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := p.ObserveConfig(t.Context(), "w-0", target)
	if err != nil {
		t.Fatal(err)
	}
	if o.Target != target.Name || len(o.Drift) != model.MaxObserved || o.Unlisted != lacking+2-model.MaxObserved {
		t.Errorf("observation: target %s, %d listed, %d unlisted; want %s, %d listed, %d unlisted",
			o.Target, len(o.Drift), o.Unlisted, target.Name, model.MaxObserved, lacking+2-model.MaxObserved)
	}
	byPath := map[string]model.Drift{}
	for _, d := range o.Drift {
		byPath[d.Path] = d
	}
	if d := byPath["/etc/big"]; d.Kind != model.DriftContent || !strings.Contains(d.Found, "more than") {
		t.Errorf("/etc/big (1 GiB): %v; want a content difference saying it is too large", d)
	}
	if d := byPath["/etc/fifo"]; d.Kind != model.DriftType || !strings.Contains(d.Found, "p") {
		t.Errorf("/etc/fifo (a FIFO): %v; want a type difference naming what it is", d)
	}
	if d := byPath["/etc/many/f00000"]; d.Kind != model.DriftMissing {
		t.Errorf("/etc/many/f00000 (absent): %v; want missing", d)
	}
	if _, err := p.ObserveConfig(t.Context(), "w-9", target); err == nil || !strings.Contains(err.Error(), "w-9") {
		t.Errorf("observing a node the fleet lacks: %v; want an error naming it", err)
	}
}

func writeRootFile(t *testing.T, root, path, content string) {
	t.Helper()
	p := filepath.Join(root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
