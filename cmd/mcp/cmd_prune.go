package main

import (
	"fmt"
	"maps"
	"slices"

	"github.com/mcpfleet/mcp/cmd/mcp/views"
	"github.com/mcpfleet/mcp/state"
)

// prune deletes the stored rendered configs nothing uses any more (engine.Prunable).
func (c *cli) prune(args []string) int {
	fs := c.newFlags("prune")
	dryRun := fs.Bool("dry-run", false, "print what would be deleted, delete nothing")
	var lf loadFlags
	ws, sess, code := c.openLocked(fs, &lf, args, "prune")
	if sess == nil {
		return code
	}
	defer sess.unlock()
	ctx, st := sess.ctx, sess.st
	p, err := ws.Prunable(ctx, st)
	if err != nil {
		return c.failErr(err)
	}
	verb := "Deleting"
	if *dryRun {
		verb = "Would delete"
	}
	orphans := 0
	if op, ok := ws.Backend.(state.OrphanPruner); ok {
		names, err := op.PruneOrphans(ctx, *dryRun)
		if err != nil {
			return c.failErr(err)
		}
		if orphans = len(names); orphans > 0 {
			fmt.Fprintf(c.stdout, "%s %d state pieces a cut-off write left behind:\n", verb, orphans) // pieces: always several
			for _, n := range views.Shown(names) {                                                    // names of files found in the state
				fmt.Fprintf(c.stdout, "  - %s\n", n)
			}
		}
	}
	shown := views.Shown(*p) // names and reasons read from the state
	fmt.Fprintf(c.stdout, "Keeping %s:\n", renderedConfigs(len(shown.Keep)))
	for _, n := range slices.Sorted(maps.Keys(shown.Keep)) {
		fmt.Fprintf(c.stdout, "  %s: %s\n", n, shown.Keep[n])
	}
	if len(p.Delete) == 0 {
		if orphans == 0 {
			fmt.Fprintln(c.stdout, "Nothing to prune.")
		}
		return 0
	}
	fmt.Fprintf(c.stdout, "%s %s nothing uses:\n", verb, renderedConfigs(len(p.Delete)))
	for _, n := range shown.Delete {
		fmt.Fprintf(c.stdout, "  - %s\n", n)
	}
	if *dryRun {
		return 0
	}
	if err := ws.Backend.DeleteRendered(ctx, p.Delete); err != nil {
		return c.failErr(err)
	}
	fmt.Fprintf(c.stdout, "Pruned %s.\n", renderedConfigs(len(p.Delete)))
	return 0
}

// renderedConfigs is "1 rendered config", "2 rendered configs".
func renderedConfigs(n int) string {
	if n == 1 {
		return "1 rendered config"
	}
	return fmt.Sprintf("%d rendered configs", n)
}

// nodeCount is "1 node", "3 nodes".
func nodeCount(n int) string {
	if n == 1 {
		return "1 node"
	}
	return fmt.Sprintf("%d nodes", n)
}
