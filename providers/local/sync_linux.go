package local

import (
	"golang.org/x/sys/unix"

	"github.com/mcpfleet/mcp/internal/boundedfile"
)

// syncFS makes everything written to dir's filesystem durable (syncfs(2)).
func syncFS(dir string) error {
	d, err := boundedfile.OpenDir(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return unix.Syncfs(int(d.Fd()))
}
