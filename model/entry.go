package model

import (
	"bytes"
	"fmt"
)

// A node's tree as mcp manages it is files, directories and links: one schema for the
// three, as Ignition's types.Node is (path, owner — and here the on_change policies and
// where it was declared), with what only one kind has beside it (File, Directory, Link).
// A path is one entry of a config, never two. Code that handles entries alike — merge,
// diff, the steps, the node executor's write and verify, drift — goes through TreeEntry
// and Rendered.Entries, and only what differs by kind is switched on it.

// Entry is what a file, a directory and a link have alike.
type Entry struct {
	Path     string   `json:"path"`
	User     string   `json:"user,omitempty"`
	Group    string   `json:"group,omitempty"`
	OnChange []Policy `json:"on_change,omitempty"` // empty: a change needs a reboot
	// DeclRange is where the entry was declared: its block's label, or the attribute of
	// the text (Butane, Ignition, MachineConfig) that holds it.
	DeclRange Range `json:"-"`
	// Text is the entry's place in the text its config embeds; zero for a block.
	Text TextRef `json:"-"`
}

// Common is the part e's kind shares with the others.
func (e *Entry) Common() *Entry { return e }

// EntryKind is a tree entry's kind; its value is the word the configuration language and
// the plan use for it.
type EntryKind string

const (
	EntryFile      EntryKind = "file"
	EntryDirectory EntryKind = "directory"
	EntryLink      EntryKind = "link"
)

// Section is the key of Ignition's storage section that holds entries of kind k
// ("files", "directories", "links").
func (k EntryKind) Section() string {
	if k == EntryDirectory {
		return "directories"
	}
	return string(k) + "s"
}

// EntryKinds are the kinds in the order a rendered config lists them (Rendered.Entries).
var EntryKinds = []EntryKind{EntryFile, EntryDirectory, EntryLink}

// TreeEntry is a *File, a *Directory or a *Link.
type TreeEntry interface {
	Common() *Entry
	Kind() EntryKind
}

func (*File) Kind() EntryKind      { return EntryFile }
func (*Directory) Kind() EntryKind { return EntryDirectory }
func (*Link) Kind() EntryKind      { return EntryLink }

// Entries is files, directories and links as one list, in that order, each entry pointing
// into its slice.
func Entries(files []File, dirs []Directory, links []Link) []TreeEntry {
	out := make([]TreeEntry, 0, len(files)+len(dirs)+len(links))
	for i := range files {
		out = append(out, &files[i])
	}
	for i := range dirs {
		out = append(out, &dirs[i])
	}
	for i := range links {
		out = append(out, &links[i])
	}
	return out
}

// SplitEntries is the files, directories and links of es, each in es's order.
func SplitEntries(es []TreeEntry) (files []File, dirs []Directory, links []Link) {
	for _, e := range es {
		switch e := e.(type) {
		case *File:
			files = append(files, *e)
		case *Directory:
			dirs = append(dirs, *e)
		case *Link:
			links = append(links, *e)
		}
	}
	return files, dirs, links
}

// Entries is r's files, directories and links, in that order (each sorted by path).
func (r *Rendered) Entries() []TreeEntry { return Entries(r.Files, r.Directories, r.Links) }

// SetEntries makes es r's files, directories and links.
func (r *Rendered) SetEntries(es []TreeEntry) { r.Files, r.Directories, r.Links = SplitEntries(es) }

// Entries is c's files, directories and links, in that order.
func (c *Config) Entries() []TreeEntry { return Entries(c.Files, c.Directories, c.Links) }

// SetEntries makes es c's files, directories and links.
func (c *Config) SetEntries(es []TreeEntry) { c.Files, c.Directories, c.Links = SplitEntries(es) }

// Entry returns the file, directory or link at path, or nil.
func (r *Rendered) Entry(path string) TreeEntry {
	return r.find(func(e TreeEntry) bool { return e.Common().Path == path })
}

// EntryOf returns the entry of kind k at path, or nil.
func (r *Rendered) EntryOf(k EntryKind, path string) TreeEntry {
	return r.find(func(e TreeEntry) bool { return e.Kind() == k && e.Common().Path == path })
}

// find returns r's first entry that is, or nil.
func (r *Rendered) find(is func(TreeEntry) bool) TreeEntry {
	for _, e := range r.Entries() {
		if is(e) {
			return e
		}
	}
	return nil
}

// AttrChange is an attribute of an entry that a node holds otherwise when one version of
// the entry replaces another.
type AttrChange struct {
	Attr string // "content", "mode", "target" or "owner"
	// Before and After are the attribute's values as people read them ("0644",
	// "/etc/a (hard)", "core:wheel"); empty for content.
	Before, After string
}

// EntryChanges lists what a node holds otherwise at an entry's path when new replaces old,
// an entry of its kind, in the order plans name them: content, mode, target, owner. None:
// the node holds both alike (on_change and a file's sensitive mark are not on the node).
func EntryChanges(old, new TreeEntry) []AttrChange {
	var out []AttrChange
	mode := func(o, n int) {
		if o != n {
			out = append(out, AttrChange{"mode", fmt.Sprintf("%04o", o), fmt.Sprintf("%04o", n)})
		}
	}
	switch n := new.(type) {
	case *File:
		o := old.(*File)
		if !bytes.Equal(o.Contents, n.Contents) {
			out = append(out, AttrChange{Attr: "content"})
		}
		mode(o.Mode, n.Mode)
	case *Directory:
		mode(old.(*Directory).Mode, n.Mode)
	case *Link:
		if o := old.(*Link); o.Target != n.Target || o.Hard != n.Hard {
			out = append(out, AttrChange{"target", o.TargetWord(), n.TargetWord()})
		}
	}
	if o, n := old.Common(), new.Common(); o.User != n.User || o.Group != n.Group {
		out = append(out, AttrChange{"owner", o.User + ":" + o.Group, n.User + ":" + n.Group})
	}
	return out
}

// TargetWord is l's target as people read it: "(hard)" after a hard link's.
func (l *Link) TargetWord() string {
	if l.Hard {
		return l.Target + " (hard)"
	}
	return l.Target
}
