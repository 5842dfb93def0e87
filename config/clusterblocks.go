package config

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpfleet/mcp/internal/hclpos"
	"github.com/mcpfleet/mcp/model"
)

// clusters reads the cluster blocks: each names a declared stage, one provider block and
// its own state (two clusters sharing a state would write over each other's).
func (l *loader) clusters(blocks hcl.Blocks, stages []model.Stage) ([]clusterDecl, hcl.Diagnostics) {
	known := make([]string, len(stages))
	for i, s := range stages {
		known[i] = s.Name
	}
	var out []clusterDecl
	_, diags := eachBlock("cluster", blocks, clusterSchema, func(b *hcl.Block, content *hcl.BodyContent) (diags hcl.Diagnostics) {
		c := clusterDecl{Cluster: model.Cluster{Name: b.Labels[0], DeclRange: hclpos.From(b.LabelRanges[0])}, content: content}
		var d hcl.Diagnostics
		c.Stage, d = l.clusterStage(b, content, known)
		diags = append(diags, d...)
		diags = append(diags, l.clusterParts(b, content, &c.Cluster)...)
		c.Values, d = clusterValueKeys(content.Attributes["variables"])
		diags = append(diags, d...)
		c.Labels, d = l.clusterLabels(content.Attributes["labels"])
		out = append(out, c)
		return append(diags, d...)
	})
	return out, diags
}

// clusterStage reads the cluster's stage, one of the stage blocks.
func (l *loader) clusterStage(b *hcl.Block, content *hcl.BodyContent, known []string) (string, hcl.Diagnostics) {
	a := content.Attributes["stage"]
	if a == nil {
		return "", hcl.Diagnostics{errAt(b.LabelRanges[0], "Cluster without a stage",
			fmt.Sprintf("Cluster %q needs stage = \"NAME\", naming a stage block (%s).", b.Labels[0], namesOrNone(known)))}
	}
	s, diags := l.str(a)
	if diags.HasErrors() {
		return "", diags
	}
	for _, k := range known {
		if k == s {
			return s, diags
		}
	}
	return "", append(diags, errAt(a.Expr.Range(), "Unknown stage",
		fmt.Sprintf("Cluster %q is in stage %q, which no stage block declares.%s", b.Labels[0], s, didYouMean(s, known))))
}

func namesOrNone(names []string) string {
	if len(names) == 0 {
		return "there are none yet: declare one with stage \"NAME\" {}"
	}
	return quoted(names)
}

// quoted lists names for a message: "a", "b", "c".
func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// clusterParts checks that the cluster names a provider and a state of its own; their
// settings are read when the cluster is loaded, with its variables.
func (l *loader) clusterParts(b *hcl.Block, content *hcl.BodyContent, c *model.Cluster) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if ps := content.Blocks.OfType("provider"); len(ps) > 0 {
		c.ProviderType = ps[0].Labels[0]
	} else {
		example := ""
		if specs := l.schemas.Providers; len(specs) > 0 {
			example = fmt.Sprintf(", for example: provider %q { %s }", specs[0].Name, specs[0].Example)
		}
		diags = append(diags, errAt(b.LabelRanges[0], "Cluster without a provider",
			fmt.Sprintf("Cluster %q needs a provider block naming how to reach its nodes%s.", c.Name, example)))
	}
	if len(content.Blocks.OfType("state")) == 0 {
		diags = append(diags, errAt(b.LabelRanges[0], "Cluster without a state block",
			fmt.Sprintf("Cluster %q needs a state block of its own (two clusters sharing one state would write over each other's), for example: state { path = \"clusters/%s/mcp.state\" }.", c.Name, c.Name)))
	}
	return diags
}

