package views

import (
	"testing"
	"time"

	"github.com/mcpfleet/mcp/planner"
)

// The estimate's words: what it is made from, and how it fits the pool's windows.
func TestEstimateText(t *testing.T) {
	sat := time.Date(2026, 12, 12, 2, 0, 0, 0, time.UTC)
	base := planner.Estimate{Duration: 42 * time.Minute, Node: 14 * time.Minute, Waves: 3, ObservedNodes: 12}
	for _, tc := range []struct {
		name string
		edit func(e *planner.Estimate)
		want string
	}{
		{"observed", func(*planner.Estimate) {}, "~42m (3 waves, 14m a node) from 12 observed nodes"},
		{"defaults", func(e *planner.Estimate) { e.ObservedNodes, e.Defaults = 0, []string{"drain", "reboot"} },
			"~42m (3 waves, 14m a node) estimated from defaults (no node of the pool finished an update yet)"},
		{"some defaults", func(e *planner.Estimate) { e.Defaults = []string{"reboot"} },
			"~42m (3 waves, 14m a node) from 12 observed nodes (defaults for reboot)"},
		{"soak", func(e *planner.Estimate) { e.Soak = 10 * time.Minute; e.Duration = 52 * time.Minute },
			"~52m (3 waves, 14m a node, 10m of soak) from 12 observed nodes"},
		{"fits", func(e *planner.Estimate) { e.Window = &planner.WindowFit{Opens: sat, Open: 4 * time.Hour, Windows: 1} },
			"~42m (3 waves, 14m a node) from 12 observed nodes; fits in the window opening Sat 2026-12-12 02:00 UTC (4h)"},
		{"two windows", func(e *planner.Estimate) {
			e.Window = &planner.WindowFit{Opens: sat, Open: 30 * time.Minute, Windows: 2}
		},
			"~42m (3 waves, 14m a node) from 12 observed nodes; needs 2 windows (the first: the window opening Sat 2026-12-12 02:00 UTC (30m)): " +
				"when a window closes apply starts no more nodes, and a later apply goes on"},
		{"does not fit", func(e *planner.Estimate) { e.Window = &planner.WindowFit{Opens: sat, Open: time.Minute} },
			"~42m (3 waves, 14m a node) from 12 observed nodes; does not fit in the next 8 windows (the first: the window opening Sat 2026-12-12 02:00 UTC (1m))"},
		{"short", func(e *planner.Estimate) { e.Duration, e.Node = 1234567*time.Microsecond, 3456*time.Microsecond },
			"~1.2s (3 waves, 3ms a node) from 12 observed nodes"},
	} {
		e := base
		tc.edit(&e)
		if got := estimateText(&e); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// A cluster's row in a plan across clusters shows its longest pool's estimate.
func TestEstimateCell(t *testing.T) {
	for _, tc := range []struct {
		pools []planner.PoolPlan
		want  string
	}{
		{nil, "-"},
		{[]planner.PoolPlan{{Name: "a"}}, "-"},
		{[]planner.PoolPlan{{Name: "a", Estimate: &planner.Estimate{Duration: time.Hour, ObservedNodes: 3}},
			{Name: "b", Estimate: &planner.Estimate{Duration: 20 * time.Minute, ObservedNodes: 3}}}, "~1h"},
		{[]planner.PoolPlan{{Name: "a", Estimate: &planner.Estimate{Duration: 5 * time.Minute, ObservedNodes: 3}},
			{Name: "b", Estimate: &planner.Estimate{Duration: 20 * time.Minute}}}, "~20m (defaults)"},
	} {
		if got := estimateCell(&planner.Rollout{Pools: tc.pools}); got != tc.want {
			t.Errorf("estimateCell(%+v) = %q, want %q", tc.pools, got, tc.want)
		}
	}
}
