//go:build linux

package nodeexec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/testkit/proctable"
)

// A command check ends with everything it started, whatever its outcome: a background
// child (here a subshell, which carries the script and so the marker in its argv) is gone
// from the process table once RunCheck returns, and one that keeps the output open or
// writes to it later is not waited for.
func TestRunCheckLeavesNoProcess(t *testing.T) {
	t.Run("cgroup", func(t *testing.T) { runCheckLeavesNoProcess(t) })
	// Where no cgroup v2 can be made (a container), this process is the checks' subreaper.
	t.Run("subreaper", func(t *testing.T) {
		useCheckCgroups = false
		defer func() { useCheckCgroups = true }()
		runCheckLeavesNoProcess(t)
	})
}

// The seventh finding: a check that daemonizes (setsid -f) left its daemon
// running after apply; its process group did not hold it.
func runCheckLeavesNoProcess(t *testing.T) {
	for i, tt := range []struct {
		name    string
		script  string // %s: the marker
		timeout time.Duration
		cancel  bool
		want    model.CheckResult
	}{
		{"fails, child in the background", "(sleep 300; : %s) & exit 1", 10 * time.Second, false,
			model.CheckResult{ExitCode: 1}},
		{"passes, child holding the output open", "(sleep 300; : %s) & echo ok", 10 * time.Second, false,
			model.CheckResult{Output: "ok\n"}},
		{"passes, child writing later is not waited for", "(sleep 1; echo late; sleep 300; : %s) & echo early", 10 * time.Second, false,
			model.CheckResult{Output: "early\n"}},
		{"passes, a daemon forked off into a session of its own", "setsid -f sh -c 'sleep 317; : %s'; echo ok", 10 * time.Second, false,
			model.CheckResult{Output: "ok\n"}},
		{"fails, a daemon of a daemon, its output closed", "setsid -f sh -c '(setsid -f sh -c \"sleep 317; : %[1]s\") </dev/null >/dev/null 2>&1; sleep 317; : %[1]s' </dev/null >/dev/null 2>&1; exit 3", 10 * time.Second, false,
			model.CheckResult{ExitCode: 3}},
		{"killed at its timeout", "(sleep 300; : %s) & echo waiting; sleep 30", 300 * time.Millisecond, false,
			model.CheckResult{ExitCode: -1, Output: "waiting\n", Error: "killed after 300ms"}},
		{"stopped", "(sleep 300; : %s) & echo waiting; touch started; sleep 30", 10 * time.Second, true,
			model.CheckResult{ExitCode: -1, Output: "waiting\n", Error: "stopped: context canceled"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			marker := fmt.Sprintf("mcp-check-leak-%d-%d-%d", os.Getpid(), time.Now().UnixNano(), i)
			t.Cleanup(func() { proctable.KillMarked(marker) })
			root := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel {
				// Stopped once the command has written, so its output is known.
				go func() {
					for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
						if _, err := os.Stat(filepath.Join(root, "started")); err == nil {
							break
						}
					}
					cancel()
				}()
			}
			got := RunCheck(ctx, Check{Argv: []string{"/bin/sh", "-c", fmt.Sprintf(tt.script, marker)},
				Timeout: tt.timeout, Root: root})
			if got != tt.want {
				t.Errorf("RunCheck = %+v, want %+v", got, tt.want)
			}
			// SIGKILL is delivered asynchronously: the table is looked at until it is clean.
			if !proctable.WaitGone(marker, 10*time.Second) {
				t.Errorf("processes the check started are still running: %v", proctable.Marked(marker))
			}
		})
	}
}
