package nodeexec

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/mcpfleet/mcp/model"
)

// CheckPath is the PATH a command health check runs with: its environment is CheckEnv's,
// nothing inherited from the agent (or from whoever runs apply on the local fleet).
const CheckPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Check is one run of a pool's command health check on a node.
type Check struct {
	// Argv is the command, run without a shell; Argv[0] must be an absolute path.
	Argv []string
	// Timeout bounds the run: the command and its process group are killed then. The
	// group is killed too when the command ends earlier, however it ends.
	Timeout time.Duration
	// Node is the node's name (MCP_NODE).
	Node string
	// Root is the node's root directory: the command's working directory and MCP_NODE_ROOT.
	Root string
	// Chroot, when set, runs the command chrooted there — an agent in a container with the
	// host's root mounted at /host runs the host's programs. Root is then relative to it
	// ("/" for the host's own root).
	Chroot string
}

// CheckEnv is the whole environment of a command check, but for the run's mark
// (CheckRunEnv, added where the jail needs it).
func CheckEnv(node, root string) []string {
	return []string{"PATH=" + CheckPath, "MCP_NODE=" + node, "MCP_NODE_ROOT=" + root}
}

// checkWaitDelay bounds how long a run waits, once the command has exited or been killed,
// for a process it started that still holds its output open: the command's process group
// is killed as it ends (runAndEnd), so only one that left the group (setsid) can.
const checkWaitDelay = 2 * time.Second

// RunCheck runs c once and says what it did: its exit code and the first
// model.CheckOutputLimit bytes of its combined standard output and error. A command that
// cannot run (a relative path, a missing program) is a result with Error set, not a Go
// error: it is the check's answer.
func RunCheck(ctx context.Context, c Check) model.CheckResult {
	if len(c.Argv) == 0 || !path.IsAbs(c.Argv[0]) {
		return model.CheckResult{ExitCode: -1, Error: fmt.Sprintf("not run: the command %q does not start with an absolute path", c.Argv)}
	}
	if c.Timeout <= 0 {
		return model.CheckResult{ExitCode: -1, Error: "not run: no timeout"}
	}
	tctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, c.Argv[0], c.Argv[1:]...)
	cmd.Env = CheckEnv(c.Node, c.Root)
	cmd.Dir = c.Root
	out := &headWriter{max: model.CheckOutputLimit}
	cmd.Stdout, cmd.Stderr = out, out // one pipe: the output interleaved as written
	cmd.WaitDelay = checkWaitDelay
	if err := isolate(cmd, c.Chroot); err != nil {
		return model.CheckResult{ExitCode: -1, Error: "not run: " + err.Error()}
	}
	err := runAndEnd(cmd)
	res := model.CheckResult{ExitCode: -1, Output: out.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		res.Error = fmt.Sprintf("stopped: %v", context.Cause(ctx))
	case tctx.Err() != nil:
		res.Error = fmt.Sprintf("killed after %s", c.Timeout)
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
		if res.ExitCode < 0 {
			res.Error = ee.String() // "signal: killed"
		}
	case errors.Is(err, exec.ErrWaitDelay):
		res.ExitCode = 0 // it exited 0; something it started kept the output open
	case err != nil:
		res.Error = "not run: " + err.Error()
	default:
		res.ExitCode = 0
	}
	return res
}

// headWriter keeps the first max bytes written to it and discards the rest (the command
// is not blocked by a full pipe).
type headWriter struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (w *headWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := w.max - len(w.b); room > 0 {
		w.b = append(w.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// String is the kept output as valid UTF-8 (a character cut at the limit is replaced).
func (w *headWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.ToValidUTF8(string(w.b), "\uFFFD")
}