// clusterValueKeys reads the names of a cluster's variables attribute (an object of
// variable values) with their places; the values are read when the cluster is loaded.
func clusterValueKeys(a *hcl.Attribute) (map[string]model.Range, hcl.Diagnostics) {
	if a == nil {
		return nil, nil
	}
	pairs, diags := hcl.ExprMap(a.Expr)
	if diags.HasErrors() {
		return nil, hcl.Diagnostics{errAt(a.Expr.Range(), "Invalid variables",
			"A cluster's variables are an object of variable values, such as { ntp_server = \"ntp.eu.example\" }.")}
	}
	out := map[string]model.Range{}
	for _, p := range pairs {
		k, d := p.Key.Value(nil)
		if d.HasErrors() || !k.Type().Equals(cty.String) || k.IsNull() {
			diags = append(diags, errAt(p.Key.Range(), "Invalid variable name", "A cluster's variables are named by the variables' names."))
			continue
		}
		out[k.AsString()] = hclpos.From(p.Key.Range())
	}
	return out, diags
}

// clusterValues gives the variables the values the cluster c sets (set, at each name's
// place); a problem with the attribute's shape was reported by clusterValueKeys.
func (l *loader) clusterValues(c *clusterDecl, set func(string, cty.Value, string, *hcl.Range)) hcl.Diagnostics {
	a := c.content.Attributes["variables"]
	if a == nil {
		return nil
	}
	pairs, d := hcl.ExprMap(a.Expr)
	if d.HasErrors() {
		return nil
	}
	var diags hcl.Diagnostics
	ctx := &hcl.EvalContext{Functions: functions(l.dir)}
	for _, p := range pairs {
		k, d := p.Key.Value(nil)
		if d.HasErrors() || !k.Type().Equals(cty.String) || k.IsNull() {
			continue
		}
		v, d := p.Value.Value(ctx)
		diags = append(diags, d...)
		if !d.HasErrors() {
			r := p.Key.Range()
			set(k.AsString(), v, fmt.Sprintf("cluster %q", c.Name), &r)
		}
	}
	return diags
}

// loadParts are the blocks a configuration is loaded with: the provider and state blocks
// (top-level, or the selected cluster's) and the cluster whose values the variables take.
type loadParts struct {
	provider, state hcl.Blocks
	cluster         *clusterDecl
}

// selectCluster reads the cluster and stage blocks into res and picks the blocks to load
// with: the top-level ones without cluster blocks, else the cluster named. It returns nil
// when there is nothing more to load: errors, or clusters and none named.
func (l *loader) selectCluster(res *Result, blocks hcl.Blocks, name string) (*loadParts, hcl.Diagnostics) {
	if len(blocks.OfType("cluster")) == 0 {
		if name != "" {
			return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "No cluster blocks",
				Detail: fmt.Sprintf("-cluster %s: this configuration declares no cluster blocks; it is one cluster, loaded without -cluster.", name)}}
		}
		var diags hcl.Diagnostics
		for _, b := range blocks.OfType("stage") {
			diags = append(diags, errAt(b.DefRange, "Stage without clusters", "Stages order cluster blocks, and this configuration declares none."))
		}
		for _, b := range blocks.OfType("failure_domain") {
			diags = append(diags, errAt(b.DefRange, "Failure domain without clusters", "A failure domain budgets cluster blocks by a label of theirs, and this configuration declares none."))
		}
		if diags.HasErrors() {
			return nil, diags
		}
		return &loadParts{provider: blocks.OfType("provider"), state: blocks.OfType("state")}, nil
	}
	stages, clusters, domains, diags := l.fleet(blocks)
	res.Stages, res.FailureDomains = stages, domains
	names := make([]string, len(clusters))
	for i, c := range clusters {
		res.Clusters, names[i] = append(res.Clusters, c.Cluster), c.Name
	}
	if diags.HasErrors() || name == "" {
		return nil, diags
	}
	for i := range clusters {
		if c := &clusters[i]; c.Name == name {
			l.d.Cluster = name
			return &loadParts{provider: c.content.Blocks.OfType("provider"), state: c.content.Blocks.OfType("state"), cluster: c}, diags
		}
	}
	return nil, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unknown cluster",
		Detail: fmt.Sprintf("-cluster %s: the configuration declares no such cluster; its clusters are %s.%s", name, quoted(names), didYouMean(name, names))})
}
