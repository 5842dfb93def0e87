package model

import "testing"

// A diagnostic passed on as a Go error reads as the language's did: its span, summary
// and detail; a list counts the others.
func TestDiagnosticError(t *testing.T) {
	one := &Diagnostic{Severity: DiagError, Summary: "Missing required argument", Detail: "Needs pools.",
		Subject: &Range{Filename: "main.hcl", Start: Pos{Line: 3, Column: 1}, End: Pos{Line: 3, Column: 11}}}
	two := &Diagnostic{Severity: DiagWarning, Summary: "Override", Detail: "d",
		Subject: &Range{Filename: "a.hcl", Start: Pos{Line: 1, Column: 2}, End: Pos{Line: 4, Column: 1}}}
	for _, c := range []struct {
		err  error
		want string
	}{
		{one, "main.hcl:3,1-11: Missing required argument; Needs pools."},
		{two, "a.hcl:1,2-4,1: Override; d"},
		{&Diagnostic{Summary: "No configuration files", Detail: "x has none."}, "No configuration files; x has none."},
		{Diagnostics{two, one}, "a.hcl:1,2-4,1: Override; d, and 1 other diagnostic(s)"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
	if (Diagnostics{two}).HasErrors() || !(Diagnostics{two, one}).HasErrors() {
		t.Error("HasErrors counts warnings, or misses an error")
	}
	if Subject(Range{}) != nil || Subject(*one.Subject) == one.Subject || *Subject(*one.Subject) != *one.Subject {
		t.Error("Subject: the zero range must give nil, another range a copy")
	}
}
