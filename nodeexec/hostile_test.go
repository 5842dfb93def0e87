package nodeexec

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/testkit/within"
)

func fifo(t *testing.T, p string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.Remove(p)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSpecialFilesInARootAreRefused: a FIFO where the agent reads in a node's root — the
// account database a file's owner is resolved in, its own records, the boot id — is an
// error naming the file at once, not an agent blocked for ever; a link to /dev/zero at a
// managed path is drift, not a read without end.
func TestSpecialFilesInARootAreRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("owners are resolved, and so etc/passwd read, only as root")
	}
	root := t.TempDir()
	makeTree(t, root, tree{"etc/group": {Content: "root:x:0:\n", Mode: 0o644}})
	fifo(t, filepath.Join(root, "etc/passwd"))
	to := &model.Rendered{Files: []model.File{{Entry: model.Entry{Path: "/etc/c.conf", User: "core"}, Mode: 0o644, Contents: []byte("x")}}}
	e := &Executor{Root: root, Host: &RecordingHost{}}
	err := within.Call(t, "write", func() error {
		return e.Run(context.Background(), nil, to, model.Step{Kind: model.StepWrite, Target: "/etc/c.conf"})
	})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(root, "etc/passwd")+" is a named pipe (FIFO), not a regular file") {
		t.Fatalf("write with a FIFO for etc/passwd: %v", err)
	}
	if err := within.Call(t, "verify", func() error { _, err := e.Verify(to); return err }); err != nil {
		t.Errorf("verify with a FIFO for etc/passwd: %v", err)
	}

	for _, rel := range []string{PendingPath, FirstBootPath} {
		fifo(t, filepath.Join(root, rel))
	}
	a := &Agent{Exec: e}
	if err := within.Call(t, "pending record", func() error { _, err := a.readPending(); return err }); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("pending record: %v", err)
	}
	if err := within.Call(t, "first-boot record", func() error { _, err := e.ReadFirstBoot(); return err }); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("first-boot record: %v", err)
	}
	bootID := filepath.Join(t.TempDir(), "boot_id")
	fifo(t, bootID)
	if err := within.Call(t, "boot id", func() error { _, err := ReadBootID(bootID); return err }); err == nil || !strings.Contains(err.Error(), bootID+" is a named pipe") {
		t.Errorf("boot id: %v", err)
	}

	// A FIFO where a managed file's directory is: listed for a killed write's temporary
	// files, it is refused at once.
	fifo(t, filepath.Join(root, "etc/d"))
	if err := within.Call(t, "sweep", func() error {
		return e.Sweep(nil, &model.Rendered{Files: []model.File{{Entry: model.Entry{Path: "/etc/d/a.conf"}, Mode: 0o644}}})
	}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("sweep of a FIFO directory: %v", err)
	}

	os.Remove(filepath.Join(root, "etc/c.conf"))
	os.Symlink("/dev/zero", filepath.Join(root, "etc/c.conf"))
	drift, err := e.Verify(&model.Rendered{Files: []model.File{{Entry: model.Entry{Path: "/etc/c.conf"}, Mode: 0o644, Contents: []byte("x")}}})
	if err != nil || len(drift) != 1 || drift[0].Kind != model.DriftType {
		t.Errorf("a link to /dev/zero at a managed path: %+v, %v; want type drift", drift, err)
	}
}
