package nodeexec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/internal/atomicfile"
	"github.com/mcpfleet/mcp/internal/boundedfile"
	"github.com/mcpfleet/mcp/model"
)

// The agent's own records (StateDir: the pending update, the first-boot record, each agent
// mode's records) are the agent's alone. The configuration refuses what reaches them
// (planner's records check); on the node, where links the configuration cannot see may
// be — a node's /opt made a link to var/lib/mcp —, two rules keep them so:
//
//   - a managed path that lands in them through the node's links is refused for that item
//     (intoRecords): a config's file there would be overwritten or deleted by the agent,
//     or would forge one of its records;
//   - the records are reached without following a link (openRecords): a link on the way to
//     StateDir — var/lib made a link to where a config writes — would have the agent read
//     a forged record, and write its own where configs write.

// intoRecords refuses the managed path p (clean, absolute) when it lands, through the
// node's own links as they are in r, in the agent's records, or — unless p is a directory
// item, which is made only where none is — in place of a directory they are in.
func intoRecords(r *os.Root, p string, dir bool) error {
	l, err := model.Land(p, nodeReadlink(r))
	if err != nil {
		return fmt.Errorf("path %s: following the node's links to it: %w", p, err)
	}
	rec := content.AgentStateDir
	if !model.InTree(l.Path, rec) && (dir || !model.Above(l.Path, rec)) {
		return nil
	}
	how := ""
	if len(l.Via) > 0 {
		how = " through the node's " + linksOf(r, l.Via)
	}
	what := "in " + rec + ", the node agent's own records"
	if model.Above(l.Path, rec) {
		what = "in place of a directory the node agent's own records (" + rec + ") are in"
	}
	return fmt.Errorf("path %s lands at %s%s: %s; mcp does not write there for a config (refused for this item)", p, l.Path, how, what)
}

// linksOf names the node's links at paths (each as it is in r, with its target).
func linksOf(r *os.Root, paths []string) string {
	parts := make([]string, len(paths))
	for i, p := range paths {
		t, _ := r.Readlink(strings.TrimPrefix(p, "/"))
		parts[i] = p + " → " + t
	}
	if len(parts) == 1 {
		return "link " + parts[0]
	}
	return "links " + strings.Join(parts, ", then ")
}

// nodeReadlink reads the node's links in r for model.Land, one element at a time: the
// path it is asked about has no link before its last element (Land followed them), so
// Lstat follows none.
func nodeReadlink(r *os.Root) model.Readlink {
	return func(p string) (string, bool, error) {
		rel := strings.TrimPrefix(p, "/")
		st, err := r.Lstat(rel)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			return "", false, nil // nothing there yet: made as a directory
		case err != nil:
			return "", false, err
		case st.Mode()&fs.ModeSymlink == 0:
			return "", false, nil
		}
		t, err := r.Readlink(rel)
		return t, err == nil, err
	}
}

// openRecords opens the agent's directory StateDir in r, each element of the way without
// following a link (an element that is one is an error naming it): the records are read
// and written where the agent keeps them, never where a link sends them. create makes the
// missing directories (0755). Inside, the records are reached through the returned root,
// which no link leaves.
func openRecords(r *os.Root, create bool) (*os.Root, error) {
	cur, at := r, ""
	for _, name := range strings.Split(StateDir, "/") {
		at = path.Join(at, name)
		st, err := cur.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) && create {
			if err = cur.Mkdir(name, 0o755); err == nil || errors.Is(err, fs.ErrExist) {
				st, err = cur.Lstat(name)
			}
		}
		var next *os.Root
		if err == nil {
			next, err = openDirNoFollow(cur, name, at, st)
		}
		if cur != r {
			cur.Close()
		}
		if err != nil {
			return nil, err
		}
		cur = next
	}
	return cur, nil
}

// openDirNoFollow opens name in cur, which Lstat found to be st, as a root of its own: a
// link or anything but a directory is refused, and so is a directory swapped in since.
func openDirNoFollow(cur *os.Root, name, at string, st fs.FileInfo) (*os.Root, error) {
	if st.Mode()&fs.ModeSymlink != 0 {
		t, _ := cur.Readlink(name)
		return nil, fmt.Errorf("the node agent's records (/%s): /%s is a link (to %s), and the agent does not follow links to its records: "+
			"make /%s a directory again", StateDir, at, t, at)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("the node agent's records (/%s): /%s is %s, not a directory", StateDir, at, boundedfile.Describe(st.Mode()))
	}
	next, err := cur.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	if got, err := next.Stat("."); err != nil || !os.SameFile(st, got) {
		next.Close()
		return nil, fmt.Errorf("the node agent's records (/%s): /%s changed while it was opened", StateDir, at)
	}
	return next, nil
}

// recordName is the name in StateDir of the record at rel (StateDir/<name>).
func recordName(rel string) (string, error) {
	name, ok := strings.CutPrefix(rel, StateDir+"/")
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", fmt.Errorf("%s is not one of the agent's records (files of /%s)", rel, StateDir)
	}
	return name, nil
}

// ReadRecord reads one of the agent's records (rel inside r: StateDir/<name>), reached
// without following a link (openRecords). A record, or its directory, that is not there
// is an error for which errors.Is(err, fs.ErrNotExist).
func ReadRecord(r *os.Root, rel string) ([]byte, error) {
	name, err := recordName(rel)
	if err != nil {
		return nil, err
	}
	d, err := openRecords(r, false)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return boundedfile.ReadIn(d, name, maxRecord)
}

// WriteRecordIn replaces one of the agent's records (rel inside r, for root only)
// atomically, making its directory when missing: what ReadRecord reads back. sync makes
// it durable (atomicfile.ReplaceIn).
func WriteRecordIn(r *os.Root, rel string, data []byte, sync bool) error {
	name, err := recordName(rel)
	if err != nil {
		return err
	}
	d, err := openRecords(r, true)
	if err != nil {
		return err
	}
	defer d.Close()
	return atomicfile.ReplaceIn(d, name, data, 0o600, sync)
}

// WriteRecord is WriteRecordIn in the executor's root.
func (e *Executor) WriteRecord(rel string, data []byte) error {
	r, err := os.OpenRoot(e.Root)
	if err != nil {
		return err
	}
	defer r.Close()
	return WriteRecordIn(r, rel, data, !e.NoSync)
}

// removeRecord removes one of the agent's records from the executor's root, if it is there.
func (e *Executor) removeRecord(rel string) error {
	name, err := recordName(rel)
	if err != nil {
		return err
	}
	r, err := os.OpenRoot(e.Root)
	if err != nil {
		return err
	}
	defer r.Close()
	d, err := openRecords(r, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Remove(name); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	return e.syncDir(d, ".")
}
