package views

import (
	"fmt"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// estimateText says how long the pool's rollout is expected to take, what from, and how
// it fits the pool's windows: "~42m (3 waves, 14m a node) from 12 observed nodes; fits in
// the window opening Sat 2026-12-12 02:00 CET (4h)".
func estimateText(e *planner.Estimate) string {
	s := fmt.Sprintf("~%s (%s, %s a node", rough(e.Duration), plural(e.Waves, "%d wave", "%d waves"), rough(e.Node))
	if e.Soak > 0 {
		s += ", " + rough(e.Soak) + " of soak"
	}
	s += ") " + estimateSource(e)
	if f := e.Window; f != nil {
		s += "; " + fitText(f)
	}
	return s
}

// estimateSource says what the estimate is made from.
func estimateSource(e *planner.Estimate) string {
	if e.ObservedNodes == 0 {
		return "estimated from defaults (no node of the pool finished an update yet)"
	}
	s := "from " + plural(e.ObservedNodes, "%d observed node", "%d observed nodes")
	if len(e.Defaults) > 0 {
		s += " (defaults for " + strings.Join(e.Defaults, ", ") + ")"
	}
	return s
}

// fitText says how a rollout fits its pool's windows.
func fitText(f *planner.WindowFit) string {
	first := fmt.Sprintf("the window opening %s (%s)", f.Opens.Format(windowTime), rough(f.Open))
	switch f.Windows {
	case 0:
		return fmt.Sprintf("does not fit in the next %d windows (the first: %s)", planner.MaxWindows, first)
	case 1:
		return "fits in " + first
	}
	return fmt.Sprintf("needs %d windows (the first: %s): when a window closes apply starts no more nodes, and a later apply goes on",
		f.Windows, first)
}

// estimateShort is the estimate in a few words, for markdown's pool heading: "~42m from
// 12 observed nodes, fits in the window opening …".
func estimateShort(e *planner.Estimate) string {
	s := "~" + rough(e.Duration)
	if e.ObservedNodes == 0 {
		s += " from defaults"
	} else {
		s += " from " + plural(e.ObservedNodes, "%d observed node", "%d observed nodes")
	}
	if f := e.Window; f != nil {
		s += ", " + fitText(f)
	}
	return s
}

// rough is d rounded for people: milliseconds under a second, tenths of a second under
// 10s, seconds under an hour, else minutes.
func rough(d time.Duration) string {
	switch {
	case d < time.Second:
		d = d.Round(time.Millisecond)
	case d < 10*time.Second:
		d = d.Round(100 * time.Millisecond)
	case d < time.Hour:
		d = d.Round(time.Second)
	default:
		d = d.Round(time.Minute)
	}
	return model.ShortDuration(d)
}

// estimateCell is a cluster's estimate in its row of a plan across clusters: its longest
// pool's (pools roll out side by side), "(defaults)" when a pool's is from defaults alone;
// "-" when no node starts.
func estimateCell(r *planner.Rollout) string {
	var longest time.Duration
	defaults, any := false, false
	for _, pp := range r.Pools {
		if e := pp.Estimate; e != nil {
			any = true
			longest = max(longest, e.Duration)
			defaults = defaults || e.ObservedNodes == 0
		}
	}
	switch {
	case !any:
		return "-"
	case defaults:
		return "~" + rough(longest) + " (defaults)"
	}
	return "~" + rough(longest)
}
