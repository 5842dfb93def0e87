package localstate

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/internal/liveproc"
	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/testkit/within"
)

// storedState writes a state with a pointer and its rendered configs, and returns the
// backend and the name of one rendered config.
func storedState(t *testing.T) (*Local, string) {
	t.Helper()
	b := &Local{Path: filepath.Join(t.TempDir(), "mcp.state")}
	s := state.New()
	s.Rendered = renderedFixture(t)
	var name string
	for name = range s.Rendered {
	}
	s.Pointers["worker"] = name
	if err := b.Write(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	// A second write, so that there is a backup.
	s.Serial++
	if err := b.Write(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return b, name
}

// TestSpecialFilesInTheStateAreRefused: a symlink to /dev/zero or a FIFO in the place of
// any file of the local state — the state, its backup, a rendered config, the journal, the
// lock — makes reading (or locking) the state fail at once with an error naming the file,
// instead of reading without end or blocking.
func TestSpecialFilesInTheStateAreRefused(t *testing.T) {
	ctx := context.Background()
	for _, file := range []string{"state", "backup", "rendered", "journal", "lock"} {
		for _, kind := range []string{"/dev/zero", "fifo"} {
			t.Run(file+" "+kind, func(t *testing.T) {
				b, name := storedState(t)
				p := map[string]string{"state": b.Path, "backup": b.backupPath(), "rendered": b.RenderedPath(name),
					"journal": b.journalPath(), "lock": b.lockPath()}[file]
				os.Remove(p)
				if kind == "fifo" {
					if err := syscall.Mkfifo(p, 0o644); err != nil {
						t.Fatal(err)
					}
				} else if err := os.Symlink("/dev/zero", p); err != nil {
					t.Fatal(err)
				}
				err := within.Call(t, "reading the state", func() error {
					if file == "lock" {
						_, err := b.Lock(ctx, state.NewLockInfo("plan", "test"))
						return err
					}
					_, err := b.Read(ctx)
					return err
				})
				if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "not a regular file") {
					t.Fatalf("got %v, want an error naming %s as not a regular file", err, p)
				}
				if file == "journal" {
					if err := within.Call(t, "appending to the journal", func() error {
						return b.AppendJournal(ctx, state.JournalRecord{Node: "n", Target: name, Step: "write"})
					}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
						t.Fatalf("append: %v, want an error saying the journal is not a regular file", err)
					}
				}
			})
		}
	}
}

// TestPointerToAMissingConfigIsRefused: a pool pointer naming a rendered config the store
// lacks ("../../../../etc/passwd" typed into the state) is refused by the state reader
// with the boot server's words.
func TestPointerToAMissingConfigIsRefused(t *testing.T) {
	ctx := context.Background()
	b, name := storedState(t)
	raw, _ := os.ReadFile(b.Path)
	os.WriteFile(b.Path, []byte(strings.Replace(string(raw), name, "../../../../etc/passwd", 1)), 0o644)
	_, err := b.Read(ctx)
	if err == nil || !strings.Contains(err.Error(), "pool worker points at rendered config ../../../../etc/passwd, which the store lacks") {
		t.Fatalf("read: %v", err)
	}
}

// TestLockSweepsTemporaryFiles: temporary files a writer killed mid-write left beside the
// state and in rendered/ are never read as a config, and taking the lock removes them;
// files that are not a writer's temporaries stay.
func TestLockSweepsTemporaryFiles(t *testing.T) {
	ctx := context.Background()
	b, name := storedState(t)
	left := []string{
		filepath.Join(b.renderedDir(), "."+name+".json.tmp-0123456789ab"),
		filepath.Join(b.renderedDir(), ".rendered-worker-x.json.tmp-a1b2c3d4e5f6"),
		filepath.Join(filepath.Dir(b.Path), ".mcp.state.tmp-0123456789ab"),
		filepath.Join(filepath.Dir(b.Path), ".mcp.state.backup.tmp-0123456789ab"),
	}
	kept := []string{filepath.Join(filepath.Dir(b.Path), ".other.tmp-0123456789ab"), filepath.Join(filepath.Dir(b.Path), "main.hcl")}
	for _, p := range append(left, kept...) {
		os.WriteFile(p, []byte("{not json"), 0o644)
	}
	s, err := b.Read(ctx)
	if err != nil || len(s.Rendered) != 1 {
		t.Fatalf("read beside temporary files: %d rendered configs, %v", len(s.Rendered), err)
	}
	u, err := b.Lock(ctx, state.NewLockInfo("plan", "test"))
	if err != nil {
		t.Fatal(err)
	}
	defer u.Unlock(ctx)
	for _, p := range left {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there after the lock was taken (%v)", p, err)
		}
	}
	for _, p := range kept {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}

// TestZombieHolderIsDead: a holder killed and not yet waited for by its parent (a zombie)
// no longer runs, though kill(pid, 0) still succeeds — as after a script SIGKILLs mcp apply
// and runs mcp force-unlock before reaping it.
func TestZombieHolderIsDead(t *testing.T) {
	ctx := context.Background()
	b := &Local{Path: filepath.Join(t.TempDir(), "mcp.state")}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	pid := cmd.Process.Pid
	defer cmd.Wait()
	info := state.NewLockInfo("apply", "test")
	info.Process, _ = liveproc.Of(pid)
	writeLock(t, b, info)
	if st, err := b.LockStatus(ctx); err != nil || !st.Alive {
		t.Fatalf("a running holder: %+v, %v", st, err)
	}
	cmd.Process.Kill()
	// The kill lands asynchronously; until the child is reaped it stays a zombie.
	deadline := time.Now().Add(10 * time.Second)
	for liveproc.Runs(pid, 0) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the zombie is gone already (%v): nothing tested", err)
	}
	st, err := b.LockStatus(ctx)
	if err != nil || st.Alive || !strings.Contains(st.Detail, "no longer runs") {
		t.Fatalf("a killed, unreaped holder: %+v, %v; want it dead", st, err)
	}
}

func writeLock(t *testing.T, b *Local, info state.LockInfo) {
	t.Helper()
	raw, _ := json.Marshal(info)
	if err := os.WriteFile(b.lockPath(), raw, 0o644); err != nil {
		t.Fatal(err)
	}
}
