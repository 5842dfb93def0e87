package steps

import (
	"strings"

	"github.com/mcpfleet/mcp/model"
)

// Files, directories and links are one tree (model.TreeEntry), diffed alike: a write step
// at an entry's path when it is added or changes, with its own on_change policies (a
// reboot without one). An entry no config declares any more is removed, with the policies
// it had (a directory only when empty: mcp never deletes what it holds), as the MCO
// deletes the files it wrote.

// diffTree adds the steps of the entries that differ between old and new, kind by kind.
func diffTree(b *stepSet, old, new *model.Rendered) {
	olds, news := old.Entries(), new.Entries()
	for _, k := range model.EntryKinds {
		for _, e := range news {
			if e.Kind() != k {
				continue
			}
			p := e.Common().Path
			if what := entryChange(old.EntryOf(k, p), e); what != "" {
				why := entryWord(e) + p + " " + what
				b.add(model.StepWrite, p, why)
				b.policies(e.Common().OnChange, why)
			}
		}
		for _, e := range olds {
			if p := e.Common().Path; e.Kind() == k && new.Entry(p) == nil {
				why := entryWord(e) + p + " removed (no longer in any config" + removedWhen[k] + ")"
				b.add(model.StepWrite, p, why)
				b.policies(e.Common().OnChange, why)
			}
		}
	}
}

// removedWhen says when a removed entry goes, beyond "at once".
var removedWhen = map[model.EntryKind]string{model.EntryDirectory: "; removed when empty"}

// entryWord names an entry's kind in a reason: a file goes by its path alone.
func entryWord(e model.TreeEntry) string {
	if e.Kind() == model.EntryFile {
		return ""
	}
	return string(e.Kind()) + " "
}

// entryChange says how new differs from old, an entry of its kind at its path (nil: none):
// "added", "changed (content, mode 0644 → 0600, owner)", or "" when it does not.
func entryChange(old, new model.TreeEntry) string {
	if old == nil {
		return "added"
	}
	changes := model.EntryChanges(old, new)
	if len(changes) == 0 {
		return ""
	}
	what := make([]string, len(changes))
	for i, c := range changes {
		what[i] = c.Attr
		if c.Attr == "mode" || c.Attr == "target" {
			what[i] += " " + c.Before + " → " + c.After
		}
	}
	return "changed (" + strings.Join(what, ", ") + ")"
}

// restoreEntry adds the write of a drifted file, directory or link target manages, with
// its policies; false when target manages none at p.
func restoreEntry(b *stepSet, target *model.Rendered, p, why string) bool {
	e := target.Entry(p)
	if e == nil {
		return false
	}
	b.add(model.StepWrite, p, why)
	b.policies(e.Common().OnChange, why)
	return true
}
