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
// kernel_args, or the attribute holding the text it came from (Text then names its place
// in that text).
type Source struct {
	Range Range
	Text  TextRef
}

// TextKind is the kind of text a config embeds: its butane, ignition or machineconfig
// attribute.
type TextKind string

const (
	TextButane        TextKind = "butane"
	TextIgnition      TextKind = "ignition"
	TextMachineConfig TextKind = "machineconfig"
)

// TextRef is where an item came from inside a text its config embeds, for people reading
// where it came from; the zero TextRef is a block of the config's own.
type TextRef struct {
	Kind TextKind
	// Path is its place in the Ignition config the text is or translates to
	// ("storage.files.0"; in a MachineConfig "spec.config.storage.files.0"), or the field
	// that gave it ("spec.kernelArguments", "openshift.kernel_arguments.0").
	Path string
	// File, Line and Column are its place in the text: the file a file("x.yaml") call read
	// ("" when the text is inline) and the line and column there; zero when unknown.
	File         string
	Line, Column int
}

// Origin names the block that declared one file, unit or kernel argument of a rendered
// config: "config.50-chrony" (or "pool.worker" for a pool's kernel arguments) and the place
// in the configuration files. It is for people reading where a setting came from.
type Origin struct {
	Block  string `json:"block"`
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
	// Butane, Ignition and MachineConfig are the item's place in the text the block's
	// butane, ignition or machineconfig attribute holds (TextRef.Path), when it came from
	// one; TextFile, TextLine and TextColumn its place in that text, when known.
	Butane        string `json:"butane,omitempty"`
	Ignition      string `json:"ignition,omitempty"`
	MachineConfig string `json:"machineconfig,omitempty"`
	TextFile      string `json:"text_file,omitempty"`
	TextLine      int    `json:"text_line,omitempty"`
	TextColumn    int    `json:"text_column,omitempty"`
}

// OriginAt is the origin of an item a block declared at r, from the text t names (the
// zero TextRef: the block's own).
func OriginAt(block string, r Range, t TextRef) Origin {
	o := Origin{Block: block, File: r.Filename, Line: r.Start.Line, Column: r.Start.Column,
		TextFile: t.File, TextLine: t.Line, TextColumn: t.Column}
	switch t.Kind {
	case TextButane:
		o.Butane = t.Path
	case TextIgnition:
		o.Ignition = t.Path
	case TextMachineConfig:
		o.MachineConfig = t.Path
	}
	return o
}

// Place is "FILE:LINE,COL", with the item's place in its text when it came from one
// ("main.hcl:5,3 (MachineConfig 99-worker.yaml:14,9 spec.config.storage.files.0)").
func (o Origin) Place() string {
	s := o.File
	if o.Line > 0 {
		s = fmt.Sprintf("%s:%d,%d", o.File, o.Line, o.Column)
	}
	kind, path := "butane", o.Butane
	switch {
	case o.Ignition != "":
		kind, path = "ignition", o.Ignition
	case o.MachineConfig != "":
		kind, path = "MachineConfig", o.MachineConfig
	case path == "":
		return s
	}
	switch {
	case o.TextLine > 0 && o.TextFile != "":
		return fmt.Sprintf("%s (%s %s:%d,%d %s)", s, kind, o.TextFile, o.TextLine, o.TextColumn, path)
	case o.TextLine > 0:
		return fmt.Sprintf("%s (%s %s, line %d, column %d)", s, kind, path, o.TextLine, o.TextColumn)
	}
	return fmt.Sprintf("%s (%s %s)", s, kind, path)
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
