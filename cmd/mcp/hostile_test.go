package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

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
