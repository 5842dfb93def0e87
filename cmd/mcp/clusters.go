package main

import (
	"fmt"
	"strings"

	"github.com/mcpfleet/mcp/clusters"
	"github.com/mcpfleet/mcp/config"
	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/model"
)

// loadAny loads the configuration: one workspace (a configuration of one cluster, or the
// one cluster -cluster names), or, when several allows it, every cluster -cluster names
// (all without it) of a configuration of clusters. It prints the diagnostics; ok is false
// on errors, and when a configuration of clusters is given to a command that works on one
// (several false) without a single -cluster.
func (c *cli) loadAny(lf *loadFlags, several bool) (ws *engine.Workspace, ms []clusters.Member, ok bool) {
	var res *config.Result
	var diags model.Diagnostics
	opts := c.configOptions(lf)
	if !c.whileReading(func() { ws, res, diags = engine.Load(c.dir, opts, c.parts.Engine()) }) {
		return nil, nil, false
	}
	c.diagnostics(res, diags, lf)
	if diags.HasErrors() || c.notOneCluster(res, lf, several) {
		return nil, nil, false
	}
	if ws != nil {
		return ws, nil, true
	}
	sel, _ := clusters.Select(res, lf.clusters) // names checked by notOneCluster
	if !c.whileReading(func() { ms = clusters.LoadAll(c.dir, res, sel, opts, c.parts.Engine()) }) {
		return nil, nil, false
	}
	seen := map[string]bool{}
	for _, m := range ms {
		c.diagnostics(m.Config, once(seen, m.Diags), lf)
	}
	return nil, ms, !clusters.Errors(ms)
}

// once gives those of diags not in seen, and notes them there: what the clusters share
// fails alike in each, and is shown once.
func once(seen map[string]bool, diags model.Diagnostics) model.Diagnostics {
	var out model.Diagnostics
	for _, d := range diags {
		key := fmt.Sprintf("%s\x00%s\x00%v", d.Summary, d.Detail, d.Subject)
		if !seen[key] {
			seen[key], out = true, append(out, d)
		}
	}
	return out
}

// notOneCluster refuses, saying why, -cluster given several times to a configuration of
// one cluster, a -cluster naming no cluster of a configuration of clusters, and — unless
// several — a configuration of clusters loaded for no single cluster.
func (c *cli) notOneCluster(res *config.Result, lf *loadFlags, several bool) bool {
	switch {
	case res == nil:
		return false
	case len(res.Clusters) == 0 && len(lf.clusters) > 1:
		c.fail("No cluster blocks", "-cluster: this configuration declares no cluster blocks; it is one cluster, loaded without -cluster.")
		return true
	case len(res.Clusters) == 0 || res.Desired != nil:
		return false
	}
	if _, err := clusters.Select(res, lf.clusters); err != nil {
		c.fail("Unknown cluster", err.Error())
		return true
	}
	if !several {
		names := make([]string, len(res.Clusters))
		for i, cl := range res.Clusters {
			names[i] = cl.Name
		}
		c.fail("Choose one cluster", fmt.Sprintf("This configuration declares the clusters %s; mcp %s works on one cluster at a time here: name it with -cluster NAME (docs/fleets.md).",
			strings.Join(names, ", "), lf.op))
		return true
	}
	return false
}
