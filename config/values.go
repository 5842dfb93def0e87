package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mcpfleet/mcp/internal/untrusted"
)

// variable is a declared variable and, once sources are read, its value.
type variable struct {
	name  string
	typ   cty.Type
	decl  hcl.Range
	value cty.Value
	// expr: values from the command line and the environment are HCL expressions (a
	// type other than string is declared, any included), not strings.
	expr bool
	// sensitive: declared sensitive = true (sensitive.go).
	sensitive bool
}

func decodeVariable(b *hcl.Block) (*variable, hcl.Diagnostics) {
	v := &variable{name: b.Labels[0], typ: cty.DynamicPseudoType, decl: b.LabelRanges[0]}
	content, diags := b.Body.Content(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "default"}, {Name: "description"}, {Name: "type"}, {Name: "sensitive"}}})
	if a := content.Attributes["sensitive"]; a != nil {
		s, d := sensitiveAttr(a)
		diags = append(diags, d...)
		v.sensitive = s
	}
	if a := content.Attributes["type"]; a != nil {
		t, d := typeexpr.TypeConstraint(a.Expr)
		diags = append(diags, d...)
		if !d.HasErrors() {
			v.typ, v.expr = t, t != cty.String
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
// string and untyped variables, an HCL expression — held to the configuration's nesting
// bound — for the others, `type = any` included, as Terraform does.
func (v *variable) parseRaw(raw, src string) (cty.Value, hcl.Diagnostics) {
	if !v.expr {
		return cty.StringVal(raw), nil
	}
	if d := checkNesting([]byte(raw), src, false); d != nil {
		return cty.DynamicVal, hcl.Diagnostics{d}
	}
	expr, diags := hclsyntax.ParseExpression([]byte(raw), src, hcl.Pos{Line: 1, Column: 1})
	if diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	val, diags := expr.Value(nil)
	return val, diags
}

// errAt is an error at r. A configuration's diagnostic is one paragraph: the detail is
// escaped whole (untrusted.Line), so what it quotes of the configuration — a path, a unit
// name, a Butane or MachineConfig message naming one — cannot start a line of the error
// box with a line break of its own.
func errAt(r hcl.Range, summary, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: untrusted.Line(detail), Subject: &r}
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

// eval evaluates an attribute and refuses what the readers below cannot take apart: cty's
// accessors panic on a null, unknown or marked value, anywhere inside a collection too.
// Each refusal points at the innermost expression the bad value came from.
func (l *loader) eval(a *hcl.Attribute) (cty.Value, hcl.Diagnostics) {
	if d := l.checkSensitiveUse(a); d.HasErrors() {
		return cty.NilVal, d
	}
	v, diags := a.Expr.Value(l.ctx)
	if diags.HasErrors() {
		if l.ctx != nil {
			suggestVariables(diags, l.ctx.Variables["var"])
		}
		return cty.NilVal, diags
	}
	if d := checkWhole(v, a); d != nil {
		return cty.NilVal, append(diags, d)
	}
	return v, diags
}

// value evaluates an attribute and converts it to t.
func (l *loader) value(a *hcl.Attribute, t cty.Type, what string) (cty.Value, hcl.Diagnostics) {
	v, diags := l.eval(a)
	if v == cty.NilVal {
		return v, diags
	}
	cv, err := convert.Convert(v, t)
	if err != nil {
		return cty.NilVal, append(diags, errAt(a.Expr.Range(), "Invalid "+a.Name, fmt.Sprintf("%s must be %s: %v.", a.Name, what, err)))
	}
	// Conversion can bring out a null that was not there: toset([null]) as a list.
	if d := checkWhole(cv, a); d != nil {
		return cty.NilVal, append(diags, d)
	}
	return cv, diags
}

// checkWhole finds the first null, unknown or marked value in v, nil when there is none.
func checkWhole(v cty.Value, a *hcl.Attribute) *hcl.Diagnostic {
	var bad *hcl.Diagnostic
	_ = cty.Walk(v, func(p cty.Path, e cty.Value) (bool, error) {
		var summary, is string
		switch {
		case e.IsMarked():
			summary, is = "Sensitive value", "is marked sensitive; mcp writes every value into plain Ignition configs"
		case !e.IsKnown():
			summary, is = "Unknown value", "depends on a value that is not known"
		case e.IsNull():
			summary, is = "Missing value", "is null"
		default:
			return true, nil
		}
		bad = errAt(exprAt(a.Expr, p), summary, fmt.Sprintf("%s%s %s.", a.Name, pathString(p), is))
		return false, nil
	})
	return bad
}

// exprAt is the range of the part of e that gave the value at path p, as far as e's
// syntax shows it: an element of a [ ] list or a { } map, else e itself.
func exprAt(e hcl.Expression, p cty.Path) hcl.Range {
	for _, step := range p {
		var key cty.Value
		switch s := step.(type) {
		case cty.IndexStep:
			key = s.Key
		case cty.GetAttrStep:
			key = cty.StringVal(s.Name)
		}
		next := subExpr(e, key)
		if next == nil {
			break
		}
		e = next
	}
	return e.Range()
}

func subExpr(e hcl.Expression, key cty.Value) hcl.Expression {
	if key.IsNull() || !key.IsKnown() {
		return nil
	}
	switch x := e.(type) {
	case *hclsyntax.TupleConsExpr:
		if key.Type() != cty.Number {
			return nil
		}
		i, acc := key.AsBigFloat().Int64()
		if acc != 0 || i < 0 || i >= int64(len(x.Exprs)) {
			return nil
		}
		return x.Exprs[i]
	case *hclsyntax.ObjectConsExpr:
		if key.Type() != cty.String {
			return nil
		}
		for _, item := range x.Items {
			// Keys that need evaluating (a variable, a call) are not matched.
			k, d := item.KeyExpr.Value(nil)
			if !d.HasErrors() && k.Type() == cty.String && k.IsKnown() && !k.IsNull() && !k.IsMarked() &&
				k.AsString() == key.AsString() {
				return item.ValueExpr
			}
		}
	}
	return nil
}

// pathString renders a path inside a value as HCL would index it: [0], ["a"].
func pathString(p cty.Path) string {
	var b strings.Builder
	for _, step := range p {
		switch s := step.(type) {
		case cty.IndexStep:
			if s.Key.Type() == cty.Number {
				fmt.Fprintf(&b, "[%s]", s.Key.AsBigFloat().Text('f', -1))
			} else if s.Key.Type() == cty.String {
				fmt.Fprintf(&b, "[%q]", s.Key.AsString())
			}
		case cty.GetAttrStep:
			fmt.Fprintf(&b, ".%s", s.Name)
		}
	}
	return b.String()
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

// kubeLabels reads a map of Kubernetes labels (a pool's node_selector, machine templates'
// match_labels): each key a qualified name and each value a label value, as the API
// server takes on an object — one it would refuse is on no node, so a selector holding it
// (a trailing blank, a typo'd prefix) would select none, silently.
func (l *loader) kubeLabels(a *hcl.Attribute) (map[string]string, hcl.Diagnostics) {
	m, diags := l.strMap(a)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		why := validation.IsQualifiedName(k)
		what := fmt.Sprintf("%s key %q", a.Name, k)
		if len(why) == 0 {
			why, what = validation.IsValidLabelValue(m[k]), fmt.Sprintf("%s value %q of %q", a.Name, m[k], k)
		}
		if len(why) > 0 {
			diags = append(diags, errAt(exprAt(a.Expr, cty.GetAttrPath(k)), "Invalid label",
				fmt.Sprintf("%s: %s. The API server takes no such label, so it would match nothing.", what, strings.Join(why, "; "))))
		}
	}
	return m, diags
}

// elementRange is the range of the i-th element of a list attribute, or the attribute's.
func elementRange(a *hcl.Attribute, i int) hcl.Range { return exprAt(a.Expr, cty.IndexIntPath(i)) }
