package planner

import (
	"bytes"
	"encoding/json"

	"github.com/mcpfleet/mcp/model"
)

// treeChanges are the directories and links that differ between old and new, by path.
func treeChanges(old, new *model.Rendered) []ItemChange {
	var out []ItemChange
	for _, p := range unionSorted(old.Directories, new.Directories, func(d model.Directory) string { return d.Path }) {
		o, n := dirItem(old.Directory(p)), dirItem(new.Directory(p))
		if o != nil && n != nil && o.Mode == n.Mode && o.User == n.User && o.Group == n.Group {
			continue
		}
		out = append(out, ItemChange{Kind: ItemDirectory, Name: p, Action: action(o != nil, n != nil), Before: o, After: n})
	}
	for _, p := range unionSorted(old.Links, new.Links, func(l model.Link) string { return l.Path }) {
		o, n := linkItem(old.Link(p)), linkItem(new.Link(p))
		if o != nil && n != nil && o.Target == n.Target && o.Hard == n.Hard && o.User == n.User && o.Group == n.Group {
			continue
		}
		out = append(out, ItemChange{Kind: ItemLink, Name: p, Action: action(o != nil, n != nil), Before: o, After: n})
	}
	return out
}

func dirItem(d *model.Directory) *Item {
	if d == nil {
		return nil
	}
	return &Item{Mode: d.Mode, User: d.User, Group: d.Group}
}

func linkItem(l *model.Link) *Item {
	if l == nil {
		return nil
	}
	return &Item{Target: l.Target, Hard: l.Hard, User: l.User, Group: l.Group}
}

// firstBootItem is a config's first-boot part as an item: its JSON, indented to be read
// and diffed.
func firstBootItem(fb []byte) *Item {
	if len(fb) == 0 {
		return nil
	}
	var b bytes.Buffer
	if err := json.Indent(&b, fb, "", "  "); err != nil {
		b.Reset()
		b.Write(fb)
	}
	b.WriteByte('\n')
	return &Item{Content: ContentOf(b.Bytes(), false)}
}
