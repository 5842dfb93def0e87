// Package clusters is mcp's layer over a fleet of clusters (docs/fleets.md): a
// configuration with cluster blocks is loaded once per cluster — engine.Load with that
// cluster's provider, state and variable values (config.Options.Cluster) — and each
// cluster is planned by the engine as a configuration of one cluster is, concurrently and
// bounded. A cluster that cannot be planned is kept with its reason, never dropped. The
// engine knows nothing of clusters.
package clusters

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpfleet/mcp/config"
	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/internal/suggest"
	"github.com/mcpfleet/mcp/model"
)

// Member is one cluster of the fleet, loaded.
type Member struct {
	Cluster model.Cluster
	Stage   model.Stage
	// Budget is the fleet's failure domains.
	Budget Budget
	// Workspace is the configuration loaded for this cluster; nil when Diags has errors or
	// Unreachable is set.
	Workspace *engine.Workspace
	// Unreachable is why the cluster's provider or state backend could not be built (a
	// fleet directory missing, a kubeconfig context unknown): the cluster is unknown, and
	// the others are planned.
	Unreachable *model.Diagnostic
	// Config and Diags are the load's result and diagnostics (Config prints them).
	Config *config.Result
	Diags  model.Diagnostics
}

// Select returns the clusters of res that only names (all of them when only is empty), in
// res's stage order. A name res does not declare is an error listing the names it does.
func Select(res *config.Result, only []string) ([]model.Cluster, error) {
	names := make([]string, len(res.Clusters))
	for i, c := range res.Clusters {
		names[i] = c.Name
	}
	for _, n := range only {
		if !slices.Contains(names, n) {
			return nil, fmt.Errorf("-cluster %s: the configuration declares no such cluster; its clusters are %s.%s",
				n, list(names), suggest.DidYouMean(n, names))
		}
	}
	if len(only) == 0 {
		return res.Clusters, nil
	}
	var out []model.Cluster
	for _, c := range res.Clusters {
		if slices.Contains(only, c.Name) {
			out = append(out, c)
		}
	}
	return out, nil
}

func list(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// LoadAll loads the configuration in dir for each of sel (Select), with opts (the
// command line's variables, which every cluster takes) and parts. res is the fleet's
// configuration as read without a cluster (its stages).
func LoadAll(dir string, res *config.Result, sel []model.Cluster, opts config.Options, parts engine.Parts) []Member {
	out := make([]Member, len(sel))
	var cache engine.RenderCache // identical rendered configs rendered once across clusters
	for i, c := range sel {
		opts.Cluster = c.Name
		m := Member{Cluster: c, Budget: res.FailureDomains}
		for _, s := range res.Stages {
			if s.Name == c.Stage {
				m.Stage = s
			}
		}
		m.Workspace, m.Config, m.Diags = engine.RenderShared(dir, opts, parts, &cache)
		if m.Workspace != nil {
			if d := m.Workspace.Open(parts); d != nil {
				m.Workspace, m.Unreachable = nil, d
			}
		}
		out[i] = m
	}
	return out
}

// Errors says whether any member failed to load.
func Errors(ms []Member) bool {
	for _, m := range ms {
		if m.Diags.HasErrors() {
			return true
		}
	}
	return false
}
