package model

import (
	"encoding/json"
	"slices"
)

// Rendered is the merged configuration of one pool: what a node of the pool must look like.
// It is immutable once named; Name is derived from a hash of its canonical content, so equal
// inputs give equal names on every machine and run.
type Rendered struct {
	Name string `json:"name"` // rendered-<pool>-<hash>
	Pool string `json:"pool"`
	// IgnitionVersion is the spec of Ignition.
	IgnitionVersion string   `json:"ignition_version"`
	OSImage         string   `json:"os_image,omitempty"`
	KernelArgs      []string `json:"kernel_args,omitempty"`
	Files           []File   `json:"files,omitempty"` // sorted by path
	Units           []Unit   `json:"units,omitempty"` // sorted by name
	// Sources names the configs merged into this one, in merge order.
	Sources []string `json:"sources,omitempty"`
	// Ignition is the Ignition config (spec IgnitionVersion) that a first-booting node of the
	// pool fetches; it holds the same files and units, validated by Ignition's parser.
	Ignition json.RawMessage `json:"ignition"`
}

// File returns the file at path, or nil.
func (r *Rendered) File(path string) *File {
	for i := range r.Files {
		if r.Files[i].Path == path {
			return &r.Files[i]
		}
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
