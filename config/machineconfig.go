package config

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpfleet/mcp/config/butane"
	"github.com/mcpfleet/mcp/config/machineconfig"
	"github.com/mcpfleet/mcp/internal/hclpos"
	"github.com/mcpfleet/mcp/model"
)

// machineConfig reads a config's machineconfig attribute — the YAML of one MachineConfig —
// and adds what it declares to c, after the config's own blocks: its Ignition config's
// files and units as a butane attribute's, its kernel arguments and OS image as the
// config's own. A config without pools takes the pool the role label names. Problems are
// diagnostics on the attribute whose text names the line and column in the YAML.
func (l *loader) machineConfig(a *hcl.Attribute, poolsAttr *hcl.Attribute, c *model.Config) hcl.Diagnostics {
	text, diags := l.str(a)
	if diags.HasErrors() {
		return diags
	}
	where := yamlSource(a.Expr)
	mcs, problems := machineconfig.ParseWith([]byte(text), MachineConfigChecks())
	diags = append(diags, mcProblems(a, where, "MachineConfig", problems)...)
	mc, d := one(a, where, mcs)
	if mc == nil {
		return append(diags, d...)
	}
	return append(diags, l.addMachineConfig(a, poolsAttr, where, mc, c, model.TextRef{Kind: model.TextMachineConfig, File: sourceFile(a.Expr)})...)
}

// openShiftButane reads a config's butane attribute a whose text is Butane's openshift
// variant — a MachineConfig written in Butane — as a machineconfig attribute is read:
// Butane's own library translates it to the MachineConfig, which is read with the MCO's
// semantics (metadata name and role label, kernel arguments, the refusals), its problems
// placed in the Butane text.
func (l *loader) openShiftButane(a, poolsAttr *hcl.Attribute, text []byte, dir string, c *model.Config) hcl.Diagnostics {
	where := butaneSource(a.Expr, model.TextButane)
	var yaml []byte
	var problems []butane.Problem
	if err := withButaneFiles(text, dir, func(staged string) { yaml, problems = butane.ToMachineConfig(text, staged) }); err != nil {
		problems = []butane.Problem{{Message: err.Error()}}
	}
	diags := textProblems(a, where, model.TextButane, problems)
	if yaml == nil {
		return diags
	}
	mcs, mproblems := machineconfig.FromButane(yaml, text, MachineConfigChecks())
	diags = append(diags, mcProblems(a, where, "Butane", mproblems)...)
	mc, d := one(a, where, mcs)
	if mc == nil {
		return append(diags, d...)
	}
	if mc.Ignition != nil {
		// Items are named by their place in the Ignition config the Butane translates to, as
		// other Butane's are.
		for _, t := range mc.Ignition.Texts() {
			t.Path = strings.TrimPrefix(t.Path, "spec.config.")
		}
	}
	return append(diags, l.addMachineConfig(a, poolsAttr, where, mc, c, model.TextRef{Kind: model.TextButane, File: sourceFile(a.Expr)})...)
}

// mcProblems are the MachineConfig reader's problems as diagnostics on a (kind
// "MachineConfig" or "Butane"), where naming the text.
func mcProblems(a *hcl.Attribute, where, kind string, problems []machineconfig.Problem) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, p := range problems {
		d := errAt(a.Range, "Invalid "+kind, fmt.Sprintf("%s: %s.", where, p))
		if p.Warning {
			d.Severity, d.Summary = hcl.DiagWarning, kind+" warning"
		}
		diags = append(diags, d)
	}
	return diags
}

// one is the MachineConfig of mcs, or nil and why not when there is none or more.
func one(a *hcl.Attribute, where string, mcs []machineconfig.MachineConfig) (*machineconfig.MachineConfig, hcl.Diagnostics) {
	switch len(mcs) {
	case 0:
		return nil, nil
	case 1:
		return &mcs[0], nil
	}
	names := make([]string, len(mcs))
	for i, mc := range mcs {
		names[i] = mc.Name
	}
	return nil, hcl.Diagnostics{errAt(a.Range, "More than one MachineConfig", fmt.Sprintf(
		"%s holds %d MachineConfigs (%s); a config block takes one, as the MCO merges each by its own name: "+
			"give each its own config block (mcp import machineconfig writes them)", where, len(mcs), strings.Join(names, ", ")))}
}

// addMachineConfig adds what mc declares to c: its kernel arguments and OS image as the
// config's own, its Ignition config's items as a butane attribute's (text: the kind and
// file of the text a holds). A config without pools (poolsAttr) takes the pool the role
// label names.
func (l *loader) addMachineConfig(a, poolsAttr *hcl.Attribute, where string, mc *machineconfig.MachineConfig, c *model.Config, text model.TextRef) hcl.Diagnostics {
	var diags hcl.Diagnostics
	where = fmt.Sprintf("%s (MachineConfig %s)", where, mc.Name)
	if poolsAttr == nil {
		diags = append(diags, l.rolePool(a, where, mc, c)...)
	}
	at := hclpos.From(a.Range)
	field := "spec.kernelArguments"
	if text.Kind == model.TextButane {
		field = "openshift.kernel_arguments"
	}
	for i, k := range mc.KernelArgs {
		c.KernelArgs = append(c.KernelArgs, k)
		c.KernelArgSources = append(c.KernelArgSources, model.Source{Range: at, Text: model.TextRef{Kind: text.Kind, Path: field,
			File: text.File, Line: mc.KernelArgAt[i].Line, Column: mc.KernelArgAt[i].Column}})
	}
	if mc.OSImage != "" {
		if c.OSImage != "" {
			diags = append(diags, errAt(a.Range, "Duplicate OS image", fmt.Sprintf(
				"%s sets spec.osImageURL, and the config's os_image is set too: give the OS image once", where)))
		}
		c.OSImage = mc.OSImage
	}
	if mc.Ignition == nil {
		return diags
	}
	return append(diags, l.addDeclared(a.Range, where, mc.Ignition, c, text)...)
}

// rolePool gives c the pool mc's role label names, as the MCO's pools select their
// MachineConfigs by that label.
func (l *loader) rolePool(a *hcl.Attribute, where string, mc *machineconfig.MachineConfig, c *model.Config) hcl.Diagnostics {
	switch {
	case mc.Role == "":
		return hcl.Diagnostics{errAt(a.Range, "No pool for the MachineConfig", fmt.Sprintf(
			"%s has no %s label and the config names no pools: give pools = [\"…\"]", where, machineconfig.RoleLabel))}
	case l.d.Pool(mc.Role) == nil:
		return hcl.Diagnostics{errAt(a.Range, "Unknown pool", fmt.Sprintf(
			"%s is labelled %s: %s, and no pool block declares pool %q: declare it, or give the config pools = [\"…\"].%s",
			where, machineconfig.RoleLabel, mc.Role, mc.Role, didYouMean(mc.Role, l.poolNames())))}
	}
	c.Pools = []string{mc.Role}
	return nil
}

// yamlSource says where the YAML came from for messages: the file a file("x.yaml") call
// reads, else "the MachineConfig YAML".
func yamlSource(e hcl.Expression) string {
	if f := sourceFile(e); f != "" {
		return f
	}
	return "the MachineConfig YAML"
}
