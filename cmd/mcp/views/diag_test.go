package views

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/mcpfleet/mcp/model"
)

// A configuration's diagnostic: its place as FILE:LINE,COL with the block it is in and
// the source line, then its detail, in Terraform's box.
func TestDiagnosticsBox(t *testing.T) {
	src := "config \"x\" {\n  pools = [\"nope\"]\n}\n"
	f, diags := hclsyntax.ParseConfig([]byte(src), "main.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	r := model.Range{Filename: "main.hcl", Start: model.Pos{Line: 2, Column: 12, Byte: 24}, End: model.Pos{Line: 2, Column: 18, Byte: 30}}
	var out bytes.Buffer
	err := Diagnostics(&out, map[string]*hcl.File{"main.hcl": f}, model.Diagnostics{{Severity: model.DiagError,
		Summary: "Unknown pool", Detail: `Config "x" names pool "nope", which no pool block declares.`, Subject: &r}}, false)
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
