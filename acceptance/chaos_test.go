package acceptance

import (
	"context"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/internal/chaos"
)

// TestChaosKillsApply is the short run of the crash harness (make chaos runs 50 kills):
// the real mcp binary SIGKILLed 10 times at seeded random moments while it rolls out a
// reboot to 100 local nodes in 3 pools, then re-run until the plan is empty. Judged from
// the fleet's own event logs: no double reboot, no node left cordoned, no pool ever over
// its max_unavailable, and the state readable after every kill.
func TestChaosKillsApply(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash harness takes about a minute")
	}
	rep, err := chaos.Run(context.Background(), chaos.Options{MCP: mcpBinary(t), Dir: t.TempDir(), Seed: 10,
		Kills: 10, MaxDelay: 1500 * time.Millisecond, DrainDuration: 40 * time.Millisecond, RebootDuration: 150 * time.Millisecond,
		Log: t.Logf})
	if rep != nil {
		t.Logf("\n%s", rep)
	}
	if err != nil {
		t.Fatal(err)
	}
	if rep.Kills != 10 || rep.StateChecks != 10 || rep.Reboots < 100 {
		t.Errorf("the run did not do what it says: %d kills, %d state checks, %d reboots", rep.Kills, rep.StateChecks, rep.Reboots)
	}
}
