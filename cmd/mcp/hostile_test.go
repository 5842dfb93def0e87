package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/testkit/endless"
	"github.com/mcpfleet/mcp/testkit/within"
)

// mcpWithin is mcp under within's deadline: opening a FIFO for reading waits for a writer
// forever, which is the failure looked for.
func mcpWithin(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	type result struct {
		code        int
		out, errOut string
	}
	r := within.Call(t, "mcp "+strings.Join(args, " "), func() result {
		code, out, errOut := mcp(t, dir, args...)
		return result{code, out, errOut}
	})
	return r.code, r.out, r.errOut
}

// TestCredentialFilesAreReadBounded: a CA or token file that is a FIFO or a link to
// /dev/zero is refused at once, naming it, by mcp pointer and mcp serve.
func TestCredentialFilesAreReadBounded(t *testing.T) {
	dir := quickstart(t)
	fifo := filepath.Join(t.TempDir(), "token")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(t.TempDir(), "ca.pem")
	os.Symlink("/dev/zero", zero)
	for _, args := range [][]string{
		{"pointer", "worker", "-url", "https://boot.example", "-token-file", fifo},
		{"pointer", "worker", "-url", "https://boot.example", "-ca", zero},
		{"serve", "-listen", "127.0.0.1:0", "-token-file", fifo},
	} {
		file := args[len(args)-1]
		code, out, errOut := mcpWithin(t, dir, args...)
		if code != 1 || !strings.Contains(errOut, file) || !strings.Contains(errOut, "not a regular file") {
			t.Errorf("mcp %s: exit %d, want 1 naming %s as not a regular file\n%s%s", strings.Join(args, " "), code, file, out, errOut)
		}
	}
}

// TestEmptyTokenFilesAreRefused: an empty or whitespace-only token file is an error naming
// it — never a server that asks no token or a pointer config that sends none.
func TestEmptyTokenFilesAreRefused(t *testing.T) {
	dir := quickstart(t)
	for name, content := range map[string]string{"empty": "", "blank": " \n\t\r\n"} {
		file := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"pointer", "worker", "-url", "https://boot.example", "-token-file", file},
			{"serve", "-listen", "127.0.0.1:0", "-token-file", file},
		} {
			code, out, errOut := mcpWithin(t, dir, args...)
			if code != 1 || !strings.Contains(errOut, file) || !strings.Contains(errOut, "empty") {
				t.Errorf("mcp %s (%s token): exit %d, want 1 naming %s as empty\n%s%s", strings.Join(args, " "), name, code, file, out, errOut)
			}
		}
	}
}

// TestEndlessPrometheusAnswerFailsApplyClean: an alert gate whose Prometheus answers
// without end holds its pool, and apply ends with exit 1 naming the server and the bound,
// the lock released and no node of the gated pool touched — not killed by running out of
// memory with the lock left.
func TestEndlessPrometheusAnswerFailsApplyClean(t *testing.T) {
	dir := quickstart(t)
	prom := endless.Server(t, "application/json", `{"status":"success","data":{"alerts":[`,
		`{"labels":{"alertname":"A"},"annotations":{},"state":"pending","activeAt":"2026-11-26T10:00:00Z","value":"1"},`)
	main := filepath.Join(dir, "main.hcl")
	b, err := os.ReadFile(main)
	if err != nil {
		t.Fatal(err)
	}
	gated := strings.Replace(string(b), `max_unavailable = "50%"`, `max_unavailable = "50%"
  alert_gate {
    prometheus_url = "`+prom.URL+`"
    timeout        = "0s"
  }`, 1)
	if err := os.WriteFile(main, []byte(gated), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color")
	if all := out + errOut; code != 1 || !strings.Contains(all, "asking Prometheus at "+prom.URL) || !strings.Contains(all, "larger than 64 MiB") {
		t.Errorf("apply: exit %d, want 1 naming the server and the bound\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "mcp.state.lock")); !os.IsNotExist(err) {
		t.Errorf("the lock is left: %v", err)
	}
	for _, n := range []string{"worker-0", "worker-1", "worker-2", "worker-3"} {
		if evs := events(t, dir, n, local.EventCordon); len(evs) > 0 {
			t.Errorf("%s cordoned while its pool's Prometheus answered without end", n)
		}
	}
}
