package main

import (
	"fmt"
	"slices"

	"github.com/mcpfleet/mcp/clusters"
	"github.com/mcpfleet/mcp/cmd/mcp/views"
	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/model"
)

// fleetRefreshes is how many clusters a plan across clusters refreshes at once.
const fleetRefreshes = 4

// planFleet plans the clusters ms and shows them together, then each cluster's plan (as
// one JSON document with -json), saving them with -out as one plan across clusters. The
// exit code is plan's for the whole (docs/decisions.md, "A plan across clusters"): 1 when
// any cluster is unknown or has a plan apply will refuse, after everything is shown; else
// with -detailed-exitcode 2 when any cluster would change; else 0.
func (c *cli) planFleet(ms []clusters.Member, lf *loadFlags, sf *scopeFlags, detailed *exitcodeFlag, out string, asJSON bool) int {
	ps, err := c.showFleet(ms, lf, sf, asJSON)
	if err != nil {
		return c.failErr(err)
	}
	if out != "" {
		if err := planfile.WriteFleet(c.path(out), fleetFile(ps)); err != nil {
			return c.failErr(err)
		}
		if !asJSON {
			views.NewPlan(false, c.stdout, false).Saved(out)
		}
	}
	code, refused := 0, 0
	rolling := map[string]map[string]bool{} // cluster → the pools this plan moves to a new config
	for _, p := range ps {
		if p.Plan == nil {
			continue
		}
		rolling[p.Cluster.Name] = map[string]bool{}
		for _, pp := range p.Plan.File.Rollout.Pools {
			rolling[p.Cluster.Name][pp.Name] = pp.ReRendered
		}
	}
	for _, p := range ps {
		switch {
		case p.Plan == nil:
			code = 1
		case len(p.Plan.File.Rollout.Refusals()) > 0 || soakRefusedNow(p, rolling):
			refused++
		case code == 0 && detailed.exitsTwo(p.Plan.File.Rollout):
			code = 2
		}
	}
	if refused > 0 {
		return c.fail("Apply will refuse this plan", fmt.Sprintf("%d of the clusters' plans would be refused by apply: see their plans above.", refused))
	}
	if code == 1 {
		return c.fail("Some clusters are unknown", "They could not be planned; see why above. The other clusters' plans are shown as they stand.")
	}
	return code
}

// soakRefusedNow says whether the soak gate refuses p's plan with nothing in this plan to
// change that. A pool refused because a stage before p's has not run its config yet, while
// this very plan moves that stage's pool to a new one, is pending, not refused: apply across
// clusters asks p's gate again when it gets there (after stopping for a soaking stage), so
// the plan shows it ("waits for soak") without failing.
func soakRefusedNow(p clusters.Planned, rolling map[string]map[string]bool) bool {
	earlier := clusters.Earlier(p.Config, p.Cluster.Stage)
	for _, n := range p.Plan.File.Soak {
		if !n.Refused || n.Overridden {
			continue
		}
		if !slices.ContainsFunc(earlier, func(e model.Cluster) bool { return rolling[e.Name][n.Pool] }) {
			return true
		}
	}
	return false
}

// showFleet plans the clusters ms (each under its state lock, four at a time) and shows
// the plans: the fleet's summary and rows, the changes grouped across clusters, then each
// cluster's plan under its name; or, asJSON, all of it as one JSON document.
func (c *cli) showFleet(ms []clusters.Member, lf *loadFlags, sf *scopeFlags, asJSON bool) ([]clusters.Planned, error) {
	ps := clusters.PlanAll(c.ctx, ms, clusters.PlanOptions{Limit: fleetRefreshes, Lock: lf.lock,
		LockTimeout: lf.lockTimeout, Targets: sf.targets, Exclude: sf.exclude, OnForce: c.intr.onForce})
	var pfs []*planfile.File
	for _, p := range ps {
		if p.Plan != nil {
			pfs = append(pfs, p.Plan.File)
		}
	}
	if len(ms) > 0 {
		c.soakGatesFrom(ms[0].Config, lf, lf.ignoreSoak, ps, pfs...)
	}
	waves := fleetWaves(ps)
	if asJSON {
		return ps, views.FleetJSON(c.stdout, ps, partsOf(ps), waves)
	}
	return ps, views.FleetText(c.stdout, ps, partsOf(ps), waves, c.color(lf))
}
