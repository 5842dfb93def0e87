//go:build !linux

package local

import "syscall"

// syncFS makes everything written to dir's filesystem durable (sync(2): there is no
// syncfs here).
func syncFS(string) error {
	syscall.Sync()
	return nil
}
