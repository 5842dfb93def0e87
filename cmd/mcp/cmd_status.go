package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/mcpfleet/mcp/cmd/mcp/views"
	"github.com/mcpfleet/mcp/internal/untrusted"
	"github.com/mcpfleet/mcp/planner"
)

// statusInterval is how often mcp status -watch refreshes.
var statusInterval = 2 * time.Second

// status prints the pools' (or nodes') status from one refresh of the fleet and the state.
// It takes no lock and changes nothing, so it can watch an apply that holds the lock.
func (c *cli) status(args []string) int {
	fs := c.newFlags("status")
	nodes := fs.Bool("nodes", false, "list nodes (config, state, condition, hold, age, reason) instead of pools")
	output := fs.String("o", "", "output format, as kubectl get's: wide (more columns), json, yaml (pools and nodes, docs/status.md), name, or jsonpath=TEMPLATE")
	fs.StringVar(output, "output", "", "the same as -o")
	asJSON := fs.Bool("json", false, "the same as -o json")
	watch := fs.Bool("watch", false, "refresh every 2s until interrupted; on a terminal in place")
	fs.BoolVar(watch, "w", false, "the same as -watch")
	noHeaders := fs.Bool("no-headers", false, "print the tables without their header lines (kubectl's --no-headers)")
	var lf loadFlags
	lf.register(fs, false)
	pos, err := c.parse(fs, args)
	if err != nil {
		return 1
	}
	if len(pos) > 0 {
		return c.tooMany("status", pos)
	}
	jsonPath, isJSONPath := strings.CutPrefix(*output, views.OutputJSONPath+"=")
	switch {
	case isJSONPath:
		if err := views.CheckJSONPath(jsonPath); err != nil {
			return c.fail("Invalid output format", fmt.Sprintf("-o jsonpath=%s: %v.", jsonPath, err))
		}
		*output = views.OutputJSONPath
	case *output == views.OutputJSONPath:
		return c.fail("Invalid output format", "-o jsonpath needs its template, as kubectl's: -o jsonpath='{.pools[*].name}'.")
	}
	switch {
	case *asJSON && *output != "" && *output != views.OutputJSON:
		return c.fail("Invalid output format", fmt.Sprintf("-json is -o json: it does not go with -o %s.", *output))
	case *asJSON:
		*output = views.OutputJSON
	case *output != "" && !slices.Contains(views.StatusOutputs, *output):
		return c.fail("Invalid output format", fmt.Sprintf("-o %s: want one of %s.%s", *output, strings.Join(views.StatusOutputs, ", "), didYouMean(*output, views.StatusOutputs)))
	}
	ws := c.load(&lf)
	if ws == nil {
		return 1
	}
	o := views.StatusOptions{Ran: ws.Desired.Cluster != "", Output: *output, Nodes: *nodes, Watch: *watch, Interval: statusInterval, NoHeaders: *noHeaders, JSONPath: jsonPath}
	if f, ok := c.stdout.(*os.File); ok && *watch && isTerminal(f) {
		o.Redraw = true
		o.Height = func() int {
			_, h, err := term.GetSize(int(f.Fd()))
			if err != nil {
				return 0
			}
			return h
		}
	}
	if *watch {
		c.intr.setStopNotice("stopped watching; nothing was changed")
	}
	v := views.NewStatus(o, c.stdout)
	tick := time.NewTicker(statusInterval)
	defer tick.Stop()
	for {
		s, err := ws.Status(c.ctx)
		switch {
		case err != nil && c.ctx.Err() != nil:
			return 0 // interrupted while watching
		case err != nil && !*watch:
			return c.failErr(err)
		case err != nil:
			c.failErr(err) // one failed refresh does not end the watch
		default:
			if err := v.Status(s, time.Now()); err != nil {
				return c.failErr(err)
			}
			if !*watch {
				c.rolledBackWarnings(s)
			}
		}
		if !*watch {
			return 0
		}
		select {
		case <-c.ctx.Done():
			return 0
		case <-tick.C:
		}
	}
}

// rolledBackWarnings says on standard error, as kubectl's warnings, which pools a rollback
// left off what the configuration renders: the tables stay what scripts read.
func (c *cli) rolledBackWarnings(s *planner.Status) {
	for _, p := range s.Pools {
		if m := p.RolledBack; m != nil {
			fmt.Fprintf(c.stderr, "Warning: pool %s was rolled back to %s from %s at %s; the configuration renders another config, and a plain apply goes forward again\n",
				p.Name, untrusted.Line(m.To), untrusted.Line(m.From), m.At.Format(time.RFC3339))
		}
	}
}
