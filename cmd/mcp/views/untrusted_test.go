package views

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// TestErrorLines: an error is a line per joined error (nested joins too), each escaped; a
// line break inside one error is escaped, not a line of its own.
func TestErrorLines(t *testing.T) {
	a, b := errors.New("node w-0: write /etc/a\n    - forged"), errors.New("saving state: \x1b[2J")
	err := errors.Join(a, fmt.Errorf("wrapped: %w", errors.Join(b)), errors.Join(b, a))
	want := []string{`node w-0: write /etc/a\n    - forged`, `wrapped: saving state: \x1b[2J`,
		`saving state: \x1b[2J`, `node w-0: write /etc/a\n    - forged`}
	if got := ErrorLines(err); !slices.Equal(got, want) {
		t.Errorf("ErrorLines:\n got %q\nwant %q", got, want)
	}
}
