package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpfleet/mcp/internal/hclpos"
	"github.com/mcpfleet/mcp/model"
)

// clusterLabels reads a cluster's labels attribute: an object of strings, such as
// { region = "eu", rack = "r1" }; its failure domains (failure_domain blocks) budget by them.
func (l *loader) clusterLabels(a *hcl.Attribute) (map[string]string, hcl.Diagnostics) {
	if a == nil {
		return nil, nil
	}
	bad := func(r hcl.Range) hcl.Diagnostics {
		return hcl.Diagnostics{errAt(r, "Invalid labels",
			"A cluster's labels are an object of strings, such as { region = \"eu\" }: the failure domains (failure_domain \"region\" { … }) the cluster is in.")}
	}
	pairs, diags := hcl.ExprMap(a.Expr)
	if diags.HasErrors() {
		return nil, bad(a.Expr.Range())
	}
	out := map[string]string{}
	for _, p := range pairs {
		k, d := p.Key.Value(nil)
		v, dv := p.Value.Value(nil)
		switch {
		case d.HasErrors() || k.IsNull() || !k.Type().Equals(cty.String) || k.AsString() == "":
			diags = append(diags, bad(p.Key.Range())...)
		case dv.HasErrors() || v.IsNull() || !v.Type().Equals(cty.String) || v.AsString() == "":
			diags = append(diags, bad(p.Value.Range())...)
		default:
			out[k.AsString()] = v.AsString()
		}
	}
	return out, diags
}

// failureDomains reads the failure_domain blocks: each names a label the cluster blocks
// carry (a label no cluster carries budgets nothing: a typo, refused) and max_disrupting,
// a whole number, 1 or more.
func (l *loader) failureDomains(blocks hcl.Blocks, clusters []clusterDecl) ([]model.FailureDomain, hcl.Diagnostics) {
	carried := map[string]bool{}
	for _, c := range clusters {
		for k := range c.Labels {
			carried[k] = true
		}
	}
	var out []model.FailureDomain
	_, diags := eachBlock("failure_domain", blocks, failureDomainSchema, func(b *hcl.Block, content *hcl.BodyContent) (diags hcl.Diagnostics) {
		fd := model.FailureDomain{Label: b.Labels[0], DeclRange: hclpos.From(b.LabelRanges[0])}
		if !carried[fd.Label] {
			known := keysOf(carried)
			diags = append(diags, errAt(b.LabelRanges[0], "Unknown cluster label",
				fmt.Sprintf("Failure domain %q budgets the clusters by their label %q, which no cluster block's labels carry.%s", fd.Label, fd.Label, didYouMean(fd.Label, known))))
		}
		var d hcl.Diagnostics
		fd.MaxDisrupting, d = l.wholeNumber(content.Attributes["max_disrupting"], 1,
			fmt.Sprintf(" (how many clusters of one %s may drain or reboot nodes at once)", fd.Label))
		out = append(out, fd)
		return append(diags, d...)
	})
	slices.SortStableFunc(out, func(a, b model.FailureDomain) int { return strings.Compare(a.Label, b.Label) })
	return out, diags
}
