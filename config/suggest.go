package config

import (
	"maps"
	"regexp"
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpfleet/mcp/internal/suggest"
)

// didYouMean is " Did you mean "NAME"?" for the name of names nearest to name, as HCL
// suggests attribute names: "" when none is within an edit distance of 2.
func didYouMean(name string, names []string) string { return suggest.DidYouMean(name, names) }

// missingAttr finds the attribute name in HCL's "This object does not have an attribute
// named "x"." detail.
var missingAttr = regexp.MustCompile(`does not have an attribute named "([^"]+)"\.$`)

// suggestVariables adds to HCL's "Unsupported attribute" of a var.NAME that no variable
// block declares the declared name nearest to it.
func suggestVariables(diags hcl.Diagnostics, vars cty.Value) {
	if vars == cty.NilVal || !vars.Type().IsObjectType() {
		return
	}
	names := slices.Sorted(maps.Keys(vars.Type().AttributeTypes()))
	for _, d := range diags {
		m := missingAttr.FindStringSubmatch(d.Detail)
		if d.Summary != "Unsupported attribute" || m == nil || !rootedAt(d.Expression, "var") {
			continue
		}
		d.Detail += didYouMean(m[1], names)
	}
}

// rootedAt reports whether e refers to the variable root (var.…).
func rootedAt(e hcl.Expression, root string) bool {
	if e == nil {
		return false
	}
	for _, t := range e.Variables() {
		if t.RootName() == root {
			return true
		}
	}
	return false
}

// keysOf is m's keys, sorted.
func keysOf[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// poolNames are the declared pools' names.
func (l *loader) poolNames() []string {
	names := make([]string, len(l.d.Pools))
	for i, p := range l.d.Pools {
		names[i] = p.Name
	}
	return names
}
