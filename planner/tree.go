package planner

import (
	"maps"
	"slices"

	"github.com/mcpfleet/mcp/model"
)

// tree merges a pool's configs' directories, links and core user's SSH keys. A path is
// one file, directory or link: a later config's declaration of it replaces an earlier
// one's, whatever each declared (later wins, as for files). The SSH keys of all the
// configs are one file, each key once in merge order, as the MCO concatenates its
// MachineConfigs' keys.
type tree struct {
	dirs  map[string]model.Directory
	links map[string]model.Link
	keys  []string
	// keysBy is the last config that declared keys, and where.
	keysBy model.Origin
	keysAt model.Source
}

func newTree() *tree {
	return &tree{dirs: map[string]model.Directory{}, links: map[string]model.Link{}}
}

// drop forgets a directory or link at p, which a later file replaces.
func (t *tree) drop(p string) {
	delete(t.dirs, p)
	delete(t.links, p)
}

// add merges c's directories, links and keys; files is the pool's files so far, from which
// a later directory or link at a file's path takes it. Provenance is by path, with files'.
func (t *tree) add(c *model.Config, block string, rel func(model.Origin) model.Origin, prov *model.Provenance, files map[string]model.File) {
	for _, d := range c.Directories {
		prov.Files[d.Path] = written(prov.Files, d.Path, rel(model.OriginAt(block, d.DeclRange, d.Text)))
		t.drop(d.Path)
		delete(files, d.Path)
		t.dirs[d.Path] = d
	}
	for _, k := range c.Links {
		prov.Files[k.Path] = written(prov.Files, k.Path, rel(model.OriginAt(block, k.DeclRange, k.Text)))
		t.drop(k.Path)
		delete(files, k.Path)
		t.links[k.Path] = k
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
func (t *tree) sshKeys(files map[string]model.File, prov *model.Provenance) {
	if len(t.keys) == 0 {
		return
	}
	f, dirs := model.SSHKeyItems(t.keys, t.keysAt.Range, t.keysAt.Text)
	files[f.Path] = f
	prov.Files[f.Path] = model.Written{By: t.keysBy}
	for _, d := range dirs {
		t.dirs[d.Path] = d
		prov.Files[d.Path] = model.Written{By: t.keysBy}
	}
}

// sorted is the merged directories and links, each sorted by path.
func (t *tree) sorted() ([]model.Directory, []model.Link) {
	var dirs []model.Directory
	for _, p := range slices.Sorted(maps.Keys(t.dirs)) {
		dirs = append(dirs, t.dirs[p])
	}
	var links []model.Link
	for _, p := range slices.Sorted(maps.Keys(t.links)) {
		links = append(links, t.links[p])
	}
	return dirs, links
}
