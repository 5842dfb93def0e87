package model

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Rendered is the merged configuration of one pool: what a node of the pool must look like.
// It is immutable once named; Name is derived from a hash of its canonical content, so equal
// inputs give equal names on every machine and run (package ignition/content names it).
type Rendered struct {
	Name string `json:"name"` // rendered-<pool>-<hash>
	Pool string `json:"pool"`
	// IgnitionVersion is the spec of Ignition.
	IgnitionVersion string   `json:"ignition_version"`
	OSImage         string   `json:"os_image,omitempty"`
	KernelArgs      []string `json:"kernel_args,omitempty"`
	Files           []File   `json:"files,omitempty"` // sorted by path
	Units           []Unit   `json:"units,omitempty"` // sorted by name
	// Directories and Links are sorted by path; a path is a file's, a directory's or a
	// link's, never two of them.
	Directories []Directory `json:"directories,omitempty"`
	Links       []Link      `json:"links,omitempty"`
	// FirstBoot is the part of the Ignition config that only a booting node gets (users,
	// disks, filesystems… of its configs, merged as Ignition merges configs): JSON of an
	// Ignition config without its version, merged into the served config. It is part of
	// the content, so it names the config, but no node step follows from it. nil: none.
	FirstBoot json.RawMessage `json:"first_boot,omitempty"`
	// Sources names the configs merged into this one, in merge order.
	Sources []string `json:"sources,omitempty"`
	// LegacyIgnition is the Ignition config as mcp stored it beside the files and units
	// before a rendered config carried each file's content once: it is read, so that such
	// states, saved plans and answers still read, and written by nothing. The Ignition
	// config a first-booting node of the pool fetches is derived from the content
	// (ignition/content.Ignition); one stored that is what the content gives is dropped when
	// it is read (content.Settle), and one that is not is what the config's name was made
	// from, so it is kept and served as it was.
	LegacyIgnition json.RawMessage `json:"ignition,omitempty"`
	// Provenance says which config block wrote each file, unit and kernel argument. It is
	// beside the content, not part of it: not stored, served or hashed with it (a saved
	// plan carries it apart, in Plan.Provenance). Render sets it; configs read back from
	// the state have none.
	Provenance *Provenance `json:"-"`
}

// MaxRenderedSize bounds a rendered config's JSON wherever it is read: stored in the
// state, fetched by an agent, served to mcp fleet add, in a node's records. The
// configuration files it is made of are at most 8 MiB each; a larger config is refused
// when it is stored, since it could not be read back.
const MaxRenderedSize = 64 << 20

// CheckPointers refuses pool pointers that name a rendered config rendered lacks. A store
// writes its rendered configs before the pointers to them, so such a pointer is damage (or
// a hand edit, "../../etc/passwd" say): the boot server refuses to serve it and the state
// readers to plan from it — one check for both.
func CheckPointers(pointers map[string]string, rendered map[string]*Rendered) error {
	pools := make([]string, 0, len(pointers))
	for pool := range pointers {
		pools = append(pools, pool)
	}
	slices.Sort(pools)
	for _, pool := range pools {
		if name := pointers[pool]; rendered[name] == nil {
			return fmt.Errorf("pool %s points at rendered config %s, which the store lacks", pool, name)
		}
	}
	return nil
}

// File returns the file at path, or nil.
func (r *Rendered) File(path string) *File {
	if e, ok := r.EntryOf(EntryFile, path).(*File); ok {
		return e
	}
	return nil
}

// Directory returns the directory at path, or nil.
func (r *Rendered) Directory(path string) *Directory {
	if e, ok := r.EntryOf(EntryDirectory, path).(*Directory); ok {
		return e
	}
	return nil
}

// Unit returns the unit named name, or nil.
func (r *Rendered) Unit(name string) *Unit {
	for i := range r.Units {
		if r.Units[i].Name == name {
			return &r.Units[i]
		}
	}
	return nil
}

// DiffArgs returns the kernel arguments new adds to old and those it removes, each in
// its list's order.
func DiffArgs(old, new []string) (added, removed []string) {
	for _, a := range new {
		if !slices.Contains(old, a) {
			added = append(added, a)
		}
	}
	for _, a := range old {
		if !slices.Contains(new, a) {
			removed = append(removed, a)
		}
	}
	return added, removed
}
