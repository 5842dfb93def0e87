package config

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// variable is a declared variable and, once sources are read, its value.
type variable struct {
	name  string
	typ   cty.Type
	decl  hcl.Range
	value cty.Value
}

func decodeVariable(b *hcl.Block) (*variable, hcl.Diagnostics) {
	v := &variable{name: b.Labels[0], typ: cty.DynamicPseudoType, decl: b.LabelRanges[0]}
	content, diags := b.Body.Content(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "default"}, {Name: "description"}, {Name: "type"}}})
	if a := content.Attributes["type"]; a != nil {
		t, d := typeexpr.TypeConstraint(a.Expr)
		diags = append(diags, d...)
		if !d.HasErrors() {
			v.typ = t
		}
	}
	if a := content.Attributes["default"]; a != nil {
		val, d := a.Expr.Value(nil)
		diags = append(diags, d...)
		if !d.HasErrors() {
			cv, err := convert.Convert(val, v.typ)
			if err != nil {
				diags = append(diags, errAt(a.Expr.Range(), "Invalid default value",
					fmt.Sprintf("variable %q: %v.", v.name, err)))
			} else {
				v.value = cv
			}
		}
	}
	return v, diags
}

// parseRaw reads a value given on the command line or in the environment: a string for
// string (and untyped) variables, an HCL expression for the others — as Terraform does.
func (v *variable) parseRaw(raw, src string) (cty.Value, hcl.Diagnostics) {
	if v.typ == cty.String || v.typ == cty.DynamicPseudoType {
		return cty.StringVal(raw), nil
	}
	expr, diags := hclsyntax.ParseExpression([]byte(raw), src, hcl.Pos{Line: 1, Column: 1})
	if diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	val, diags := expr.Value(nil)
	return val, diags
}

func errAt(r hcl.Range, summary, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: &r}
}

func duplicate(kind, name string, at, prev hcl.Range) *hcl.Diagnostic {
	what := kind
	if name != "" {
		what = fmt.Sprintf("%s %q", kind, name)
	}
	return errAt(at, "Duplicate "+kind, fmt.Sprintf("%s is already declared at %s.", capitalize(what), posOf(prev)))
}

func posOf(r hcl.Range) string {
	return fmt.Sprintf("%s:%d,%d", r.Filename, r.Start.Line, r.Start.Column)
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// value evaluates an attribute and converts it to t.
func (l *loader) value(a *hcl.Attribute, t cty.Type, what string) (cty.Value, hcl.Diagnostics) {
	v, diags := a.Expr.Value(l.ctx)
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	if !v.IsWhollyKnown() {
		return cty.NilVal, append(diags, errAt(a.Expr.Range(), "Unknown value", a.Name+" depends on a value that is not known."))
	}
	if v.IsNull() {
		return cty.NilVal, append(diags, errAt(a.Expr.Range(), "Missing value", a.Name+" is null."))
	}
	cv, err := convert.Convert(v, t)
	if err != nil {
		return cty.NilVal, append(diags, errAt(a.Expr.Range(), "Invalid "+a.Name, fmt.Sprintf("%s must be %s: %v.", a.Name, what, err)))
	}
	return cv, diags
}

func (l *loader) str(a *hcl.Attribute) (string, hcl.Diagnostics) {
	v, diags := l.value(a, cty.String, "a string")
	if v == cty.NilVal {
		return "", diags
	}
	return v.AsString(), diags
}

func (l *loader) boolean(a *hcl.Attribute) (bool, hcl.Diagnostics) {
	v, diags := l.value(a, cty.Bool, "true or false")
	if v == cty.NilVal {
		return false, diags
	}
	return v.True(), diags
}

func (l *loader) strList(a *hcl.Attribute) ([]string, hcl.Diagnostics) {
	v, diags := l.value(a, cty.List(cty.String), "a list of strings")
	if v == cty.NilVal {
		return nil, diags
	}
	var out []string
	for _, e := range v.AsValueSlice() {
		out = append(out, e.AsString())
	}
	return out, diags
}

func (l *loader) strMap(a *hcl.Attribute) (map[string]string, hcl.Diagnostics) {
	v, diags := l.value(a, cty.Map(cty.String), "a map of strings")
	if v == cty.NilVal {
		return nil, diags
	}
	out := map[string]string{}
	for k, e := range v.AsValueMap() {
		out[k] = e.AsString()
	}
	return out, diags
}

// elementRange is the range of the i-th element of a list attribute, or the attribute's.
func elementRange(a *hcl.Attribute, i int) hcl.Range {
	if t, ok := a.Expr.(*hclsyntax.TupleConsExpr); ok && i < len(t.Exprs) {
		return t.Exprs[i].Range()
	}
	return a.Expr.Range()
}
