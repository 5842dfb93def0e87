package planner

import (
	"fmt"
	"path"

	"github.com/mcpfleet/mcp/internal/untrusted"
	"github.com/mcpfleet/mcp/model"
)

// parentsDiags refuses an item of r whose path is under another item that is not a
// directory — a file, a hard link, a unit — since no node can hold both: the write of the
// item below fails on every node ("not a directory"), and Ignition's would at first boot.
// Paths under a symbolic link are Ignition's own refusal ("file path includes link in
// config"); a directory above an item is made where none is. The configs that declare the
// two may be different ones: they meet only in the merge.
func parentsDiags(r *model.Rendered, rel func(model.Origin) model.Origin) model.Diagnostics {
	c := &records{items: items(r), rel: rel}
	for _, u := range r.Units {
		c.items = append(c.items, item{kind: "unit", path: path.Join(unitDir, u.Name), at: u.DeclRange, text: u.Text})
	}
	leaves := map[string]item{}
	for _, it := range c.items {
		if it.kind != "directory" && (it.link == nil || it.link.Hard) {
			leaves[it.path] = it
		}
	}
	var diags model.Diagnostics
	for _, it := range c.items {
		for p := path.Dir(it.path); p != "/"; p = path.Dir(p) {
			if leaf, ok := leaves[p]; ok {
				diags = append(diags, &model.Diagnostic{Severity: model.DiagError, Summary: "Path under a file",
					Detail: untrusted.Line(fmt.Sprintf("%s %s%s is under %s, which %s %s (%s) makes a %s: no node can hold both, "+
						"as a path's parent must be a directory.", capitalizeFirst(it.kind), it.path, c.textPlace(it.text),
						p, leaf.kind, leaf.path, c.place(leaf.at, leaf.text), leafNoun(leaf))),
					Subject: model.Subject(it.at)})
				break
			}
		}
	}
	return diags
}

// unitDir is where units are written (nodeexec's UnitDir).
const unitDir = "/etc/systemd/system"

// leafNoun is what a non-directory item makes at its path.
func leafNoun(it item) string {
	if it.kind == "unit" {
		return "unit file"
	}
	return "file"
}
