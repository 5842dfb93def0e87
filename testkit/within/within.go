// Package within runs a test's call under a deadline: a call that blocks for good (a FIFO
// opened for reading waits for a writer forever) fails the test instead of hanging it.
package within

import (
	"testing"
	"time"
)

// Deadline is how long a call may take: the calls it guards are refusals that should
// take milliseconds.
const Deadline = 10 * time.Second

// Call returns f's result, or fails the test naming what if f has not returned within
// Deadline (f's goroutine is left blocked; the test binary's end reaps it).
func Call[T any](t testing.TB, what string, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(Deadline):
		t.Fatalf("%s: still blocked after %s", what, Deadline)
		var zero T
		return zero
	}
}
