package model

import "fmt"

// Severity is how bad a diagnostic is: an error stops what asked, a warning is shown.
type Severity uint8

const (
	DiagError Severity = iota + 1
	DiagWarning
)

// Diagnostic is a problem found in the configuration or in what it renders to: the
// neutral form the core (planner, engine) speaks, so that it depends on no language. The
// language converts its own diagnostics into it at its edge and the views print it.
// A "did you mean" suggestion is part of Detail, as the language writes it.
type Diagnostic struct {
	Severity Severity
	Summary  string
	Detail   string
	// Subject is where the problem is; nil when it has no place in a file.
	Subject *Range
	// In names the block Subject is in (`config "x"`), "" when none: the language says,
	// at its edge, so that no view needs its syntax tree.
	In string
}

// Error is "FILE:LINE,COL-ENDCOL: SUMMARY; DETAIL" (the span as HCL writes it, with the end
// line when it is another), for a diagnostic passed on as a Go error.
func (d *Diagnostic) Error() string {
	r := d.Subject
	switch {
	case r == nil:
		return fmt.Sprintf("%s; %s", d.Summary, d.Detail)
	case r.Start.Line == r.End.Line:
		return fmt.Sprintf("%s:%d,%d-%d: %s; %s", r.Filename, r.Start.Line, r.Start.Column, r.End.Column, d.Summary, d.Detail)
	}
	return fmt.Sprintf("%s:%d,%d-%d,%d: %s; %s", r.Filename, r.Start.Line, r.Start.Column, r.End.Line, r.End.Column, d.Summary, d.Detail)
}

// Diagnostics are a run's diagnostics in the order they were found.
type Diagnostics []*Diagnostic

// HasErrors reports whether any of ds is an error.
func (ds Diagnostics) HasErrors() bool {
	for _, d := range ds {
		if d.Severity == DiagError {
			return true
		}
	}
	return false
}

// Error is the first diagnostic's, with how many others there are.
func (ds Diagnostics) Error() string {
	switch len(ds) {
	case 0:
		return "no diagnostics"
	case 1:
		return ds[0].Error()
	}
	return fmt.Sprintf("%s, and %d other diagnostic(s)", ds[0].Error(), len(ds)-1)
}

// Subject gives r as a diagnostic's subject: nil for the zero Range (not from a file).
func Subject(r Range) *Range {
	if r.Filename == "" {
		return nil
	}
	return &r
}

// ReportEntry is one entry of a checker's report on a document it was handed (Ignition's
// parser on a rendered config's Ignition JSON): at a JSON path ("$.storage.files.3.path"),
// as an error or a warning. The core places it on the block that declared that part.
type ReportEntry struct {
	Severity Severity
	Path     string
	Message  string
}
