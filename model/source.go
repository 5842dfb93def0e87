package model

import "fmt"

// Pos is a place in a source file. It has the fields of hcl.Pos so that the language
// package converts between them; the model itself does not depend on the language.
type Pos struct {
	Line, Column, Byte int
}

// Range is the span of source a block was declared in, for error messages that name
// file:line:col. The zero Range means "not from a file".
type Range struct {
	Filename   string
	Start, End Pos
}

// String is "FILE:LINE,COL", the form diagnostics print; "" for the zero Range.
func (r Range) String() string {
	if r.Filename == "" {
		return ""
	}
	return fmt.Sprintf("%s:%d,%d", r.Filename, r.Start.Line, r.Start.Column)
}

// Source is where a config declared one of its kernel arguments: the element of its
// kernel_args, or its butane attribute (Butane then names the argument's place in the
// Ignition config the Butane text translated to).
type Source struct {
	Range  Range
	Butane string
}

// Origin names the block that declared one file, unit or kernel argument of a rendered
// config: "config.50-chrony" (or "pool.worker" for a pool's kernel arguments) and the place
// in the configuration files. It is for people reading where a setting came from.
type Origin struct {
	Block  string `json:"block"`
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
	// Butane is the item's place in the Ignition config the block's Butane text translated
	// to ("storage.files.0"), when it came from Butane.
	Butane string `json:"butane,omitempty"`
}

// OriginAt is the origin of an item block declared at r.
func OriginAt(block string, r Range, butane string) Origin {
	return Origin{Block: block, File: r.Filename, Line: r.Start.Line, Column: r.Start.Column, Butane: butane}
}

// Place is "FILE:LINE,COL", with the Butane path when there is one.
func (o Origin) Place() string {
	s := o.File
	if o.Line > 0 {
		s = fmt.Sprintf("%s:%d,%d", o.File, o.Line, o.Column)
	}
	if o.Butane != "" {
		s += " (butane " + o.Butane + ")"
	}
	return s
}

func (o Origin) String() string { return o.Block + " at " + o.Place() }

// Written is the provenance of one file, unit or kernel argument: the block that wrote
// it, and the earlier blocks whose declaration of it that one replaced (in merge order).
type Written struct {
	By       Origin   `json:"by"`
	Overrode []Origin `json:"overrode,omitempty"`
}

// Provenance says who wrote each file (by path), unit (by name) and kernel argument of a
// rendered config. It is kept beside the rendered content, never in it: neither the
// Ignition config nor the name's hash depends on it, so a block moved to another line
// renders the same config. Display only: nothing decides anything on it.
type Provenance struct {
	Files      map[string]Written `json:"files,omitempty"`
	Units      map[string]Written `json:"units,omitempty"`
	KernelArgs map[string]Written `json:"kernel_args,omitempty"`
}
