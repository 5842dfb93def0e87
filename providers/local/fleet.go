// Package local is the embedded provider: a fleet of node directories, for demos, tests and
// benchmarks, with no cluster. Each node is a directory holding its observed state and a
// root/ that is its filesystem; apply runs the real node executor (nodeexec) in-process
// against those roots and simulates drains and reboots. See docs/fleet-format.md.
package local

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/mcpfleet/mcp/internal/atomicfile"
	"github.com/mcpfleet/mcp/planner/model"
)

// FormatVersion is the fleet directory's format.
const FormatVersion = 1

// MaxFileSize bounds every fleet file this package reads (fleet.json, node.json,
// pods.json): a fleet is input, and a huge or endless file must be an error, not an
// out-of-memory.
const MaxFileSize = 16 << 20

// fleetFile is FLEET/fleet.json.
type fleetFile struct {
	FormatVersion int       `json:"format_version"`
	PDBs          []pdbSpec `json:"pdbs,omitempty"`
}

// pdbSpec is a PodDisruptionBudget as declared; its status is computed at refresh.
type pdbSpec struct {
	Namespace    string            `json:"namespace"`
	Name         string            `json:"name"`
	Selector     map[string]string `json:"selector"`
	MinAvailable int               `json:"min_available"`
}

// podFile is one entry of FLEET/nodes/<name>/pods.json.
type podFile struct {
	Namespace string            `json:"namespace"`
	Name      string            `json:"name"`
	Labels    map[string]string `json:"labels,omitempty"`
	DaemonSet bool              `json:"daemonset,omitempty"`
	Ready     bool              `json:"ready"`
	// Evicted pods are gone from the node until it is uncordoned (they reschedule when
	// it returns).
	Evicted bool `json:"evicted,omitempty"`
}

func nodeDir(dir, node string) string  { return filepath.Join(dir, "nodes", node) }
func nodeFile(dir, node string) string { return filepath.Join(nodeDir(dir, node), "node.json") }
func podsFile(dir, node string) string { return filepath.Join(nodeDir(dir, node), "pods.json") }
func rootDir(dir, node string) string  { return filepath.Join(nodeDir(dir, node), "root") }

// openRegular opens a fleet file without following a symlink and without blocking on a
// FIFO, and refuses anything but a regular file: a fleet directory is input, and a
// symlink to /dev/zero or a FIFO must be an error, not a hang.
func openRegular(path string, flag int, perm fs.FileMode) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, perm)
	if errors.Is(err, syscall.ELOOP) {
		return nil, nil, fmt.Errorf("%s is a symbolic link, not a regular file", path)
	}
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s is %s, not a regular file", path, fileType(st.Mode()))
	}
	return f, st, nil
}

func fileType(m fs.FileMode) string {
	switch {
	case m&fs.ModeDir != 0:
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "an irregular file (" + m.Type().String() + ")"
}

// readFile reads a whole fleet file: a regular file of at most MaxFileSize bytes.
func readFile(path string) ([]byte, error) {
	f, st, err := openRegular(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooLarge := fmt.Errorf("%s is larger than %d MiB, more than a fleet file may be", path, MaxFileSize>>20)
	if st.Size() > MaxFileSize {
		return nil, tooLarge
	}
	// Read one byte past the bound, so a file that grew after the open is caught too.
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(b) > MaxFileSize {
		return nil, tooLarge
	}
	return b, nil
}

// readJSON reads a fleet file into v.
func readJSON(path string, v any) error {
	b, err := readFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o644)
}

// checkName refuses a node name that is not one directory name: names come from the
// command line and the engine, and must not reach outside nodes/.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return fmt.Errorf("%q is not a node name", name)
	}
	return nil
}

// readNode reads node.json. One that is null, {}, or names another node is refused: it
// would drop the node from the plan without a word.
func readNode(dir, name string) (*model.Node, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	path := nodeFile(dir, name)
	b, err := readFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no node %q in fleet %s", name, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("reading node %s: %w", name, err)
	}
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return nil, fmt.Errorf("reading node %s: %s holds null, not a node", name, path)
	}
	n := new(model.Node)
	if err := json.Unmarshal(b, n); err != nil {
		return nil, fmt.Errorf("reading node %s: %s: %w", name, path, err)
	}
	switch {
	case n.Name == "":
		return nil, fmt.Errorf("reading node %s: %s has no node name", name, path)
	case n.Name != name:
		return nil, fmt.Errorf("reading node %s: %s names node %q, not its directory's %q", name, path, n.Name, name)
	}
	return n, nil
}

func readPods(dir, node string) ([]podFile, error) {
	var pods []podFile
	err := readJSON(podsFile(dir, node), &pods)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return pods, err
}

func readFleetFile(dir string) (*fleetFile, error) {
	f := new(fleetFile)
	path := filepath.Join(dir, "fleet.json")
	if err := readJSON(path, f); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s is not a local fleet (no fleet.json); create one with mcp fleet init", dir)
		}
		return nil, err
	}
	if f.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("%s has format version %d; this mcp reads %d", path, f.FormatVersion, FormatVersion)
	}
	return f, nil
}
