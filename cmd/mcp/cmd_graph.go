package main

import (
	"flag"
	"strings"

	"github.com/mcpfleet/mcp/cmd/mcp/views"
	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/engine/planfile"
)

// graph prints a plan's action graph in DOT: a saved plan's, or a fresh one made as
// `mcp plan` makes it (refresh and plan under the state lock).
func (c *cli) graph(args []string) int {
	fs := c.newFlags("graph")
	var lf loadFlags
	lf.register(fs, true)
	pos, err := c.parse(fs, args)
	if err != nil {
		return 1
	}
	var pf *planfile.File
	switch len(pos) {
	case 0:
		ws := c.load(&lf)
		if ws == nil {
			return 1
		}
		s, code := c.readStateLocked(ws, &lf, "graph")
		if s == nil {
			return code
		}
		p, err := ws.Plan(s.ctx, s.st, engine.PlanOptions{Lock: s.lock})
		s.unlock()
		if err != nil {
			return c.failErr(err)
		}
		pf = p.File
	case 1:
		// A saved plan is the graph's whole input: flags for making one would do nothing.
		var set []string
		fs.Visit(func(f *flag.Flag) {
			if f.Name != "no-color" {
				set = append(set, "-"+f.Name)
			}
		})
		if len(set) > 0 {
			return c.errorf("mcp graph PLANFILE takes no %s: they are for making a plan, and the saved plan is made", strings.Join(set, ", "))
		}
		if pf, err = planfile.Read(c.path(pos[0])); err != nil {
			return c.failErr(err)
		}
	default:
		return c.tooMany("graph", pos[1:])
	}
	if err := views.Graph(c.stdout, pf.Rollout); err != nil {
		return c.failErr(err)
	}
	return 0
}
