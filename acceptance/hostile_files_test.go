package acceptance

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
)

// memoryLimit is the data segment (setrlimit RLIMIT_DATA: the heap and every private
// writable mapping) the real mcp gets in these tests. A plan of the quickstart peaks near
// 80 MiB; a read without end passes the limit within a second and the Go runtime dies of
// "out of memory", which the test sees as a crash, not as the error it wants.
const memoryLimit = 512 << 20

// bounded is one run of the real mcp under memoryLimit and a deadline.
type bounded struct {
	code   int
	out    string
	maxRSS int64 // bytes, the process's peak resident set
	killed bool  // it did not end by the deadline and was killed
}

// runBounded runs the real mcp in dir with its memory limited (the shell's ulimit -d,
// inherited across exec) and kills it if it has not ended within deadline.
func runBounded(t *testing.T, dir string, deadline time.Duration, args ...string) bounded {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	limit := "ulimit -d " + strconv.Itoa(memoryLimit>>10) + ` && exec "$0" "$@"`
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", limit, mcpBinary(t), "-chdir=" + dir}, args...)...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	r := bounded{out: string(out), killed: ctx.Err() != nil}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.maxRSS = ru.Maxrss << 10
	}
	return r
}

// mustEndWithError fails the test unless r ended by itself, with exit 1 and an error that
// names file and says it is not a regular file.
func mustEndWithError(t *testing.T, r bounded, file string) {
	t.Helper()
	t.Logf("exit %d, peak RSS %d MiB", r.code, r.maxRSS>>20)
	switch {
	case r.killed:
		t.Fatalf("still running at the deadline: killed\n%s", tail([]byte(r.out)))
	case r.code != 1 || !strings.Contains(unboxed(r.out), file+" is ") || !strings.Contains(unboxed(r.out), "not a regular file"):
		t.Fatalf("exit %d, want 1 with an error naming %s as not a regular file\n%s", r.code, file, tail([]byte(r.out)))
	}
}

// unboxed is an error box's text as one line: the box wraps its text at the terminal's
// width, a line break and its "│ " where the text had a space.
func unboxed(out string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(out, "│", " ")), " ")
}

// TestSpecialFilesInTheState: a link to /dev/zero in the place of the state, its backup,
// its lock or a rendered config, and a FIFO in the place of a rendered config, the journal
// or the lock, make the real mcp plan — run under a memory limit and a deadline — end
// with an error naming the file: no read without end, no hang. Before, the links made it
// read until the runtime died of "out of memory" and the FIFOs blocked it for good.
func TestSpecialFilesInTheState(t *testing.T) {
	exclusive(t)
	applied := applyQuickstart(t, nil)
	for _, tc := range []struct{ file, kind string }{
		{"mcp.state", "/dev/zero"},
		{"mcp.state.backup", "/dev/zero"},
		{"mcp.state.lock", "/dev/zero"},
		{"rendered", "/dev/zero"},
		{"rendered", "fifo"},
		{"mcp.state.journal", "fifo"},
		{"mcp.state.lock", "fifo"},
	} {
		t.Run(tc.file+" "+tc.kind, func(t *testing.T) {
			dir := t.TempDir()
			if out, err := exec.Command("cp", "-a", applied+"/.", dir).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v\n%s", err, out)
			}
			p := filepath.Join(dir, tc.file)
			if tc.file == "rendered" {
				ps, _ := filepath.Glob(filepath.Join(dir, "mcp.state.d/rendered/rendered-infra-*.json"))
				if len(ps) != 1 {
					t.Fatalf("rendered configs of infra: %v", ps)
				}
				p = ps[0]
			}
			os.Remove(p)
			if tc.kind == "fifo" {
				if err := syscall.Mkfifo(p, 0o644); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
			r := runBounded(t, dir, 30*time.Second, "plan", "-no-color")
			mustEndWithError(t, r, filepath.Base(p))
		})
	}
}

// TestPasswdFIFOInANodeRoot: a FIFO at a node's etc/passwd, which apply reads to resolve a
// file's user, fails that node at once, naming the file; apply ends (under a memory limit
// and a deadline), releases its lock, and — judged from the fleet's node records and event
// logs — the node is Degraded with that reason, the other pool is updated, and no node is
// left cordoned. Before, apply blocked on the FIFO for good, holding the lock.
func TestPasswdFIFOInANodeRoot(t *testing.T) {
	exclusive(t)
	dir := localQuickstart(t, "0s", "0s")
	owned := "config \"80-owned\" {\n  pools = [\"worker\", \"infra\"]\n\n  file \"/etc/owned.conf\" {\n" +
		"    content   = \"owned by core\\n\"\n    user      = \"core\"\n    on_change = [\"none\"]\n  }\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "owned.hcl"), []byte(owned), 0o644); err != nil {
		t.Fatal(err)
	}
	passwd := filepath.Join(dir, "fleet/nodes/worker-0/root/etc/passwd")
	os.Remove(passwd)
	if err := syscall.Mkfifo(passwd, 0o644); err != nil {
		t.Fatal(err)
	}
	r := runBounded(t, dir, 60*time.Second, "apply", "-auto-approve", "-no-color")
	t.Logf("exit %d, peak RSS %d MiB", r.code, r.maxRSS>>20)
	if r.killed || r.code != 1 {
		t.Fatalf("apply: exit %d, killed at the deadline %v; want it to end with exit 1\n%s", r.code, r.killed, tail([]byte(r.out)))
	}
	if _, err := os.Lstat(filepath.Join(dir, "mcp.state.lock")); !os.IsNotExist(err) {
		t.Errorf("the lock is left: %v", err)
	}
	for _, name := range []string{"worker-0", "worker-1", "worker-2", "worker-3", "infra-0", "infra-1"} {
		n := readNode(t, dir, name)
		if n.Unschedulable {
			t.Errorf("%s is left cordoned", name)
		}
		switch {
		case name == "worker-0" && (n.State != model.StateDegraded || !strings.Contains(n.Reason, "etc/passwd is a named pipe (FIFO)")):
			t.Errorf("worker-0: state %s %q, want Degraded naming its etc/passwd", n.State, n.Reason)
		case strings.HasPrefix(name, "infra") && n.State != model.StateDone:
			t.Errorf("%s: state %s %q, want Done (its pool goes on)", name, n.State, n.Reason)
		}
	}
	// The apply's release of its claim on the node comes after.
	if got := kindsOf(nodeEvents(t, dir, "worker-0")); !strings.HasSuffix(got, "degraded release") {
		t.Errorf("worker-0's events %q, want them to end degraded (then the apply's claim released)", got)
	}
}

// TestKilledWritersTemporariesAreSwept: what a state write killed mid-way leaves — a
// temporary file beside a rendered config or the state (".NAME.tmp-<random>", 1 of 48
// kills left one) — is never read as a config, and the next plan, once it holds the
// lock, removes it.
func TestKilledWritersTemporariesAreSwept(t *testing.T) {
	exclusive(t)
	dir := applyQuickstart(t, nil)
	left := []string{
		filepath.Join(dir, "mcp.state.d/rendered/.rendered-infra-0123.json.tmp-0123456789ab"),
		filepath.Join(dir, ".mcp.state.tmp-a1b2c3d4e5f6"),
	}
	for _, p := range left {
		if err := os.WriteFile(p, []byte(`{"name": "rendered-infra-0123", "pool": "inf`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code, out := mcpIn(t, dir, "plan", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Fatalf("plan beside a killed writer's temporary files: exit %d, want 0 (no changes)\n%s", code, out)
	}
	for _, p := range left {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there after plan (%v)", p, err)
		}
	}
}
