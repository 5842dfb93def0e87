// Package quickstarttest copies examples/quickstart for a test, with the local provider's
// simulated drain and reboot durations a test chooses.
package quickstarttest

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

var durations = regexp.MustCompile(`((drain|reboot)_duration\s*=\s*)"[^"]*"`)

// Copy copies the quickstart at src (its path from the test's package) into a temporary
// directory, its drains taking drain and its reboots reboot ("0s", "1s"), and returns the copy.
func Copy(t testing.TB, src, drain, reboot string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "qs")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dst, "main.hcl")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// The spacing stays as it was: tests run mcp fmt -check on the copy.
	b = durations.ReplaceAllFunc(b, func(m []byte) []byte {
		d := reboot
		if m[0] == 'd' {
			d = drain
		}
		return durations.ReplaceAll(m, []byte(`${1}"`+d+`"`))
	})
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}
