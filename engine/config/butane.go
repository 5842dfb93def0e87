package config

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpfleet/mcp/engine/config/butane"
	"github.com/mcpfleet/mcp/internal/hclpos"
	"github.com/mcpfleet/mcp/model"
)

// butane translates a config's butane attribute and adds what it declares to c, after the
// config's own blocks. Butane's errors and warnings are diagnostics on the attribute; their
// text names Butane's line and column inside the Butane text.
func (l *loader) butane(a *hcl.Attribute, c *model.Config) hcl.Diagnostics {
	text, diags := l.str(a)
	if diags.HasErrors() {
		return diags
	}
	where := butaneSource(a.Expr)
	res, problems := butane.Translate([]byte(text))
	for _, p := range problems {
		d := errAt(a.Range, "Invalid Butane", fmt.Sprintf("%s: %s.", where, p.Message))
		if p.Warning {
			d.Severity, d.Summary = hcl.DiagWarning, "Butane warning"
		}
		diags = append(diags, d)
	}
	if res == nil {
		return diags
	}
	at := hclpos.From(a.Range)
	bad := func(summary, format string, args ...any) {
		diags = append(diags, errAt(a.Range, summary, where+": "+fmt.Sprintf(format, args...)+"."))
	}
	for _, f := range res.Files {
		if d := checkPath(f.Path, a.Range); d != nil {
			bad(d.Summary, "%s (%s): %s", f.Path, f.Butane, strings.TrimSuffix(d.Detail, "."))
			continue
		}
		if d := checkAgentPath(f.Path, a.Range); d != nil {
			bad(d.Summary, "%s (%s): %s", f.Path, f.Butane, strings.TrimSuffix(d.Detail, "."))
			continue
		}
		if i := indexOf(c.Files, func(g model.File) bool { return g.Path == f.Path }); i >= 0 {
			bad("Duplicate file", "file %s (%s) is also declared by the file block at %s; declare it once in a config", f.Path, f.Butane, c.Files[i].DeclRange)
			continue
		}
		f.DeclRange = at
		c.Files = append(c.Files, f)
	}
	for _, u := range res.Units {
		if msg := unitNameProblem(u.Name); msg != "" {
			bad("Invalid unit name", "unit %s (%s): %s", u.Name, u.Butane, msg)
			continue
		}
		if i := indexOf(c.Units, func(v model.Unit) bool { return v.Name == u.Name }); i >= 0 {
			bad("Duplicate unit", "unit %s (%s) is also declared by the unit block at %s; declare it once in a config", u.Name, u.Butane, c.Units[i].DeclRange)
			continue
		}
		u.DeclRange = at
		c.Units = append(c.Units, u)
	}
	for i, k := range res.KernelArgs {
		c.KernelArgs = append(c.KernelArgs, k)
		c.KernelArgSources = append(c.KernelArgSources, model.Source{Range: at, Butane: res.KernelArgPaths[i]})
	}
	return diags
}

// butaneSource says where the Butane text came from for messages: the file a
// file("worker.bu") or templatefile("worker.bu", …) call reads, else "the Butane text".
func butaneSource(e hcl.Expression) string {
	if call, ok := e.(*hclsyntax.FunctionCallExpr); ok && (call.Name == "file" || call.Name == "templatefile") && len(call.Args) > 0 {
		if v, d := call.Args[0].Value(nil); !d.HasErrors() && v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
			return "Butane " + v.AsString()
		}
	}
	return "the Butane text"
}

func indexOf[T any](s []T, f func(T) bool) int {
	for i, v := range s {
		if f(v) {
			return i
		}
	}
	return -1
}
