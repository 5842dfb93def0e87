package views

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// PauseWords says a paused pool's pause for people, as plan and status show it: how, since
// when and for how long, what waits (the nodes, their steps, disruptive or not) and, for a
// pause of disruptive changes only, what it lets through.
func PauseWords(p *planner.PauseStatus, now time.Time) string {
	var b strings.Builder
	b.WriteString("paused")
	if p.Mode == model.PauseDisruptive {
		b.WriteString(" for disruptive changes (paused = \"disruptive\": what drains or reboots waits)")
	}
	switch {
	case p.Since != nil && !now.IsZero():
		fmt.Fprintf(&b, " since %s (for %s)", p.Since.UTC().Format("2006-01-02 15:04 MST"), planner.Roughly(max(now.Sub(*p.Since), 0)))
	case p.Since != nil:
		fmt.Fprintf(&b, " since %s", p.Since.UTC().Format("2006-01-02 15:04 MST"))
	default:
		b.WriteString(" (since when is recorded by the next apply, which holds its changes)")
	}
	if len(p.Waiting) == 0 {
		b.WriteString("; nothing waits")
	} else {
		verb := "wait"
		if len(p.Waiting) == 1 {
			verb = "waits"
		}
		fmt.Fprintf(&b, "; %s %s (%s): %s", plural(len(p.Waiting), "%d node", "%d nodes"), verb,
			strings.Join(p.Waiting, ", "), strings.Join(p.Steps, ", "))
		if p.Disruptive {
			b.WriteString(" — disruptive (drain or reboot)")
		} else {
			b.WriteString(" — none disruptive")
		}
	}
	var whole []string
	for _, n := range p.Passing {
		if !slices.Contains(p.Interim, n) {
			whole = append(whole, n)
		}
	}
	if len(whole) > 0 {
		fmt.Fprintf(&b, "; let through (no drain, no reboot): %s", strings.Join(whole, ", "))
	}
	if len(p.Interim) > 0 {
		fmt.Fprintf(&b, "; on an interim config now (what disrupts nothing; the rest waits): %s", strings.Join(p.Interim, ", "))
	}
	return b.String()
}

// InterimWords says a node's interim move: what it takes now, what waits for the pause.
func InterimWords(n *planner.NodePlan) string {
	var held []string
	for _, s := range n.Interim.Waiting {
		if s.Kind != model.StepCordon && s.Kind != model.StepUncordon {
			held = append(held, s.Key())
		}
	}
	return fmt.Sprintf("%s is its config with what disrupts nothing of %s; waiting for the pause: %s",
		n.To, n.Interim.Target, strings.Join(held, ", "))
}
