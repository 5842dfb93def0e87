package state

import (
	"strings"
	"testing"
)

// TestLockErrorEscapesTheHolder: what a lock file or a Lease says of its holder — who,
// the operation, the lock's ID, a Lease's note — is escaped in the lock error, which apply,
// plan and force-unlock print: no control character, no line break of its own.
func TestLockErrorEscapesTheHolder(t *testing.T) {
	hostile := "x\x1b]0;T\x07\x1b[2J\u009b\r\n    - forged"
	err := &LockError{Holder: LockInfo{ID: hostile, Operation: hostile, Who: hostile}, Note: hostile}
	msg := err.Error()
	if strings.ContainsAny(msg, "\x1b\x07\r\n\u009b") {
		t.Errorf("the lock error holds the holder's text raw: %q", msg)
	}
	if n := strings.Count(msg, `x\x1b]0;T\x07\x1b[2J\u009b\r\n    - forged`); n != 5 {
		t.Errorf("the lock error shows the holder's text escaped %d times, want 5 (who, operation, ID twice, note): %q", n, msg)
	}
}
