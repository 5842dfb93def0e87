package config

import (
	"fmt"
	"math"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpfleet/mcp/internal/hclpos"
	"github.com/mcpfleet/mcp/model"
)

// A configuration with cluster blocks is a fleet of clusters (docs/fleets.md): its pools,
// configs and boot images are written once, and each cluster block names the provider,
// state and variable values one cluster is loaded with (Options.Cluster). Stage blocks
// order the clusters.

var clusterSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "stage"}, {Name: "labels"}, {Name: "variables"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "provider", LabelNames: []string{"type"}}, {Type: "state"}},
}

var stageSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "after"}, {Name: "soak"}, {Name: "max_failed_clusters"}, {Name: "approval"}, {Name: "concurrency"}}}

var failureDomainSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "max_disrupting", Required: true}}}

// clusterDecl is a cluster block: the model's Cluster and what the cluster's load reads.
type clusterDecl struct {
	model.Cluster
	content *hcl.BodyContent // its provider and state blocks, its variables
}

// fleet reads the cluster and stage blocks of a configuration that has cluster blocks:
// the stages in their order (after), the clusters by stage in that order, then by name.
func (l *loader) fleet(blocks hcl.Blocks) ([]model.Stage, []clusterDecl, []model.FailureDomain, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	for _, t := range []string{"provider", "state"} {
		for _, b := range blocks.OfType(t) {
			diags = append(diags, errAt(b.DefRange, "Top-level "+t+" block beside cluster blocks",
				fmt.Sprintf("With cluster blocks, each cluster names its own %s: move this %s block into each cluster block.", t, t)))
		}
	}
	stages, d := l.stages(blocks.OfType("stage"))
	diags = append(diags, d...)
	clusters, d := l.clusters(blocks.OfType("cluster"), stages)
	diags = append(diags, d...)
	rank := map[string]int{}
	for i, s := range stages {
		rank[s.Name] = i
	}
	sortClusters(clusters, rank)
	domains, d := l.failureDomains(blocks.OfType("failure_domain"), clusters)
	return stages, clusters, domains, append(diags, d...)
}

func sortClusters(cs []clusterDecl, rank map[string]int) {
	less := func(a, b clusterDecl) bool {
		if rank[a.Stage] != rank[b.Stage] {
			return rank[a.Stage] < rank[b.Stage]
		}
		return a.Name < b.Name
	}
	for i := 1; i < len(cs); i++ { // few clusters: insertion sort keeps it stable
		for j := i; j > 0 && less(cs[j], cs[j-1]); j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}

// stages reads the stage blocks, in the order of their after attributes.
func (l *loader) stages(blocks hcl.Blocks) ([]model.Stage, hcl.Diagnostics) {
	afterAt := map[string]hcl.Range{}
	var out []model.Stage
	names, diags := eachBlock("stage", blocks, stageSchema, func(b *hcl.Block, content *hcl.BodyContent) (diags hcl.Diagnostics) {
		var d hcl.Diagnostics
		s := model.Stage{Name: b.Labels[0], DeclRange: hclpos.From(b.LabelRanges[0])}
		if a := content.Attributes["soak"]; a != nil {
			s.Soak, d = l.duration(a)
			diags = append(diags, d...)
		}
		d = l.stageLimits(&s, content.Attributes)
		diags = append(diags, d...)
		if a := content.Attributes["after"]; a != nil {
			s.After, d = l.strList(a)
			diags = append(diags, d...)
			afterAt[s.Name] = a.Expr.Range()
		}
		out = append(out, s)
		return diags
	})
	for _, s := range out {
		for _, a := range s.After {
			if _, ok := names.first[a]; !ok {
				diags = append(diags, errAt(afterAt[s.Name], "Unknown stage",
					fmt.Sprintf("Stage %q comes after stage %q, which no stage block declares.%s", s.Name, a, didYouMean(a, keysOf(names.first)))))
			}
		}
	}
	if diags.HasErrors() {
		return out, diags
	}
	ordered, cycle := orderStages(out)
	if cycle != nil {
		return out, append(diags, errAt(afterAt[cycle[0]], "Cycle in stage order",
			fmt.Sprintf("The stages come after one another in a circle: %s.", strings.Join(cycle, " comes after "))))
	}
	return ordered, diags
}

// stageLimits reads a stage's max_failed_clusters (a whole number, 0 or more),
// concurrency (a whole number, 1 or more) and approval into s.
func (l *loader) stageLimits(s *model.Stage, attrs hcl.Attributes) hcl.Diagnostics {
	var diags hcl.Diagnostics
	whole := func(name string, least int) int {
		n, d := l.wholeNumber(attrs[name], least, "")
		diags = append(diags, d...)
		return n
	}
	s.MaxFailedClusters, s.Concurrency = whole("max_failed_clusters", 0), whole("concurrency", 1)
	if a := attrs["approval"]; a != nil {
		var d hcl.Diagnostics
		s.Approval, d = l.boolean(a)
		diags = append(diags, d...)
	}
	return diags
}

// wholeNumber reads a's whole number, least or more (least when a is nil or wrong: the
// error says so, with what the number is for, why).
func (l *loader) wholeNumber(a *hcl.Attribute, least int, why string) (int, hcl.Diagnostics) {
	if a == nil {
		return least, nil
	}
	f, diags := l.number(a)
	if diags.HasErrors() {
		return least, diags
	}
	if f != math.Trunc(f) || f < float64(least) || f > 1e6 {
		return least, append(diags, errAt(a.Expr.Range(), "Invalid "+a.Name,
			fmt.Sprintf("%s = %v: want a whole number, %d or more%s.", a.Name, f, least, why)))
	}
	return int(f), diags
}

// orderStages orders stages so that each comes after those it names in after (Kahn's
// algorithm, ties in declaration order). When they form a cycle it returns one, as the
// names along it (the first repeated at the end).
func orderStages(stages []model.Stage) ([]model.Stage, []string) {
	done := map[string]bool{}
	var out []model.Stage
	for len(out) < len(stages) {
		progress := false
		for _, s := range stages {
			if done[s.Name] || !allDone(s.After, done) {
				continue
			}
			done[s.Name], progress = true, true
			out = append(out, s)
		}
		if !progress {
			return nil, findCycle(stages, done)
		}
	}
	return out, nil
}

func allDone(names []string, done map[string]bool) bool {
	for _, n := range names {
		if !done[n] {
			return false
		}
	}
	return true
}

// findCycle follows after edges among the stages not done until one repeats.
func findCycle(stages []model.Stage, done map[string]bool) []string {
	after := map[string][]string{}
	start := ""
	for _, s := range stages {
		after[s.Name] = s.After
		if start == "" && !done[s.Name] {
			start = s.Name
		}
	}
	seen := map[string]int{}
	var path []string
	for at := start; ; {
		if i, ok := seen[at]; ok {
			return append(path[i:], at)
		}
		seen[at] = len(path)
		path = append(path, at)
		for _, next := range after[at] {
			if !done[next] {
				at = next
				break
			}
		}
	}
}
