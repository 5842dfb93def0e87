package planner

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/mcpfleet/mcp/model"
)

// treeChanges are the files, directories and links of the kinds given that differ between
// old and new: kind by kind, each by path. A file marked sensitive hides its content on
// both sides: the old content of a file that is now sensitive is what it was made
// sensitive for.
func treeChanges(old, new *model.Rendered, kinds ...model.EntryKind) []ItemChange {
	var out []ItemChange
	for _, k := range kinds {
		for _, p := range entryPaths(k, old, new) {
			o, n := old.EntryOf(k, p), new.EntryOf(k, p)
			var attrs []model.AttrChange
			if o != nil && n != nil {
				if attrs = model.EntryChanges(o, n); len(attrs) == 0 && sensitive(o) == sensitive(n) {
					continue
				}
			}
			hide := sensitive(o) || sensitive(n)
			out = append(out, ItemChange{Kind: ItemKind(k), Name: p, Action: action(o != nil, n != nil),
				ContentChanged: k == model.EntryFile && (o == nil || n == nil || slices.ContainsFunc(attrs, isContent)),
				Before:         entryItem(o, hide), After: entryItem(n, hide)})
		}
	}
	return out
}

func isContent(c model.AttrChange) bool { return c.Attr == "content" }

// entryPaths are the sorted paths of old's and new's entries of kind k.
func entryPaths(k model.EntryKind, old, new *model.Rendered) []string {
	var paths []string
	for _, e := range slices.Concat(old.Entries(), new.Entries()) {
		if e.Kind() == k {
			paths = append(paths, e.Common().Path)
		}
	}
	slices.Sort(paths)
	return slices.Compact(paths)
}

// sensitive reports whether e is a file marked sensitive.
func sensitive(e model.TreeEntry) bool {
	f, ok := e.(*model.File)
	return ok && f.Sensitive
}

// entryItem is e as a plan shows it (nil: absent); hide hides a file's content though it
// is not sensitive.
func entryItem(e model.TreeEntry, hide bool) *Item {
	if e == nil {
		return nil
	}
	it := &Item{User: e.Common().User, Group: e.Common().Group}
	switch e := e.(type) {
	case *model.File:
		it.Mode, it.Sensitive, it.Content = e.Mode, e.Sensitive, ContentOf(e.Contents, e.Sensitive || hide)
	case *model.Directory:
		it.Mode = e.Mode
	case *model.Link:
		it.Target, it.Hard = e.Target, e.Hard
	}
	return it
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
