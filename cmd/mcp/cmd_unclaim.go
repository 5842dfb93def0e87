package main

import (
	"fmt"
	"strings"

	"github.com/mcpfleet/mcp/cmd/mcp/views"
	"github.com/mcpfleet/mcp/engine"
)

// unclaim clears the claims other applies hold on the nodes named, through the configured
// provider (a Node's mcpfleet.io/claim annotation, a local node's node.json): for a claim
// that nothing else ends soon enough. A claim whose apply may still work on the node is
// refused unless -force, as force-unlock refuses a holder it cannot prove dead.
func (c *cli) unclaim(args []string) int {
	fs := c.newFlags("unclaim")
	var lf loadFlags
	lf.register(fs, false)
	force := fs.Bool("force", false, "clear the claim even when its apply may still work on the node")
	pos, err := c.parse(fs, args)
	if err != nil {
		return 1
	}
	if len(pos) == 0 {
		return c.errorf("usage: mcp unclaim [-force] NODE...")
	}
	ws := c.load(&lf)
	if ws == nil {
		return 1
	}
	st, err := ws.ReadState(c.ctx)
	if err != nil {
		return c.failErr(err)
	}
	done, err := ws.Unclaim(c.ctx, st.Lineage, pos, *force)
	return c.unclaimed(done, err)
}

// unclaimed prints what Unclaim did, and its refusals as the error.
func (c *cli) unclaimed(done []engine.Unclaimed, err error) int {
	for _, u := range done {
		switch {
		case u.Claim == nil:
			fmt.Fprintf(c.stdout, "node %s: no apply holds it; nothing to clear.\n", u.Node)
		case u.Forced:
			fmt.Fprintf(c.stdout, "node %s: cleared the claim of %s, forced (%s).\n", u.Node, views.Untrusted(u.Claim.String()), views.Untrusted(u.Why))
		default:
			fmt.Fprintf(c.stdout, "node %s: cleared the claim of %s (%s).\n", u.Node, views.Untrusted(u.Claim.String()), views.Untrusted(u.Why))
		}
	}
	if err != nil {
		return c.fail("Claim not cleared", strings.Join(views.ErrorLines(err), "\n"))
	}
	return 0
}
