package config

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"

	"github.com/mcpfleet/mcp/internal/hclpos"
	"github.com/mcpfleet/mcp/model"
)

// Diagnostics gives the language's diagnostics in the model's neutral form, which the core
// and the views speak: severity, summary, detail (with its "did you mean") and subject.
func Diagnostics(ds hcl.Diagnostics) model.Diagnostics {
	if ds == nil {
		return nil
	}
	out := make(model.Diagnostics, len(ds))
	for i, d := range ds {
		md := &model.Diagnostic{Severity: model.DiagError, Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagWarning {
			md.Severity = model.DiagWarning
		}
		if d.Subject != nil {
			r := hclpos.From(*d.Subject)
			md.Subject = &r
		}
		out[i] = md
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
func DiagnosticsJSON(diags model.Diagnostics) ([]byte, error) {
	out := jsonValidate{FormatVersion: "1.0", Diagnostics: []jsonDiag{}}
	for _, d := range diags {
		jd := jsonDiag{Severity: "error", Summary: d.Summary, Detail: d.Detail}
		if d.Severity == model.DiagWarning {
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
