package config

import (
	"path/filepath"
	"slices"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"

	"github.com/mcpfleet/mcp/internal/hclpos"
	"github.com/mcpfleet/mcp/internal/untrusted"
	"github.com/mcpfleet/mcp/model"
)

// Diagnostics gives the language's diagnostics in the model's neutral form, which the core
// and the views speak: severity, summary, detail (with its "did you mean"), subject and the
// block the subject is in, read from files (the configuration's, by name; nil for none).
func Diagnostics(ds hcl.Diagnostics, files map[string]*hcl.File) model.Diagnostics {
	if ds == nil {
		return nil
	}
	out := make(model.Diagnostics, len(ds))
	for i, d := range ds {
		md := &model.Diagnostic{Severity: model.DiagError, Summary: d.Summary, Detail: d.Detail}
		if _, call := hcl.DiagnosticExtra[hclsyntax.FunctionCallDiagExtra](d); call {
			// A function's error quotes its arguments as they are (a path, a pattern): escaped
			// whole, as errAt escapes mcp's own, so that they cannot start a line of the box.
			md.Detail = untrusted.Line(d.Detail)
		}
		if d.Severity == hcl.DiagWarning {
			md.Severity = model.DiagWarning
		}
		if d.Subject != nil {
			r := hclpos.From(*d.Subject)
			md.Subject, md.In = &r, blockAt(files, r)
		}
		out[i] = md
	}
	return out
}

// Locate gives each of diags with a place in the configuration, and no block named yet,
// the block its place is in (the engine's and the planner's diagnostics point into the
// configuration too); diags themselves are not changed.
func (r *Result) Locate(diags model.Diagnostics) model.Diagnostics {
	out := make(model.Diagnostics, len(diags))
	for i, d := range diags {
		if d.Subject != nil && d.In == "" {
			if in := blockAt(r.files, *d.Subject); in != "" {
				c := *d
				c.In, d = in, &c
			}
		}
		out[i] = d
	}
	return out
}

// blockAt names the block r starts in (`config "x"`), "" when none or its file is not known.
func blockAt(files map[string]*hcl.File, r model.Range) string {
	f := files[r.Filename]
	if f == nil {
		return ""
	}
	if cs, ok := f.Nav.(interface{ ContextString(int) string }); ok {
		return cs.ContextString(r.Start.Byte)
	}
	return ""
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
