package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

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
	mcs, problems := machineconfig.ParseWith([]byte(text), FirstBootOnly)
	for _, p := range problems {
		d := errAt(a.Range, "Invalid MachineConfig", fmt.Sprintf("%s: %s.", where, p))
		if p.Warning {
			d.Severity, d.Summary = hcl.DiagWarning, "MachineConfig warning"
		}
		diags = append(diags, d)
	}
	if mcs == nil {
		return diags
	}
	if len(mcs) > 1 {
		names := make([]string, len(mcs))
		for i, mc := range mcs {
			names[i] = mc.Name
		}
		return append(diags, errAt(a.Range, "More than one MachineConfig", fmt.Sprintf(
			"%s holds %d MachineConfigs (%s); a config block takes one, as the MCO merges each by its own name: "+
				"give each its own config block (mcp import machineconfig writes them)", where, len(mcs), strings.Join(names, ", "))))
	}
	mc := mcs[0]
	where = fmt.Sprintf("%s (MachineConfig %s)", where, mc.Name)
	if poolsAttr == nil {
		diags = append(diags, l.rolePool(a, where, &mc, c)...)
	}
	at := hclpos.From(a.Range)
	for i, k := range mc.KernelArgs {
		c.KernelArgs = append(c.KernelArgs, k)
		c.KernelArgSources = append(c.KernelArgSources, model.Source{Range: at,
			Butane: fmt.Sprintf("spec.kernelArguments, %s", mc.KernelArgAt[i])})
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
	for i := range mc.Ignition.Files {
		mc.Ignition.Files[i].Butane = "spec.config." + mc.Ignition.Files[i].Butane
	}
	for i := range mc.Ignition.Units {
		mc.Ignition.Units[i].Butane = "spec.config." + mc.Ignition.Units[i].Butane
	}
	return append(diags, l.addDeclared(a.Range, where, mc.Ignition, c)...)
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
	if call, ok := e.(*hclsyntax.FunctionCallExpr); ok && slices.Contains([]string{"file", "templatefile"}, call.Name) && len(call.Args) > 0 {
		if v, d := call.Args[0].Value(nil); !d.HasErrors() && v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
			return v.AsString()
		}
	}
	return "the MachineConfig YAML"
}
