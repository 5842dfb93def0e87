// Package golden compares what a test printed with a golden file, and rewrites the file
// when the test runs with -update.
package golden

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Check fails t unless got is the content of the file at path; with update it first writes
// got there.
func Check(t testing.TB, path, got string, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s (-want +got):\n%s", path, d)
	}
}
