package planner

import (
	"maps"
	"slices"

	"github.com/mcpfleet/mcp/model"
)

// tree merges a pool's configs' files, directories, links and core user's SSH keys. A path
// is one entry (model.TreeEntry): a later config's declaration of it replaces an earlier
// one's, whatever each declared (later wins). The SSH keys of all the configs are one
// file, each key once in merge order, as the MCO concatenates its MachineConfigs' keys.
type tree struct {
	entries map[string]model.TreeEntry
	keys    []string
	// keysBy is the last config that declared keys, and where.
	keysBy model.Origin
	keysAt model.Source
}

func newTree() *tree { return &tree{entries: map[string]model.TreeEntry{}} }

// add merges c's entries and keys. Provenance is by path; a later entry that changes the
// on_change policies of an earlier one of its kind is an override.
func (t *tree) add(c *model.Config, block string, rel func(model.Origin) model.Origin, prov *model.Provenance, ovs *[]override) {
	for _, e := range c.Entries() {
		n := e.Common()
		by := rel(model.OriginAt(block, n.DeclRange, n.Text))
		if old, ok := t.entries[n.Path]; ok && old.Kind() == e.Kind() {
			*ovs = appendOverride(*ovs, string(e.Kind()), n.Path, n.DeclRange, by, prov.Files[n.Path].By, old.Common().OnChange, n.OnChange)
		}
		prov.Files[n.Path] = written(prov.Files, n.Path, by)
		t.entries[n.Path] = e
	}
	if len(c.SSHKeys) > 0 {
		for _, k := range c.SSHKeys {
			if !slices.Contains(t.keys, k) {
				t.keys = append(t.keys, k)
			}
		}
		t.keysBy = rel(model.OriginAt(block, c.SSHKeysSource.Range, c.SSHKeysSource.Text))
		t.keysAt = c.SSHKeysSource
	}
}

// sshKeys adds the keys' file and directories (model.SSHKeyItems), when any config
// declared keys. No config declares their paths itself: they are outside the trees file,
// directory and link blocks may name.
func (t *tree) sshKeys(prov *model.Provenance) {
	if len(t.keys) == 0 {
		return
	}
	f, dirs := model.SSHKeyItems(t.keys, t.keysAt.Range, t.keysAt.Text)
	t.entries[f.Path] = &f
	prov.Files[f.Path] = model.Written{By: t.keysBy}
	for i := range dirs {
		t.entries[dirs[i].Path] = &dirs[i]
		prov.Files[dirs[i].Path] = model.Written{By: t.keysBy}
	}
}

// sorted is the merged entries, sorted by path.
func (t *tree) sorted() []model.TreeEntry {
	out := make([]model.TreeEntry, 0, len(t.entries))
	for _, p := range slices.Sorted(maps.Keys(t.entries)) {
		out = append(out, t.entries[p])
	}
	return out
}
