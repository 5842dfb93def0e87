package nodeexec

import (
	"fmt"
	"os"
	"strings"

	"github.com/mcpfleet/mcp/internal/boundedfile"
	"github.com/mcpfleet/mcp/model"
)

// Bounds of what the agent reads in a node's root, always through boundedfile (regular
// files only, opened without blocking, never read past the bound): a root is the node's,
// and a FIFO or a link to /dev/zero in it must be an error, not a hung or exhausted agent.
const (
	// maxAccountDB bounds etc/passwd and etc/group, read to resolve a file's owner.
	maxAccountDB = 16 << 20
	// maxRecord bounds the agent's own records (pending update, current config, status,
	// first boot, update): each holds at most one rendered config.
	maxRecord = model.MaxRenderedSize + 1<<20
	// maxManaged bounds a file, unit or drop-in at a path a config manages: its content
	// comes from a rendered config.
	maxManaged = model.MaxRenderedSize
	// maxBootID bounds the boot id file (37 bytes on Linux).
	maxBootID = 4 << 10
)

// readManaged reads the file at a managed path (rel inside r).
func readManaged(r *os.Root, rel string) ([]byte, error) {
	return boundedfile.ReadIn(r, rel, maxManaged)
}

// ReadBootID reads the running boot's id from path (default DefaultBootIDPath).
func ReadBootID(path string) (string, error) {
	if path == "" {
		path = DefaultBootIDPath
	}
	b, err := boundedfile.Read(path, maxBootID, 0)
	if err != nil {
		return "", fmt.Errorf("reading boot id: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
