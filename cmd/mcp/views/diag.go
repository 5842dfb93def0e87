package views

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcpfleet/mcp/internal/untrusted"
	"github.com/mcpfleet/mcp/model"
)

// Every error mcp prints goes through this file, as Terraform prints every diagnostic
// (a configuration's, a flag's, the lock's) in one box: its severity and summary, its
// place when it has one, then its detail:
//
//	╷
//	│ Error: Unknown pool
//	│
//	│   on main.hcl:3,12, in config "x":
//	│    3:   pools = ["nope"]
//	│
//	│ Config "x" names pool "nope", which no pool block declares. Did you mean "worker"?
//	╵

// detailWidth is where a diagnostic's detail is wrapped (the box's own "│ " makes 78).
const detailWidth = 76

// Diagnostics prints each diagnostic in its box, once, with its place as FILE:LINE,COL
// (with the block it is in, as the language named it) and the source lines it covers;
// sources are the configuration's files' bytes by name (nil: places without their lines).
func Diagnostics(w io.Writer, sources map[string][]byte, diags model.Diagnostics, color bool) error {
	c := painter(color)
	var b strings.Builder
	for i, d := range Shown(diags) { // a summary, a place or a detail may quote a path or a node's text
		if i > 0 {
			b.WriteString("\n")
		}
		sev := c.paint("1;31", "Error:")
		if d.Severity == model.DiagWarning {
			sev = c.paint("1;33", "Warning:")
		}
		b.WriteString("╷\n")
		fmt.Fprintf(&b, "│ %s %s\n", sev, c.bold(d.Summary))
		if d.Subject != nil {
			b.WriteString("│\n")
			writePlace(&b, sources[diags[i].Subject.Filename], d)
		}
		if d.Detail != "" {
			b.WriteString("│\n")
			for _, l := range wrapText(d.Detail, detailWidth) {
				b.WriteString(strings.TrimRight("│ "+l, " ") + "\n")
			}
		}
		b.WriteString("╵\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Error prints an error that has no place in the configuration (a flag, the lock, a saved
// plan, the fleet) in the same box: summary is its one line, detail what explains it
// ("" for none). The summary starts with a capital letter, as every diagnostic's.
func Error(w io.Writer, summary, detail string, color bool) error {
	return Diagnostics(w, nil, model.Diagnostics{{Severity: model.DiagError, Summary: Capitalize(summary), Detail: detail}}, color)
}

// Capitalize upper-cases the first letter of s ("acquiring the lock" → "Acquiring the
// lock"); a flag ("-target=…"), a quoted name, a digit and mcp's own name stay as they are.
func Capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if !unicode.IsLower(r) || strings.HasPrefix(s, "mcp ") {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// writePlace writes where a diagnostic is: "on FILE:LINE,COL, in BLOCK:" and up to three
// source lines it covers, numbered.
func writePlace(b *strings.Builder, src []byte, d *model.Diagnostic) {
	r, in := d.Subject, ""
	if d.In != "" {
		in = ", in " + d.In
	}
	fmt.Fprintf(b, "│   on %s:%d,%d%s:\n", r.Filename, r.Start.Line, r.Start.Column, in)
	if src == nil {
		return
	}
	lines := strings.Split(string(src), "\n")
	last := min(r.End.Line, r.Start.Line+2, len(lines))
	for n := r.Start.Line; n >= 1 && n <= last; n++ {
		fmt.Fprintf(b, "│   %4d: %s\n", n, untrusted.Lines(strings.TrimRight(lines[n-1], " \t\r")))
	}
}

// wrapText wraps text at width columns, keeping its own line breaks and each line's
// indentation (a command to run, indented under the sentence that gives it).
func wrapText(text string, width int) []string {
	var out []string
	for _, para := range strings.Split(text, "\n") {
		indent := para[:len(para)-len(strings.TrimLeft(para, " "))]
		line := indent
		for _, word := range strings.Fields(para) {
			if line != indent && len([]rune(line))+1+len([]rune(word)) > width {
				out = append(out, line)
				line = indent
			}
			if line != indent {
				line += " "
			}
			line += word
		}
		out = append(out, line)
	}
	return out
}
