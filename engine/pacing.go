package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// Clock is the time apply's pacing goes by (ApplyOptions.Clock).
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// windows are the maintenance windows of the pool named pool (none: always open).
func (a *applier) windows(pool string) []model.Window {
	if a.w.Desired == nil {
		return nil
	}
	if p := a.w.Desired.Pool(pool); p != nil {
		return p.Windows
	}
	return nil
}

// closedPools decides once, as apply starts with NoWait, which pools it does not start
// because their windows are all closed: deciding once keeps the boot pointer (publish) and
// the nodes (run) of a pool together.
func (a *applier) closedPools() map[string]error {
	out := map[string]error{}
	now := a.opts.Clock.Now()
	for _, pp := range a.plan.Pools {
		ws := a.windows(pp.Name)
		if len(ws) == 0 || pp.Paused && (pp.Pause == nil || len(pp.Pause.Passing) == 0) {
			continue // nothing of the pool would start: its pause holds it all
		}
		if open, _, next := planner.WindowState(ws, now); !open {
			out[pp.Name] = notStarted(fmt.Errorf("pool %s: not started (-no-wait): its maintenance window is closed (%s); next opening %s: run mcp apply then, or without -no-wait to wait for it",
				pp.Name, planner.DescribeWindows(ws), planner.WhenFrom(next, now)))
		}
	}
	return out
}

func nodeNames(nodes []planner.NodePlan) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Name
	}
	return out
}

// poolNotStarted is the error of a pool whose nodes rest are not started, naming them: an
// ErrNotStarted.
func poolNotStarted(pool string, rest []planner.NodePlan, why string) error {
	return notStarted(restNotStarted(pool, rest, why))
}

// restNotStarted names the pool's nodes rest, not started, and why: an error of its own
// (poolNotStarted when it only says they were not started).
func restNotStarted(pool string, rest []planner.NodePlan, why string) error {
	names := nodeNames(rest)
	const shown = 10
	if len(names) > shown {
		names = append(names[:shown], fmt.Sprintf("and %d more", len(names)-shown))
	}
	noun := "nodes"
	if len(rest) == 1 {
		noun = "node"
	}
	return fmt.Errorf("pool %s: %d %s not started (%s): %s", pool, len(rest), noun, strings.Join(names, ", "), why)
}
