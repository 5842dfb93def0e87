package main

import (
	"fmt"

	"github.com/mcpfleet/mcp/clusters"
	"github.com/mcpfleet/mcp/cmd/mcp/views"
	"github.com/mcpfleet/mcp/engine/planfile"
)

// fleetRefreshes is how many clusters a plan across clusters refreshes at once.
const fleetRefreshes = 4

// planFleet plans the clusters ms and shows them together, then each cluster's plan. The
// exit code is plan's for the whole (docs/decisions.md, "A plan across clusters"): 1 when
// any cluster is unknown or has a plan apply will refuse, after everything is shown; else
// with -detailed-exitcode 2 when any cluster would change; else 0.
func (c *cli) planFleet(ms []clusters.Member, lf *loadFlags, sf *scopeFlags, detailed *exitcodeFlag, ignoreSoak bool) int {
	ps := clusters.PlanAll(c.ctx, ms, clusters.PlanOptions{Limit: fleetRefreshes, Lock: lf.lock,
		LockTimeout: lf.lockTimeout, Targets: sf.targets, Exclude: sf.exclude, OnForce: c.intr.onForce})
	var pfs []*planfile.File
	for _, p := range ps {
		if p.Plan != nil {
			pfs = append(pfs, p.Plan.File)
		}
	}
	if len(ms) > 0 {
		c.soakGates(ms[0].Config, lf, ignoreSoak, pfs...)
	}
	color := c.color(lf)
	if err := views.FleetPlan(c.stdout, ps, color); err != nil {
		return c.failErr(err)
	}
	code, refused := 0, 0
	for _, p := range ps {
		views.ClusterHeader(c.stdout, p, color)
		if p.Plan == nil {
			fmt.Fprintf(c.stdout, "Unknown: %s\n", views.Capitalize(p.Err.Error()))
			code = 1
			continue
		}
		if err := views.NewPlan(false, c.stdout, color).Plan(p.Plan.File); err != nil {
			return c.failErr(err)
		}
		if len(p.Plan.File.Rollout.Refusals())+len(clusters.Refusals(p.Plan.File.Soak)) > 0 {
			refused++
		}
		if code == 0 && detailed.exitsTwo(p.Plan.File.Rollout) {
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
