package views

import (
	"fmt"
	"strings"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// pacing is the pool line's note on how apply paces the pool, beyond max_unavailable:
// ", canary 1 then soak 10m, max_failures 2, soak 5m" ("" with none of them).
func pacing(pp planner.PoolPlan) string {
	var s []string
	if pp.Canary > 0 {
		c := fmt.Sprintf("canary %d", pp.Canary)
		if pp.CanarySoak > 0 {
			c += " then soak " + model.ShortDuration(pp.CanarySoak)
		}
		s = append(s, c)
	}
	if pp.MaxFailures > 1 {
		s = append(s, fmt.Sprintf("max_failures %d", pp.MaxFailures))
	}
	if pp.Soak > 0 {
		s = append(s, "soak "+model.ShortDuration(pp.Soak)+" after each node")
	}
	if len(s) == 0 {
		return ""
	}
	return ", " + strings.Join(s, ", ")
}

// windowLine says whether the pool's maintenance window is open at the plan's time, and
// when it closes or next opens.
func windowLine(c painter, ws *planner.WindowStatus) string {
	which := strings.Join(ws.Windows, "; ")
	if ws.Open && ws.Closes != nil {
		return fmt.Sprintf("%s open until %s (%s)", c.green("window:"), ws.Closes.Format(windowTime), which)
	}
	next := "never"
	if ws.NextOpening != nil {
		next = ws.NextOpening.Format(windowTime)
	}
	return fmt.Sprintf("%s closed: next opening %s (%s); apply waits for it, or with -no-wait leaves the pool as it is",
		c.yellow("window:"), next, which)
}

// windowTime is how the plan writes a window's times: in the window's zone.
const windowTime = "Mon 2006-01-02 15:04 MST"

// alertGateLine says what the pool's alert gate asks of Prometheus, and when.
func alertGateLine(c painter, g model.AlertGate) string {
	wait := "waits up to " + model.ShortDuration(g.Timeout) + " for them to stop"
	if g.Timeout == 0 {
		wait = "does not wait for them to stop"
	}
	return fmt.Sprintf("%s %s, before each node starts (apply %s) and after each finishes (one firing stops the pool)",
		c.green("gate:"), g, wait)
}
