package config

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mcpfleet/mcp/internal/hclpos"
	"github.com/mcpfleet/mcp/model"
)

// paused reads a pool's paused: true (hold every change), false, or "disruptive" (hold
// only the nodes whose steps drain or reboot them).
func (l *loader) paused(a *hcl.Attribute) (model.Pause, hcl.Diagnostics) {
	v, diags := l.eval(a)
	if v == cty.NilVal {
		return model.PauseOff, diags
	}
	switch {
	case v.Type() == cty.Bool && v.True():
		return model.PauseAll, diags
	case v.Type() == cty.Bool:
		return model.PauseOff, diags
	case v.Type() == cty.String && v.AsString() == string(model.PauseDisruptive):
		return model.PauseDisruptive, diags
	}
	got := v.Type().FriendlyName()
	if v.Type() == cty.String {
		got = fmt.Sprintf("%q", v.AsString())
	}
	return model.PauseOff, append(diags, errAt(a.Expr.Range(), "Invalid paused",
		fmt.Sprintf("paused = %s: use true (hold every change of the pool), false, or \"disruptive\" "+
			"(hold only the nodes whose changes drain or reboot them; let through on_change none, reload, restart and daemon-reload).", got)))
}

// order reads a pool's order: "oldest" (the default: zone, then oldest), "newest" (zone,
// then newest), or a list of node names that go first, the rest after them as "oldest".
func (l *loader) order(a *hcl.Attribute) (model.Order, hcl.Diagnostics) {
	def := model.Order{By: model.OrderOldest}
	v, diags := l.eval(a)
	if v == cty.NilVal {
		return def, diags
	}
	if v.Type() == cty.String {
		switch by := model.OrderBy(v.AsString()); by {
		case model.OrderOldest, model.OrderNewest:
			return model.Order{By: by}, diags
		}
		return def, append(diags, errAt(a.Expr.Range(), "Invalid order",
			fmt.Sprintf("order = %q: use \"oldest\" (zone, then oldest first: the default), \"newest\" (zone, then newest first), "+
				"or a list of node names to update first, such as [\"w-3\", \"w-1\"].", v.AsString())))
	}
	if !v.Type().IsListType() && !v.Type().IsTupleType() {
		return def, append(diags, errAt(a.Expr.Range(), "Invalid order",
			fmt.Sprintf("order must be \"oldest\", \"newest\" or a list of node names, not %s.", v.Type().FriendlyName())))
	}
	out := def
	seen := map[string]int{}
	for i, e := range v.AsValueSlice() {
		at := exprAt(a.Expr, cty.IndexIntPath(i))
		if e.Type() != cty.String {
			diags = append(diags, errAt(at, "Invalid order", fmt.Sprintf("order[%d] must be a node name, not %s.", i, e.Type().FriendlyName())))
			continue
		}
		name := e.AsString()
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			diags = append(diags, errAt(at, "Invalid order", fmt.Sprintf("order[%d] = %q is no node name: %s.", i, name, errs[0])))
			continue
		}
		if j, dup := seen[name]; dup {
			diags = append(diags, errAt(at, "Invalid order", fmt.Sprintf("order names node %q twice (order[%d] and order[%d]).", name, j, i)))
			continue
		}
		seen[name] = i
		out.Nodes = append(out.Nodes, name)
		out.NodeRanges = append(out.NodeRanges, hclpos.From(at))
	}
	if len(v.AsValueSlice()) == 0 {
		diags = append(diags, errAt(a.Expr.Range(), "Invalid order",
			"order = [] names no node: leave order out for the default (zone, then oldest), or name the nodes to update first."))
	}
	return out, diags
}
