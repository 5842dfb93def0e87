package views

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// A pause is said with since when and for how long, what waits and whether it disrupts,
// and what a pause of disruptive changes lets through.
func TestPauseWords(t *testing.T) {
	since := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	now := since.Add(6*24*time.Hour + time.Hour)
	for _, tc := range []struct {
		p    planner.PauseStatus
		now  time.Time
		want string
	}{
		{planner.PauseStatus{Mode: model.PauseAll, Since: &since, Waiting: []string{"w-0", "w-1"}, Steps: []string{"write /etc/a", "reboot"}, Disruptive: true}, now,
			"paused since 2026-12-01 08:00 UTC (for 6d1h); 2 nodes wait (w-0, w-1): write /etc/a, reboot — disruptive (drain or reboot)"},
		{planner.PauseStatus{Mode: model.PauseAll, Since: &since}, time.Time{}, "paused since 2026-12-01 08:00 UTC; nothing waits"},
		{planner.PauseStatus{Mode: model.PauseDisruptive, Waiting: []string{"w-1"}, Steps: []string{"reboot"}, Disruptive: true, Passing: []string{"w-0"}}, now,
			`paused for disruptive changes (paused = "disruptive": what drains or reboots waits) (since when is recorded by the next apply, which holds its changes); 1 node waits (w-1): reboot — disruptive (drain or reboot); let through (no drain, no reboot): w-0`},
		{planner.PauseStatus{Mode: model.PauseDisruptive, Waiting: []string{"w-0", "w-1"}, Steps: []string{"kargs", "reboot"}, Disruptive: true,
			Passing: []string{"w-0", "w-2"}, Interim: []string{"w-0"}}, now,
			`paused for disruptive changes (paused = "disruptive": what drains or reboots waits) (since when is recorded by the next apply, which holds its changes); 2 nodes wait (w-0, w-1): kargs, reboot — disruptive (drain or reboot); let through (no drain, no reboot): w-2; on an interim config now (what disrupts nothing; the rest waits): w-0`},
		{planner.PauseStatus{Mode: model.PauseAll, Waiting: []string{"w-0"}, Steps: []string{"write /etc/a"}}, now,
			"paused (since when is recorded by the next apply, which holds its changes); 1 node waits (w-0): write /etc/a — none disruptive"},
	} {
		if got := PauseWords(&tc.p, tc.now); got != tc.want {
			t.Errorf("PauseWords:\n got %s\nwant %s", got, tc.want)
		}
	}
	// The text and Markdown plans say it on the pool, with a non-default order.
	since2 := since
	p := &planner.Rollout{Pools: []planner.PoolPlan{{Name: "worker", Rendered: "r2", Previous: "r1", ReRendered: true, Size: 2, MaxUnavailable: 1,
		Updates: 2, Paused: true, Order: model.OrderNewest,
		Pause:    &planner.PauseStatus{Mode: model.PauseAll, Since: &since2, Waiting: []string{"w-1", "w-0"}, Steps: []string{"write /etc/a"}},
		Blockers: []planner.Blocker{{Kind: planner.BlockPaused, Message: "pool worker is paused: 2 node changes deferred"}}}},
		Nodes: []planner.NodePlan{{Name: "w-1", Pool: "worker", Action: planner.NodeUpdate, To: "r2", Deferred: true, Steps: []model.Step{{Kind: model.StepWrite, Target: "/etc/a"}}},
			{Name: "w-0", Pool: "worker", Action: planner.NodeUpdate, To: "r2", Deferred: true, Steps: []model.Step{{Kind: model.StepWrite, Target: "/etc/a"}}}}}
	var text, md bytes.Buffer
	if err := HumanPlan(&text, p, HumanOptions{Now: now}); err != nil {
		t.Fatal(err)
	}
	if err := Markdown(&md, &planfile.File{Rollout: p, Created: now}); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"text": text.String(), "markdown": md.String()} {
		if !strings.Contains(out, "pause: paused since 2026-12-01 08:00 UTC (for 6d1h); 2 nodes wait (w-1, w-0)") ||
			!strings.Contains(out, "order: zone, then newest") {
			t.Errorf("%s plan does not say the pause and the order:\n%s", name, out)
		}
	}
}
