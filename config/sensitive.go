package config

import (
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/mcpfleet/mcp/model"
)

// secrets follows which variables hold secrets. A variable is sensitive when it is
// declared so (`sensitive = true`, as Terraform's) or when its value reaches a file marked
// sensitive; mcp shows neither its value (plan and show JSON `variables`) nor the content
// of a file it reaches. A file whose content uses a variable declared sensitive is
// sensitive itself, as a Terraform attribute made from a sensitive value is. Anywhere else
// a declared-sensitive variable would be shown in clear (a unit, a pool's setting, Butane,
// kernel arguments), so it is refused there.
type secrets struct {
	declared map[string]hcl.Range // variables declared sensitive, at their declarations
	reached  map[string]bool      // variables used in a sensitive file's content
	// inContent is set while a file's content is evaluated, where sensitive variables go.
	inContent bool
}

// sensitiveAttr reads a variable's sensitive attribute: a literal true or false.
func sensitiveAttr(a *hcl.Attribute) (bool, hcl.Diagnostics) {
	val, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return false, diags
	}
	b, err := convert.Convert(val, cty.Bool)
	if err != nil || b.IsNull() || !b.IsKnown() {
		return false, hcl.Diagnostics{errAt(a.Expr.Range(), "Invalid sensitive", "sensitive must be true or false.")}
	}
	return b.True(), nil
}

// varsIn lists the var.NAME references of e, with where each is made.
func varsIn(e hcl.Expression) map[string]hcl.Range {
	out := map[string]hcl.Range{}
	for _, t := range e.Variables() {
		if t.RootName() != "var" || len(t) < 2 {
			continue
		}
		if s, ok := t[1].(hcl.TraverseAttr); ok {
			if _, seen := out[s.Name]; !seen {
				out[s.Name] = t.SourceRange()
			}
		}
	}
	return out
}

// checkSensitiveUse refuses a declared-sensitive variable used outside a file's content.
func (l *loader) checkSensitiveUse(a *hcl.Attribute) hcl.Diagnostics {
	if l.secrets.inContent || len(l.secrets.declared) == 0 {
		return nil
	}
	var diags hcl.Diagnostics
	refs := varsIn(a.Expr)
	names := make([]string, 0, len(refs))
	for name := range refs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if decl, ok := l.secrets.declared[name]; ok {
			diags = append(diags, errAt(refs[name], "Sensitive variable used in clear",
				fmt.Sprintf("var.%s is sensitive (declared at %s): it may be used only in a file's content, which it makes sensitive; %s would show it in plans and status.", name, posOf(decl), a.Name)))
		}
	}
	return diags
}

// fileSecrets ties f's content to its variables: a declared-sensitive variable makes f
// sensitive, and every variable a sensitive file's content uses becomes sensitive.
func (l *loader) fileSecrets(f *model.File, content *hcl.Attribute) {
	if content == nil {
		return
	}
	refs := varsIn(content.Expr)
	for name := range refs {
		if _, ok := l.secrets.declared[name]; ok {
			f.Sensitive = true
		}
	}
	if !f.Sensitive {
		return
	}
	if l.secrets.reached == nil {
		l.secrets.reached = map[string]bool{}
	}
	for name := range refs {
		l.secrets.reached[name] = true
	}
}

// sensitiveVariables is every sensitive variable: declared so, or reaching a sensitive file.
func (l *loader) sensitiveVariables() map[string]bool {
	out := map[string]bool{}
	for name := range l.secrets.declared {
		out[name] = true
	}
	for name := range l.secrets.reached {
		out[name] = true
	}
	return out
}
