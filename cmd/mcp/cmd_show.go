package main

import (
	"github.com/mcpfleet/mcp/cmd/mcp/views"
	"github.com/mcpfleet/mcp/engine/planfile"
)

func (c *cli) show(args []string) int {
	fs := c.newFlags("show")
	asJSON := fs.Bool("json", false, "print as JSON")
	pool := fs.String("rendered", "", "print this pool's rendered Ignition config (with -json: the whole rendered object)")
	var lf loadFlags
	lf.register(fs, false)
	pos, err := c.parse(fs, args)
	if err != nil {
		return 1
	}
	v := views.NewShow(*asJSON, c.stdout, c.color(&lf))
	if *pool != "" {
		ws := c.load(&lf)
		if ws == nil {
			return 1
		}
		r := ws.Rendered[*pool]
		if r == nil {
			return c.errorf("no pool %q in the configuration", *pool)
		}
		if err := v.Rendered(r); err != nil {
			return c.errorf("%v", err)
		}
		return 0
	}
	if len(pos) != 1 {
		return c.errorf("usage: mcp show [-json] PLANFILE  or  mcp show -rendered POOL")
	}
	pf, err := planfile.Read(c.path(pos[0]))
	if err != nil {
		return c.errorf("%v", err)
	}
	if err := v.Plan(pf); err != nil {
		return c.errorf("%v", err)
	}
	return 0
}
