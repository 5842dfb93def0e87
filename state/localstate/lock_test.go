package localstate

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state"
)

// lost waits for a state.Losable lock to be lost and returns why.
func lost(t *testing.T, u state.Unlocker) error {
	t.Helper()
	l, ok := u.(state.Losable)
	if !ok {
		t.Fatalf("%T is not state.Losable", u)
	}
	select {
	case <-l.Lost():
		return l.LostErr()
	case <-time.After(5 * time.Second):
		t.Fatal("the lock was not found lost within 5s")
		return nil
	}
}

// TestLocalLockLostWhenForceUnlocked: a holder whose lock file is removed (force-unlock of a
// live holder) finds out within seconds, and its Unlock says so.
func TestLocalLockLostWhenForceUnlocked(t *testing.T) {
	ctx := context.Background()
	b := &Local{Path: filepath.Join(t.TempDir(), "mcp.state")}
	info := state.NewLockInfo("apply", "test")
	u, err := b.Lock(ctx, info)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.ForceUnlock(ctx, info.ID); err != nil {
		t.Fatal(err)
	}
	err = lost(t, u)
	if err == nil || !strings.Contains(err.Error(), b.lockPath()) || !strings.Contains(err.Error(), "removed") {
		t.Errorf("lost: %v, want it to name %s and say it was removed", err, b.lockPath())
	}
	if err := u.Unlock(ctx); err == nil || !strings.Contains(err.Error(), "removed") {
		t.Errorf("unlock of a lost lock: %v, want an error saying it was removed", err)
	}
}

// TestLocalLockLostWhenTakenOver: a holder whose lock another run took over finds out, names
// the new holder, and its Unlock leaves the new holder's lock alone.
func TestLocalLockLostWhenTakenOver(t *testing.T) {
	ctx := context.Background()
	b := &Local{Path: filepath.Join(t.TempDir(), "mcp.state")}
	first := state.NewLockInfo("apply", "test")
	u1, err := b.Lock(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.ForceUnlock(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	second := state.NewLockInfo("apply", "test")
	second.Who = "bob@build-9"
	u2, err := b.Lock(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	err = lost(t, u1)
	if err == nil || !strings.Contains(err.Error(), b.lockPath()) || !strings.Contains(err.Error(), "bob@build-9") {
		t.Errorf("lost: %v, want it to name %s and the new holder", err, b.lockPath())
	}
	if err := u1.Unlock(ctx); err == nil {
		t.Error("unlock of a lock taken over succeeded")
	}
	if info, err := b.readLock(); err != nil || info.ID != second.ID {
		t.Fatalf("after the first holder's unlock the lock is %+v, %v; want the second's", info, err)
	}
	if err := u2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(b.lockPath()); !os.IsNotExist(err) {
		t.Errorf("lock file after the second unlock: %v", err)
	}
	select {
	case <-u2.(state.Losable).Lost():
		t.Error("a lock released by its holder was reported lost")
	default:
	}
}

// deadPID is the PID of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("cannot run true:", err)
	}
	return cmd.Process.Pid
}

// TestLocalLockStatus: the holder is alive when its process runs on this machine, in this
// boot and PID namespace; a process that exited is dead; a holder anywhere else cannot be
// checked and counts as alive.
func TestLocalLockStatus(t *testing.T) {
	ctx := context.Background()
	b := &Local{Path: filepath.Join(t.TempDir(), "mcp.state")}
	if st, err := b.LockStatus(ctx); st != nil || err != nil {
		t.Fatalf("unlocked: %+v, %v", st, err)
	}
	mine := state.NewLockInfo("apply", "test")
	u, err := b.Lock(ctx, mine)
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.LockStatus(ctx)
	if err != nil || st == nil || st.Holder.ID != mine.ID || !st.Alive || !strings.Contains(st.Detail, strconv.Itoa(os.Getpid())) {
		t.Errorf("held by this process: %+v, %v", st, err)
	}
	u.Unlock(ctx)

	for _, c := range []struct {
		name  string
		edit  func(*state.LockInfo)
		alive bool
	}{
		{"dead process", func(i *state.LockInfo) { i.PID = deadPID(t) }, false},
		// A PID from anywhere else says nothing here: the holder cannot be proved dead.
		{"another machine", func(i *state.LockInfo) { i.MachineID = "0123456789abcdef0123456789abcdef"; i.PID = deadPID(t) }, true},
		{"another boot", func(i *state.LockInfo) { i.BootID = "6a2c4bbc-5d6e-4f1a-9b3e-000000000000"; i.PID = deadPID(t) }, true},
		{"another PID namespace", func(i *state.LockInfo) { i.PIDNamespace = "pid:[1]"; i.PID = deadPID(t) }, true},
		{"a lock naming only a PID", func(i *state.LockInfo) { i.Process = model.Process{PID: deadPID(t)} }, true},
		{"no pid", func(i *state.LockInfo) { i.PID = 0 }, true},
	} {
		info := state.NewLockInfo("apply", "test")
		c.edit(&info)
		raw, _ := json.Marshal(info)
		os.WriteFile(b.lockPath(), raw, 0o644)
		st, err := b.LockStatus(ctx)
		if err != nil || st == nil || st.Holder.ID != info.ID || st.Alive != c.alive || st.Detail == "" {
			t.Errorf("%s: %+v, %v; want alive %v", c.name, st, err, c.alive)
		}
		os.Remove(b.lockPath())
	}
}

// Issue 41: an empty lock file (its holder between creating and filling it, or killed
// then) used to be reported as "run: mcp force-unlock (being written)", which is no
// command. It has no ID to give force-unlock: the error says what the file is and how to
// remove it, and force-unlock says the same.
func TestEmptyLockFileHint(t *testing.T) {
	ctx := context.Background()
	b := &Local{Path: filepath.Join(t.TempDir(), "mcp.state")}
	if err := os.WriteFile(b.lockPath(), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := b.Lock(ctx, state.NewLockInfo("apply", "test"))
	var le *state.LockError
	if !errors.As(err, &le) || strings.Contains(err.Error(), "force-unlock") || strings.Contains(err.Error(), "(being written)") ||
		!strings.Contains(err.Error(), "rm "+b.lockPath()) {
		t.Errorf("locking beside an empty lock file: %v; want a LockError saying how to remove the file, and no force-unlock", err)
	}
	if err := b.ForceUnlock(ctx, "(being written)"); err == nil || !strings.Contains(err.Error(), "rm "+b.lockPath()) {
		t.Errorf("force-unlock of an empty lock file: %v; want it refused, saying how to remove the file", err)
	}
	if _, err := os.Stat(b.lockPath()); err != nil {
		t.Errorf("the empty lock file is gone: %v", err)
	}
}
