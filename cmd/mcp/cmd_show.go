package main

import (
	"github.com/mcpfleet/mcp/cmd/mcp/views"
	"github.com/mcpfleet/mcp/engine/planfile"
)

func (c *cli) show(args []string) int {
	fs := c.newFlags("show")
	asJSON := fs.Bool("json", false, "print as JSON")
	asMarkdown := fs.Bool("markdown", false, "print a saved plan as a summary for a pull-request comment (Markdown)")
	var rendered renderedFlag
	fs.Var(&rendered, "rendered", "print the rendered config of POOL, named after -rendered or as the argument (with -json: the whole rendered object)")
	var lf loadFlags
	lf.register(fs, false)
	pos, err := c.parse(fs, args)
	if err != nil {
		return 1
	}
	pool := &rendered.pool
	if rendered.set && rendered.pool == "" {
		// mcp show -rendered POOL (flags before or after it): the pool is the argument.
		if len(pos) != 1 {
			return c.errorf("usage: mcp show -rendered [-json] POOL")
		}
		rendered.pool, pos = pos[0], nil
	}
	v := views.NewShow(*asJSON, c.stdout, c.color(&lf))
	if *asMarkdown {
		// As terraform show, a plan is shown only from a plan file: there is no plan to
		// summarise without one (and none is made here, which would need the lock).
		switch {
		case *asJSON || *pool != "":
			return c.errorf("-markdown shows a saved plan; it does not go with -json or -rendered")
		case len(pos) != 1:
			return c.fail("No plan file given", "Usage: mcp show -markdown PLANFILE\n\nSave a plan with mcp plan -out=PLANFILE.")
		}
		v = views.NewShowMarkdown(c.stdout)
	}
	if *pool != "" {
		ws := c.load(&lf)
		if ws == nil {
			return 1
		}
		r := ws.Rendered[*pool]
		if r == nil {
			return c.noPool(*pool, ws.Desired)
		}
		if err := v.Rendered(r); err != nil {
			return c.failErr(err)
		}
		return 0
	}
	if len(pos) > 1 {
		return c.tooMany("show", pos[1:])
	}
	if len(pos) != 1 {
		return c.fail("No plan file given", "Usage: mcp show [-json|-markdown] PLANFILE  or  mcp show -rendered POOL\n\n"+
			"As terraform show, mcp show shows a plan from a plan file: save one with mcp plan -out=PLANFILE.")
	}
	pf, fleet, err := planfile.ReadAny(c.path(pos[0]))
	if err != nil {
		return c.failErr(err)
	}
	if fleet != nil {
		ps, parts := savedFleet(fleet)
		switch {
		case *asJSON:
			err = views.FleetJSON(c.stdout, ps, parts, fleet.Waves)
		case *asMarkdown:
			err = views.FleetMarkdown(c.stdout, ps, parts, fleet.Waves)
		default:
			err = views.FleetText(c.stdout, ps, parts, fleet.Waves, c.color(&lf))
		}
		if err != nil {
			return c.failErr(err)
		}
		return 0
	}
	if err := v.Plan(pf); err != nil {
		return c.failErr(err)
	}
	return 0
}

// renderedFlag is -rendered: a bool flag, so that the pool may follow it as an argument
// after other flags (mcp show -rendered -json worker), that also takes -rendered=POOL.
type renderedFlag struct {
	set  bool
	pool string
}

func (f *renderedFlag) String() string   { return f.pool }
func (f *renderedFlag) IsBoolFlag() bool { return true }
func (f *renderedFlag) Set(v string) error {
	f.set = true
	switch v {
	case "true":
	case "false", "":
		f.set = false
	default:
		f.pool = v
	}
	return nil
}
