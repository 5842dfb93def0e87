package nodeexec

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
)

func TestRunCheck(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "etc", "broken"), []byte("x"), 0o644)
	sh := func(script string) []string { return []string{"/bin/sh", "-c", script} }
	tests := []struct {
		name string
		argv []string
		want model.CheckResult
	}{
		{"passes", sh("echo fine"), model.CheckResult{ExitCode: 0, Output: "fine\n"}},
		{"exit code and combined output", sh("echo out; echo err >&2; exit 3"), model.CheckResult{ExitCode: 3, Output: "out\nerr\n"}},
		{"node root and name in the environment, root as working directory",
			sh(`test ! -e "$MCP_NODE_ROOT/etc/broken" || { echo "$MCP_NODE: $(pwd) is broken"; exit 1; }`),
			model.CheckResult{ExitCode: 1, Output: "worker-1: " + root + " is broken\n"}},
		{"nothing inherited", sh(`echo "$HOME|$PATH"`), model.CheckResult{Output: "|" + CheckPath + "\n"}},
		{"relative path not run", []string{"sh", "-c", "true"},
			model.CheckResult{ExitCode: -1, Error: `not run: the command ["sh" "-c" "true"] does not start with an absolute path`}},
		{"empty", nil, model.CheckResult{ExitCode: -1, Error: `not run: the command [] does not start with an absolute path`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RunCheck(context.Background(), Check{Argv: tt.argv, Timeout: 10 * time.Second, Node: "worker-1", Root: root})
			if got != tt.want {
				t.Errorf("RunCheck = %+v, want %+v", got, tt.want)
			}
			if got.Passed() != (tt.want.ExitCode == 0 && tt.want.Error == "") {
				t.Errorf("Passed() = %v for %+v", got.Passed(), got)
			}
		})
	}
}

func TestRunCheckMissingProgram(t *testing.T) {
	got := RunCheck(context.Background(), Check{Argv: []string{"/nonexistent/health"}, Timeout: time.Second, Root: t.TempDir()})
	if got.Passed() || got.ExitCode != -1 || !strings.HasPrefix(got.Error, "not run: ") || !strings.Contains(got.Error, "/nonexistent/health") {
		t.Errorf("RunCheck of a missing program = %+v", got)
	}
}

// TestRunCheckOutputBounded: only the first model.CheckOutputLimit bytes are kept, as valid
// UTF-8, and a command writing much more is not blocked by it.
func TestRunCheckOutputBounded(t *testing.T) {
	// 'é' is two bytes: 511 bytes of 'a' then 'é' cuts it at the limit.
	script := `printf 'a%.0s' $(seq 511); printf 'é'; head -c 1000000 /dev/zero; exit 1`
	got := RunCheck(context.Background(), Check{Argv: []string{"/bin/sh", "-c", script}, Timeout: 10 * time.Second, Root: t.TempDir()})
	if got.ExitCode != 1 || !strings.HasPrefix(got.Output, strings.Repeat("a", 511)) || got.Output[511:] != "\uFFFD" {
		t.Errorf("RunCheck = exit %d, %d bytes of output ending %q", got.ExitCode, len(got.Output), got.Output[max(0, len(got.Output)-8):])
	}
}

// TestRunCheckTimeout: a command still running at its timeout is killed with everything it
// started (a shell's background child that holds the output too), and the run says so.
func TestRunCheckTimeout(t *testing.T) {
	start := time.Now()
	got := RunCheck(context.Background(), Check{Argv: []string{"/bin/sh", "-c", "echo waiting; sleep 30 & sleep 30"},
		Timeout: 300 * time.Millisecond, Root: t.TempDir()})
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the run took %s: the command was not killed at its timeout", took)
	}
	want := model.CheckResult{ExitCode: -1, Output: "waiting\n", Error: "killed after 300ms"}
	if got != want {
		t.Errorf("RunCheck = %+v, want %+v", got, want)
	}
	if s := got.String(); s != "killed after 300ms: waiting" {
		t.Errorf("String() = %q", s)
	}
}

func TestRunCheckStopped(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got := RunCheck(ctx, Check{Argv: []string{"/bin/sh", "-c", "sleep 30"}, Timeout: time.Minute, Root: t.TempDir()})
	if got.Passed() || !strings.HasPrefix(got.Error, "stopped: ") {
		t.Errorf("RunCheck with a cancelled context = %+v", got)
	}
}

// TestRunCheckChroot: with Chroot the command runs inside that directory — the host's root
// for an agent in a container — with "/" as its working directory and MCP_NODE_ROOT. It
// needs root (chroot(2)) and a Go toolchain to build a static program for the new root.
func TestRunCheckChroot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chroot needs root")
	}
	host := t.TempDir()
	src := filepath.Join(t.TempDir(), "main.go")
	os.WriteFile(src, []byte(`package main

import (
	"fmt"
	"os"
)

func main() {
	wd, _ := os.Getwd()
	b, err := os.ReadFile("/etc/marker")
	fmt.Printf("%s %s %s %q %v", wd, os.Getenv("MCP_NODE_ROOT"), os.Getenv("MCP_NODE"), b, err)
}
`), 0o644)
	cmd := exec.Command("go", "build", "-o", filepath.Join(host, "usr/bin/probe"), src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("building a static probe: %v\n%s", err, out)
	}
	os.MkdirAll(filepath.Join(host, "etc"), 0o755)
	os.WriteFile(filepath.Join(host, "etc/marker"), []byte("host"), 0o644)
	got := RunCheck(context.Background(), Check{Argv: []string{"/usr/bin/probe"}, Timeout: 10 * time.Second,
		Node: "worker-1", Root: "/", Chroot: host})
	if want := (model.CheckResult{Output: `/ / worker-1 "host" <nil>`}); got != want {
		t.Errorf("RunCheck chrooted = %+v, want %+v", got, want)
	}
}
