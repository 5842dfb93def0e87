package views

import (
	"cmp"
	"fmt"
	"io"

	"github.com/mcpfleet/mcp/planner"
)

// writeDriftNote writes the plan's drift apart from its configuration changes, as
// Terraform's "Note: Objects have changed outside of Terraform": each drifted node with
// what differs, and whether the plan restores it (on_drift). It starts on the current line.
func writeDriftNote(w io.Writer, c painter, p *planner.Rollout) {
	drifted := p.Drifted()
	if len(drifted) == 0 {
		return
	}
	they := "they run"
	if len(drifted) == 1 {
		they = "it runs"
	}
	fmt.Fprintf(w, "%s %s drifted from the config %s (%s):\n", c.yellow("Note:"),
		plural(len(drifted), "%d node has", "%d nodes have"), they, driftCause(drifted))
	onDrift := map[string]bool{}
	for _, pp := range p.Pools {
		onDrift[pp.Name] = pp.OnDrift.Reports()
	}
	restored, reported := 0, 0
	for _, n := range drifted {
		what := "restored by this plan"
		switch {
		case onDrift[n.Pool]:
			what, reported = `reported only: pool on_drift = "report"`, reported+1
		case !n.Changed():
			what = "not restored now: " + cmp.Or(n.Held, "not targeted")
		default:
			restored++
		}
		fmt.Fprintf(w, "\n  %s (pool %s, %s; %s)\n", c.bold("node."+n.Name), n.Pool, n.From, what)
		if n.DriftUnderWay != "" {
			fmt.Fprintf(w, "    an update to %s is under way on it, unfinished (an interrupted apply's, or its agent's): what differs may be that update's writes\n", n.DriftUnderWay)
		}
		for _, d := range n.Drift {
			fmt.Fprintf(w, "    %s%s\n", c.yellow("drift: "), d.String())
			writeDiff(w, c, "        ", d.Diff)
		}
		if n.DriftUnlisted > 0 {
			fmt.Fprintf(w, "    %sand %d more paths, not listed\n", c.yellow("drift: "), n.DriftUnlisted)
		}
	}
	if restored > 0 {
		fmt.Fprintf(w, "\nThe steps below put the drift back (each file with its own on_change policy, kernel arguments\n"+
			"and OS image with a reboot). They are changes apply makes (plan -detailed-exitcode exits 2 for\n"+
			"them), not of the configuration (-detailed-exitcode=config does not count them); `mcp drift`\n"+
			"reports drift alone.\n")
	}
	if reported > 0 {
		fmt.Fprintf(w, "\nDrift in pools with on_drift = \"report\" is shown only: nothing is planned for it.\n")
	}
}

// driftCause says what changed the drifted nodes: outside of mcp, unless an update under
// way on a node (an interrupted apply's) may have written what differs.
func driftCause(drifted []*planner.NodePlan) string {
	underWay := 0
	for _, n := range drifted {
		if n.DriftUnderWay != "" {
			underWay++
		}
	}
	switch underWay {
	case 0:
		return "changed outside of mcp"
	case len(drifted):
		return "perhaps by an unfinished update, said below"
	}
	return "changed outside of mcp, or by an unfinished update, said below"
}
