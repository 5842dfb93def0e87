package views

import (
	"encoding/json"

	"github.com/mcpfleet/mcp/model"
)

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
