package views

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

// A configuration's diagnostic: its place as FILE:LINE,COL with the block it is in (as
// the language named it) and the source line, then its detail, in Terraform's box.
func TestDiagnosticsBox(t *testing.T) {
	src := "config \"x\" {\n  pools = [\"nope\"]\n}\n"
	r := model.Range{Filename: "main.hcl", Start: model.Pos{Line: 2, Column: 12, Byte: 24}, End: model.Pos{Line: 2, Column: 18, Byte: 30}}
	var out bytes.Buffer
	err := Diagnostics(&out, map[string][]byte{"main.hcl": []byte(src)}, model.Diagnostics{{Severity: model.DiagError,
		Summary: "Unknown pool", Detail: `Config "x" names pool "nope", which no pool block declares.`, Subject: &r, In: `config "x"`}}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := "╷\n│ Error: Unknown pool\n│\n│   on main.hcl:2,12, in config \"x\":\n" +
		"│      2:   pools = [\"nope\"]\n│\n│ Config \"x\" names pool \"nope\", which no pool block declares.\n╵\n"
	if d := cmp.Diff(want, out.String()); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// An error with no place (a flag, the lock, a saved plan) is the same box: a capitalised
// summary, the detail wrapped at 76 columns with its indented lines kept.
func TestErrorBox(t *testing.T) {
	var out bytes.Buffer
	Error(&out, "acquiring the state lock", "state.json is locked by ci-runner@build-7 (pid 4242, operation \"apply\") since 2026-11-27 15:00:00 UTC; if it is gone, run:\n  mcp force-unlock 0123456789abcdef", false)
	want := "╷\n│ Error: Acquiring the state lock\n│\n" +
		"│ state.json is locked by ci-runner@build-7 (pid 4242, operation \"apply\")\n" +
		"│ since 2026-11-27 15:00:00 UTC; if it is gone, run:\n" +
		"│   mcp force-unlock 0123456789abcdef\n╵\n"
	if d := cmp.Diff(want, out.String()); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	out.Reset()
	Error(&out, "-o foo: want one of wide, json", "", false)
	if want := "╷\n│ Error: -o foo: want one of wide, json\n╵\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}

// The JSON of terraform validate -json: counts, validity and each diagnostic's range.
func TestDiagnosticsJSON(t *testing.T) {
	r := model.Range{Filename: "main.hcl", Start: model.Pos{Line: 3, Column: 12, Byte: 40}, End: model.Pos{Line: 3, Column: 18, Byte: 46}}
	b, err := DiagnosticsJSON(model.Diagnostics{{Severity: model.DiagError, Summary: "Unknown pool", Subject: &r},
		{Severity: model.DiagWarning, Summary: "Deprecated"}})
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Valid        bool `json:"valid"`
		ErrorCount   int  `json:"error_count"`
		WarningCount int  `json:"warning_count"`
		Diagnostics  []struct {
			Severity string
			Range    *struct {
				Start struct{ Line, Column int }
			}
		}
	}
	if err := json.Unmarshal(b, &j); err != nil || j.Valid || j.ErrorCount != 1 || j.WarningCount != 1 || len(j.Diagnostics) != 2 ||
		j.Diagnostics[0].Range == nil || j.Diagnostics[0].Range.Start.Line != 3 || j.Diagnostics[0].Range.Start.Column != 12 ||
		j.Diagnostics[1].Severity != "warning" || j.Diagnostics[1].Range != nil {
		t.Errorf("validate JSON: %v %s", err, b)
	}
}
