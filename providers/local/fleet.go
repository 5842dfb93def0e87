// Package local is the embedded provider: a fleet of node directories, for demos, tests and
// benchmarks, with no cluster. Each node is a directory holding its observed state and a
// root/ that is its filesystem; apply runs the real node executor (nodeexec) in-process
// against those roots and simulates drains and reboots. See docs/fleet-format.md.
package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mcpfleet/mcp/internal/boundedfile"

	"github.com/mcpfleet/mcp/internal/atomicfile"
)

// FormatVersion is the fleet directory's format.
const FormatVersion = 1

// MaxFileSize bounds every fleet file this package reads (fleet.json, node.json, pods.json,
// events.jsonl): a fleet is input, and a huge or endless file must be an error, not an
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

func nodeDir(dir, node string) string    { return filepath.Join(dir, "nodes", node) }
func nodeFile(dir, node string) string   { return filepath.Join(nodeDir(dir, node), "node.json") }
func podsFile(dir, node string) string   { return filepath.Join(nodeDir(dir, node), "pods.json") }
func rootDir(dir, node string) string    { return filepath.Join(nodeDir(dir, node), "root") }
func eventsFile(dir, node string) string { return filepath.Join(nodeDir(dir, node), "events.jsonl") }

// relNodeFile is how errors name a node's file: relative to the fleet, as the docs do.
func relNodeFile(node, file string) string { return filepath.Join("nodes", node, file) }

// openRegular opens a fleet file without following a symlink and without blocking on a
// FIFO, and refuses anything but a regular file: a fleet directory is input, and a
// symlink to /dev/zero or a FIFO must be an error, not a hang.
func openRegular(path string, flag int, perm fs.FileMode) (*os.File, fs.FileInfo, error) {
	return boundedfile.Open(path, flag|boundedfile.NoFollow, perm)
}

// readFile reads a whole fleet file: a regular file of at most MaxFileSize bytes.
func readFile(path string) ([]byte, error) {
	return boundedfile.Read(path, MaxFileSize, boundedfile.NoFollow)
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

// writeJSON replaces a fleet file atomically, without fsyncs: the fleet's files must survive
// a killed process, not a crash of the machine (docs/fleet-format.md, "Durability").
func writeJSON(path string, v any) error {
	b, err := encodeJSON(v)
	if err != nil {
		return err
	}
	return atomicfile.Replace(path, b, 0o644, false)
}

// encodeJSON is a fleet file's encoding: indented, with a final newline.
func encodeJSON(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
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
