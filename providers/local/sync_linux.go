package local

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncFS makes everything written to dir's filesystem durable (syncfs(2)).
func syncFS(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return unix.Syncfs(int(d.Fd()))
}
