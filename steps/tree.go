package steps

import (
	"fmt"
	"strings"

	"github.com/mcpfleet/mcp/model"
)

// Directories and links are written as files are: a write step at their path, with their
// own on_change policies (a reboot without one, as files). A directory or link no config
// declares any more is removed (a directory only when empty: mcp never deletes what it
// holds), as the MCO deletes the files it wrote.

func diffDirectories(b *stepSet, old, new *model.Rendered) {
	for _, d := range new.Directories {
		what := dirChange(old.Directory(d.Path), &d)
		if what == "" {
			continue
		}
		why := "directory " + d.Path + " " + what
		b.add(model.StepWrite, d.Path, why)
		b.policies(d.OnChange, why)
	}
	for _, d := range old.Directories {
		if new.Directory(d.Path) == nil && new.File(d.Path) == nil && new.Link(d.Path) == nil {
			why := "directory " + d.Path + " removed (no longer in any config; removed when empty)"
			b.add(model.StepWrite, d.Path, why)
			b.policies(d.OnChange, why)
		}
	}
}

func dirChange(old, new *model.Directory) string {
	if old == nil {
		return "added"
	}
	var what []string
	if old.Mode != new.Mode {
		what = append(what, fmt.Sprintf("mode %04o → %04o", old.Mode, new.Mode))
	}
	if old.User != new.User || old.Group != new.Group {
		what = append(what, "owner")
	}
	if len(what) == 0 {
		return ""
	}
	return "changed (" + strings.Join(what, ", ") + ")"
}

func diffLinks(b *stepSet, old, new *model.Rendered) {
	for _, l := range new.Links {
		what := linkChange(old.Link(l.Path), &l)
		if what == "" {
			continue
		}
		why := "link " + l.Path + " " + what
		b.add(model.StepWrite, l.Path, why)
		b.policies(l.OnChange, why)
	}
	for _, l := range old.Links {
		if new.Link(l.Path) == nil && new.File(l.Path) == nil && new.Directory(l.Path) == nil {
			why := "link " + l.Path + " removed (no longer in any config)"
			b.add(model.StepWrite, l.Path, why)
			b.policies(l.OnChange, why)
		}
	}
}

func linkChange(old, new *model.Link) string {
	if old == nil {
		return "added"
	}
	var what []string
	if old.Target != new.Target || old.Hard != new.Hard {
		what = append(what, fmt.Sprintf("target %s → %s", linkWord(old), linkWord(new)))
	}
	if old.User != new.User || old.Group != new.Group {
		what = append(what, "owner")
	}
	if len(what) == 0 {
		return ""
	}
	return "changed (" + strings.Join(what, ", ") + ")"
}

func linkWord(l *model.Link) string {
	if l.Hard {
		return l.Target + " (hard)"
	}
	return l.Target
}

// restorePath adds the write of a drifted directory or link target manages, with its
// policies; false when target manages no directory or link at p.
func restorePath(b *stepSet, target *model.Rendered, p, why string) bool {
	if d := target.Directory(p); d != nil {
		b.add(model.StepWrite, p, why)
		b.policies(d.OnChange, why)
		return true
	}
	if l := target.Link(p); l != nil {
		b.add(model.StepWrite, p, why)
		b.policies(l.OnChange, why)
		return true
	}
	return false
}
