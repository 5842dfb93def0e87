package main

import (
	"fmt"

	"github.com/mcpfleet/mcp/engine"
)

func (c *cli) version(args []string) int {
	if _, err := c.parse(c.newFlags("version"), args); err != nil {
		return 1
	}
	fmt.Fprintf(c.stdout, "mcp %s\n", engine.Version)
	return 0
}

func (c *cli) forceUnlock(args []string) int {
	fs := c.newFlags("force-unlock")
	var lf loadFlags
	lf.register(fs, false)
	pos, err := c.parse(fs, args)
	if err != nil {
		return 1
	}
	if len(pos) != 1 {
		return c.errorf("usage: mcp force-unlock LOCK_ID (the ID the lock error printed)")
	}
	ws := c.load(&lf)
	if ws == nil {
		return 1
	}
	if err := ws.Backend.ForceUnlock(c.ctx, pos[0]); err != nil {
		return c.errorf("%v", err)
	}
	fmt.Fprintln(c.stdout, "The state has been unlocked.")
	return 0
}
