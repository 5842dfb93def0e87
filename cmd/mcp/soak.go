package main

import (
	"flag"
	"slices"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/clusters"
	"github.com/mcpfleet/mcp/config"
	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/model"
)

// registerIgnoreSoak is plan's and apply's -ignore-soak, kept in lf: every cluster's plan
// and apply asks the soak gate with it.
func registerIgnoreSoak(fs *flag.FlagSet, lf *loadFlags) {
	fs.BoolVar(&lf.ignoreSoak, "ignore-soak", false, "in a configuration of clusters, take a change that has not soaked in the stages before (the plan says so; docs/fleets.md)")
}

// soakGates asks the soak gate (package clusters) about each plan of a cluster of res whose
// stage comes after others, and sets its Soak. Each earlier cluster is loaded once, with
// the command line's variables and its own values (never a saved plan's, which are the
// later cluster's), and where its configs ran is read now, its nodes refreshed.
func (c *cli) soakGates(res *config.Result, lf *loadFlags, ignore bool, pfs ...*planfile.File) {
	c.soakGatesFrom(res, lf, ignore, nil, pfs...)
}

// soakGatesFrom is soakGates where the clusters of planned were just refreshed and planned
// in this run (a plan across clusters): their records are read from that refresh, and only
// an earlier cluster not among them is refreshed again.
func (c *cli) soakGatesFrom(res *config.Result, lf *loadFlags, ignore bool, planned []clusters.Planned, pfs ...*planfile.File) {
	if res == nil || len(res.Clusters) == 0 {
		return
	}
	now := time.Now()
	var runs []clusters.Runs
	var need []model.Cluster
	for _, pf := range pfs {
		for _, e := range clusters.Earlier(res, stageOf(res, pf.Cluster)) {
			if slices.ContainsFunc(need, func(n model.Cluster) bool { return n.Name == e.Name }) {
				continue
			}
			if i := slices.IndexFunc(planned, func(p clusters.Planned) bool { return p.Cluster.Name == e.Name }); i >= 0 {
				runs = append(runs, clusters.RunsOf(planned[i:i+1], now)...)
				continue
			}
			need = append(need, e)
		}
	}
	if len(need) > 0 {
		opts := c.configOptions(lf)
		opts.Values = nil
		ms := clusters.LoadAll(c.dir, res, need, opts, c.parts.Engine())
		runs = append(runs, clusters.ReadRuns(c.ctx, ms, now, fleetRefreshes)...)
	}
	for _, pf := range pfs {
		earlier := clusters.Earlier(res, stageOf(res, pf.Cluster))
		var mine []clusters.Runs
		for _, r := range runs {
			if slices.ContainsFunc(earlier, func(e model.Cluster) bool { return e.Name == r.Cluster.Name }) {
				mine = append(mine, r)
			}
		}
		pf.Soak = clusters.Gate(pf.Cluster, pf.Rollout, mine, now, ignore)
	}
}

// stageOf is the stage of cluster name in res ("" when none).
func stageOf(res *config.Result, name string) string {
	for _, cl := range res.Clusters {
		if cl.Name == name {
			return cl.Stage
		}
	}
	return ""
}

// soakRefused fails apply, naming what has not soaked, when the gate refuses pf.
func (c *cli) soakRefused(pf *planfile.File) (int, bool) {
	r := clusters.Refusals(pf.Soak)
	if len(r) == 0 {
		return 0, false
	}
	return c.fail("Not soaked", strings.Join(r, "\n")+"\nNothing was changed. Apply again once it has soaked, or with -ignore-soak to take it now."), true
}

// soakOverridden says whether a plan said -ignore-soak let a pool through.
func soakOverridden(notes []planfile.SoakNote) bool {
	return slices.ContainsFunc(notes, func(n planfile.SoakNote) bool { return n.Overridden })
}
