package config

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpfleet/mcp/internal/hclpos"
	"github.com/mcpfleet/mcp/model"
)

// Schemas are the provider and state-backend blocks a build knows, as their parts declare
// them (providers.Spec, state.BackendSpec): the language reads a provider or state block
// against the spec its label or backend names, and knows none by name itself.
type Schemas struct {
	Providers []model.BlockSpec
	// Backends are the state backends; the first is the one a configuration without a
	// state block, or without a backend attribute, uses.
	Backends []model.BlockSpec
}

func find(specs []model.BlockSpec, name string) *model.BlockSpec {
	for i := range specs {
		if specs[i].Name == name {
			return &specs[i]
		}
	}
	return nil
}

// oneOf lists the specs' names for a message: "local" or "kubernetes".
func oneOf(specs []model.BlockSpec) string {
	q := make([]string, len(specs))
	for i, s := range specs {
		q[i] = fmt.Sprintf("%q", s.Name)
	}
	switch len(q) {
	case 0:
		return "none (this build has none)"
	case 1:
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

func (l *loader) provider(blocks hcl.Blocks) hcl.Diagnostics {
	specs := l.schemas.Providers
	if len(blocks) == 0 {
		detail := "The configuration needs a provider block."
		if len(specs) > 0 {
			detail = fmt.Sprintf("The configuration needs a provider block, for example: provider %q { %s }", specs[0].Name, specs[0].Example)
		}
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "No provider", Detail: detail}}
	}
	var diags hcl.Diagnostics
	for _, b := range blocks[1:] {
		diags = append(diags, duplicate("provider block", "", b.DefRange, blocks[0].DefRange))
	}
	b := blocks[0]
	p := model.ProviderConfig{Type: b.Labels[0], DeclRange: hclpos.From(b.DefRange)}
	spec := find(specs, p.Type)
	if spec == nil {
		return append(diags, errAt(b.LabelRanges[0], "Unknown provider",
			fmt.Sprintf("Provider %q is not one mcp knows: use %s.", p.Type, oneOf(specs))))
	}
	var d hcl.Diagnostics
	p.Settings, d = l.blockSettings(b.Body, *spec, nil)
	l.d.Provider = p
	return append(diags, d...)
}

func (l *loader) state(blocks hcl.Blocks) hcl.Diagnostics {
	specs := l.schemas.Backends
	if len(specs) == 0 {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "No state backend", Detail: "This build of mcp has no state backend."}}
	}
	if len(blocks) == 0 {
		l.d.State = model.StateConfig{Backend: specs[0].Name, Settings: l.defaults(specs[0], nil)}
		return nil
	}
	var diags hcl.Diagnostics
	for _, b := range blocks[1:] {
		diags = append(diags, duplicate("state block", "", b.DefRange, blocks[0].DefRange))
	}
	b := blocks[0]
	st := model.StateConfig{Backend: specs[0].Name, DeclRange: hclpos.From(b.DefRange)}
	selector := hcl.AttributeSchema{Name: "backend"}
	spec := &specs[0]
	// What is wrong with the body is reported once, when it is read against the spec.
	head, _, _ := b.Body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{selector}})
	if a := head.Attributes["backend"]; a != nil {
		v, d := l.str(a)
		diags = append(diags, d...)
		if d.HasErrors() {
			return diags
		}
		if spec = find(specs, v); spec == nil {
			return append(diags, errAt(a.Expr.Range(), "Unknown state backend",
				fmt.Sprintf("backend %q: use %s.", v, oneOf(specs))))
		}
		st.Backend = v
	}
	var d hcl.Diagnostics
	st.Settings, d = l.blockSettings(b.Body, *spec, []hcl.AttributeSchema{selector})
	l.d.State = st
	return append(diags, d...)
}

// blockSettings reads body against spec (and the attributes extra, read elsewhere):
// each setting's value of its kind, at its place, then the defaults of those not given.
func (l *loader) blockSettings(body hcl.Body, spec model.BlockSpec, extra []hcl.AttributeSchema) (model.Settings, hcl.Diagnostics) {
	schema := &hcl.BodySchema{Attributes: extra}
	for _, s := range spec.Settings {
		schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: s.Name, Required: s.Required})
	}
	content, diags := body.Content(schema)
	given := model.Settings{}
	for _, s := range spec.Settings {
		a := content.Attributes[s.Name]
		if a == nil {
			continue
		}
		v, d := l.settingValue(a, s.Kind)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		if s.Check != nil {
			if err := s.Check(v); err != nil {
				diags = append(diags, errAt(a.Expr.Range(), "Invalid "+s.Name, fmt.Sprintf("%s = %#v: %v.", s.Name, v, err)))
				continue
			}
		}
		given[s.Name] = v
	}
	return l.defaults(spec, given), diags
}

// defaults adds to given the defaults of spec's settings it lacks (a path resolved).
func (l *loader) defaults(spec model.BlockSpec, given model.Settings) model.Settings {
	if given == nil {
		given = model.Settings{}
	}
	for name, v := range spec.Defaults() {
		if _, ok := given[name]; ok {
			continue
		}
		if v.Kind == model.SettingPath {
			v.String = l.absPath(v.String)
		}
		given[name] = v
	}
	return given
}

// settingValue reads a as a value of kind.
func (l *loader) settingValue(a *hcl.Attribute, kind model.SettingKind) (model.SettingValue, hcl.Diagnostics) {
	v := model.SettingValue{Kind: kind, Range: hclpos.From(a.Expr.Range())}
	var diags hcl.Diagnostics
	switch kind {
	case model.SettingString:
		v.String, diags = l.str(a)
	case model.SettingPath:
		if v.String, diags = l.str(a); v.String != "" {
			v.String = l.absPath(v.String)
		}
	case model.SettingBool:
		v.Bool, diags = l.boolean(a)
	case model.SettingList:
		v.List, diags = l.strList(a)
	case model.SettingNumber:
		v.Number, diags = l.number(a)
	case model.SettingDuration:
		var s string
		if s, diags = l.str(a); diags.HasErrors() {
			break
		}
		var err error
		if v.Duration, err = time.ParseDuration(s); err != nil || v.Duration < 0 {
			diags = append(diags, errAt(a.Expr.Range(), "Invalid duration",
				fmt.Sprintf("%s = %q: want a Go duration such as \"30s\" or \"10m\".", a.Name, s)))
		}
	default:
		diags = hcl.Diagnostics{errAt(a.Expr.Range(), "Unsupported setting", fmt.Sprintf("%s has kind %s, which mcp cannot read.", a.Name, kind))}
	}
	return v, diags
}

// number reads a finite number.
func (l *loader) number(a *hcl.Attribute) (float64, hcl.Diagnostics) {
	v, diags := l.value(a, cty.Number, "a number")
	if v == cty.NilVal {
		return 0, diags
	}
	f, _ := v.AsBigFloat().Float64()
	if math.IsInf(f, 0) {
		return 0, append(diags, errAt(a.Expr.Range(), "Invalid "+a.Name, fmt.Sprintf("%s is too large a number.", a.Name)))
	}
	return f, diags
}
