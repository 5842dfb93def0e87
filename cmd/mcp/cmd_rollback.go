package main

import (
	"fmt"
	"slices"

	"github.com/mcpfleet/mcp/cmd/mcp/views"
	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/model"
)

// rollback is mcp rollback POOL… [-to RENDERED]: a plan whose target for each pool named
// is a stored rendered config — the one the pool ran before, or -to's — shown and approved
// as apply's, and carried out by the same engine under the same budget and lock; or saved
// (-out) for mcp apply FILE. The configuration is not touched (docs/configuration.md,
// "Rolling back").
func (c *cli) rollback(args []string) int {
	fs := c.newFlags("rollback")
	to := fs.String("to", "", "the `RENDERED` config to go back to (one pool; default: the one the pool ran before its current one)")
	auto := fs.Bool("auto-approve", false, "apply without asking for approval")
	asJSON := fs.Bool("json", false, "print the plan and the progress as JSON")
	out := fs.String("out", "", "save the rollback's plan to this file for mcp apply FILE, instead of applying it")
	var opts engine.ApplyOptions
	registerApplyOptions(fs, &opts)
	var lf loadFlags
	lf.register(fs, true)
	pools, err := c.parse(fs, args)
	if err != nil {
		return 1
	}
	if *asJSON && !*auto && *out == "" {
		return c.errorf("-json needs -auto-approve or -out: nobody can approve a plan in JSON output")
	}
	ws := c.load(&lf)
	if ws == nil {
		return 1
	}
	if len(pools) == 0 {
		return c.errorf("name the pools to roll back: mcp rollback POOL… [-to RENDERED]")
	}
	for _, pool := range pools {
		if !slices.ContainsFunc(ws.Desired.Pools, func(p model.Pool) bool { return p.Name == pool }) {
			return c.noPool(pool, ws.Desired)
		}
	}
	if !lf.lock {
		fmt.Fprint(c.stderr, lockFalseWarning)
	}
	s, code := c.readStateLocked(ws, &lf, "rollback")
	if s == nil {
		return code
	}
	defer s.unlock()
	targets, err := ws.RollbackTargets(s.st, pools, *to)
	if err != nil {
		return c.fail("Cannot roll back", views.Capitalize(err.Error()))
	}
	if ws, err = ws.RollingBack(s.st, targets); err != nil {
		return c.failErr(err)
	}
	p, err := ws.Plan(s.ctx, s.st, engine.PlanOptions{Lock: s.lock})
	if err != nil {
		return c.failErr(err)
	}
	color := c.color(&lf)
	if *out != "" {
		v := views.NewPlan(*asJSON, c.stdout, color)
		if err := v.Plan(p.File); err != nil {
			return c.failErr(err)
		}
		if err := planfile.Write(c.path(*out), p.File); err != nil {
			return c.failErr(err)
		}
		v.Saved(*out)
		return 0
	}
	v := views.NewApply(*asJSON, &keepWriting{w: c.stdout, stderr: c.stderr, then: "the rollback goes on without showing its progress there"}, color)
	if err := v.Plan(p.File); err != nil {
		return c.failErr(err)
	}
	if !p.File.Rollout.HasChanges() {
		return 0
	}
	if !*auto {
		if code, ok := c.approve(v, lf.input); !ok {
			return code
		}
	}
	code, _ = c.carryOut(ws, s, &lf, p, opts, v, *asJSON, color)
	return code
}
