// Package proctable reads the process table (Linux /proc) for tests that judge what a run
// left running from the machine itself: processes are found by a marker, a string unique
// to the test, in their argv.
package proctable

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Marked returns the ids of the live processes whose argv contains marker. Zombies (their
// argv reads empty) are not counted: they run nothing.
func Marked(marker string) []int {
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(marker)) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil && pid != os.Getpid() {
			out = append(out, pid)
		}
	}
	return out
}

// WaitGone waits up to timeout for no live process to carry marker (SIGKILL is delivered
// asynchronously) and reports whether none does.
func WaitGone(marker string, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		if len(Marked(marker)) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// KillMarked kills every process carrying marker: a test's clean-up, so that a failing
// test leaves nothing behind either.
func KillMarked(marker string) {
	for _, pid := range Marked(marker) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}
