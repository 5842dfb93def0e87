package config

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
)

// WriteDiagnostics prints each diagnostic as Terraform's human view does, in a box, once:
// its severity and summary, its place as FILE:LINE,COL (with the block it is in) and the
// source lines it covers, then its detail:
//
//	╷
//	│ Error: Unknown pool
//	│
//	│   on main.hcl:3,12, in config "x":
//	│    3:   pools = ["nope"]
//	│
//	│ Config "x" names pool "nope", which no pool block declares. Did you mean "worker"?
//	╵
func WriteDiagnostics(w io.Writer, files map[string]*hcl.File, diags hcl.Diagnostics, color bool) error {
	paint := func(code, s string) string {
		if !color {
			return s
		}
		return "\x1b[" + code + "m" + s + "\x1b[0m"
	}
	var b strings.Builder
	for i, d := range diags {
		if i > 0 {
			b.WriteString("\n")
		}
		sev := paint("1;31", "Error:")
		if d.Severity == hcl.DiagWarning {
			sev = paint("1;33", "Warning:")
		}
		b.WriteString("╷\n")
		fmt.Fprintf(&b, "│ %s %s\n", sev, paint("1", d.Summary))
		if d.Subject != nil {
			b.WriteString("│\n")
			writePlace(&b, files[d.Subject.Filename], d.Subject)
		}
		if d.Detail != "" {
			b.WriteString("│\n")
			for _, l := range wrapText(d.Detail, 76) {
				b.WriteString(strings.TrimRight("│ "+l, " ") + "\n")
			}
		}
		b.WriteString("╵\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writePlace writes where a diagnostic is: "on FILE:LINE,COL, in BLOCK:" and up to three
// source lines it covers, numbered.
func writePlace(b *strings.Builder, f *hcl.File, r *hcl.Range) {
	in := ""
	if f != nil {
		if cs, ok := f.Nav.(interface{ ContextString(int) string }); ok {
			if c := cs.ContextString(r.Start.Byte); c != "" {
				in = ", in " + c
			}
		}
	}
	fmt.Fprintf(b, "│   on %s:%d,%d%s:\n", r.Filename, r.Start.Line, r.Start.Column, in)
	if f == nil {
		return
	}
	lines := strings.Split(string(f.Bytes), "\n")
	last := min(r.End.Line, r.Start.Line+2, len(lines))
	for n := r.Start.Line; n >= 1 && n <= last; n++ {
		fmt.Fprintf(b, "│   %4d: %s\n", n, strings.TrimRight(lines[n-1], " \t\r"))
	}
}

// wrapText wraps text at width columns, keeping its own line breaks.
func wrapText(text string, width int) []string {
	var out []string
	for _, para := range strings.Split(text, "\n") {
		line := ""
		for _, word := range strings.Fields(para) {
			if line != "" && len([]rune(line))+1+len([]rune(word)) > width {
				out = append(out, line)
				line = ""
			}
			if line != "" {
				line += " "
			}
			line += word
		}
		out = append(out, line)
	}
	return out
}

type jsonPos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

type jsonRange struct {
	Filename string  `json:"filename"`
	Start    jsonPos `json:"start"`
	End      jsonPos `json:"end"`
}

type jsonDiag struct {
	Severity string     `json:"severity"`
	Summary  string     `json:"summary"`
	Detail   string     `json:"detail,omitempty"`
	Range    *jsonRange `json:"range,omitempty"`
}

type jsonValidate struct {
	FormatVersion string     `json:"format_version"`
	Valid         bool       `json:"valid"`
	ErrorCount    int        `json:"error_count"`
	WarningCount  int        `json:"warning_count"`
	Diagnostics   []jsonDiag `json:"diagnostics"`
}

// DiagnosticsJSON renders diagnostics in the shape of `terraform validate -json`.
func DiagnosticsJSON(diags hcl.Diagnostics) ([]byte, error) {
	out := jsonValidate{FormatVersion: "1.0", Diagnostics: []jsonDiag{}}
	for _, d := range diags {
		jd := jsonDiag{Severity: "error", Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagWarning {
			jd.Severity = "warning"
			out.WarningCount++
		} else {
			out.ErrorCount++
		}
		if s := d.Subject; s != nil {
			jd.Range = &jsonRange{Filename: s.Filename,
				Start: jsonPos{s.Start.Line, s.Start.Column, s.Start.Byte},
				End:   jsonPos{s.End.Line, s.End.Column, s.End.Byte}}
		}
		out.Diagnostics = append(out.Diagnostics, jd)
	}
	out.Valid = out.ErrorCount == 0
	return json.MarshalIndent(out, "", "  ")
}

// Format returns src in HCL's canonical format.
func Format(src []byte) []byte { return hclwrite.Format(src) }

// FormatDir returns, for every *.hcl file in dir whose formatting would change, its path
// and formatted bytes.
func FormatDir(dir string) (map[string][]byte, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.hcl"))
	if err != nil {
		return nil, err
	}
	return FormatFiles(names)
}

// FormatFiles returns, for every file of names whose formatting would change, its path
// and formatted bytes.
func FormatFiles(names []string) (map[string][]byte, error) {
	names = slices.Clone(names)
	sort.Strings(names)
	out := map[string][]byte{}
	for _, n := range names {
		src, err := readBounded(n)
		if err != nil {
			return nil, err
		}
		// Formatting indents every level, so its output grows with the square of the depth.
		if d := checkNesting(src, n, false); d != nil {
			return nil, d
		}
		if f := Format(src); string(f) != string(src) {
			out[n] = f
		}
	}
	return out, nil
}
