package main

import (
	"fmt"
	"os"

	"github.com/mcpfleet/mcp/cmd/mcp/views"
	"github.com/mcpfleet/mcp/config"
	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

func (c *cli) validate(args []string) int {
	fs := c.newFlags("validate")
	asJSON := fs.Bool("json", false, "print the result as JSON (the shape of terraform validate -json)")
	var lf loadFlags
	lf.register(fs, false)
	pos, err := c.parse(fs, args)
	if err != nil {
		return 1
	}
	if len(pos) > 1 {
		return c.tooMany("validate", pos[1:])
	}
	if len(pos) > 0 {
		c.dir = c.path(pos[0])
		if st, err := os.Stat(c.dir); err != nil || !st.IsDir() {
			return c.errorf("%s: %s", pos[0], notADir(err))
		}
	}
	var res *config.Result
	var diags model.Diagnostics
	if !c.whileReading(func() {
		res, diags = config.Load(c.dir, c.configOptions(&lf))
		if !diags.HasErrors() {
			// Rendering validates every pool's config with Ignition's own parser.
			_, rdiags := planner.Render(res.Desired, ignition.Renderer{})
			diags = append(diags, rdiags...)
		}
	}) {
		return 1
	}
	if *asJSON {
		b, err := views.DiagnosticsJSON(diags)
		if err != nil {
			return c.failErr(err)
		}
		fmt.Fprintln(c.stdout, string(b))
	} else if len(diags) > 0 {
		c.diagnostics(res, diags, &lf)
	}
	if diags.HasErrors() {
		return 1
	}
	if !*asJSON {
		fmt.Fprintln(c.stdout, "Success! The configuration is valid.")
	}
	return 0
}
