package model

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
