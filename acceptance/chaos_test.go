package acceptance

import (
	"context"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/testkit/chaos"
)

// TestChaosKillsApply is the short run of the crash harness (make chaos runs 50): the real
// mcp binary disrupted 10 times at seeded random moments while it rolls out a reboot to 100
// local nodes in 3 pools — SIGKILL, SIGTERM, timeout's double SIGTERM, a terminal's SIGHUP,
// a closed stdout, a special file where it reads, nodes changed from outside, two applies
// with -lock=false at once — then re-run
// until the plan is empty. Judged from the fleet's own records: no double reboot, no node
// left cordoned, no pool over its max_unavailable when mcp took a node out, every reboot
// apply claimed in the node's event log, the lock released after every graceful stop, the
// state readable after every kill, and each node's root holding the last configuration.
func TestChaosKillsApply(t *testing.T) {
	exclusive(t)
	if testing.Short() {
		t.Skip("the crash harness takes about a minute")
	}
	faults := chaos.AllFaults
	rep, err := chaos.Run(context.Background(), chaos.Options{MCP: mcpBinary(t), Dir: t.TempDir(), Seed: 10,
		Kills: 10, Faults: faults, MaxDelay: 1500 * time.Millisecond, DrainDuration: 40 * time.Millisecond, RebootDuration: 150 * time.Millisecond,
		Log: t.Logf})
	if rep != nil {
		t.Logf("\n%s", rep)
	}
	if err != nil {
		t.Fatal(err)
	}
	if rep.Disruptions != 10 || rep.StateChecks != rep.Kills || rep.Kills == 0 || rep.Reboots < 100 || rep.RootsChecked != 100 {
		t.Errorf("the run did not do what it says: %d disruptions, %d kills, %d state checks, %d reboots, %d roots read",
			rep.Disruptions, rep.Kills, rep.StateChecks, rep.Reboots, rep.RootsChecked)
	}
	for _, f := range faults {
		if rep.Faults[f] == 0 {
			t.Errorf("no apply was disrupted by %s", f)
		}
	}
}
