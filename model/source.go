package model

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
