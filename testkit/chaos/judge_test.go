package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/providers/local"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func ev(node string, ms int, kind local.EventKind, config ...string) local.Event {
	e := local.Event{Node: node, Time: t0.Add(time.Duration(ms) * time.Millisecond), Kind: kind}
	if len(config) > 0 {
		e.DesiredConfig = config[0]
	}
	return e
}

func judgeOf(logs map[string][]local.Event, kills ...int) *Report {
	r := &Report{Budget: map[string]int{"w": 1}}
	var ks []time.Time
	for _, k := range kills {
		ks = append(ks, t0.Add(time.Duration(k)*time.Millisecond))
	}
	judgeLogs(r, logs, ks)
	return r
}

// The judge catches each broken promise from the event logs alone.
func TestJudgeCatchesBrokenPromises(t *testing.T) {
	ok := judgeOf(map[string][]local.Event{
		"w-0": {ev("w-0", 0, local.EventCordon), ev("w-0", 5, local.EventReboot, "r1"), ev("w-0", 10, local.EventUncordon)},
		"w-1": {ev("w-1", 11, local.EventCordon), ev("w-1", 20, local.EventUncordon)},
	})
	if !ok.OK() || ok.MaxOut["w"] != 1 || ok.Reboots != 1 {
		t.Errorf("a rollout one at a time: %s", ok)
	}
	over := judgeOf(map[string][]local.Event{
		"w-0": {ev("w-0", 0, local.EventNotReady), ev("w-0", 30, local.EventReady)},
		"w-1": {ev("w-1", 10, local.EventWorking), ev("w-1", 20, local.EventDone)},
	})
	if over.OK() || over.MaxOut["w"] != 2 || !strings.Contains(over.Problems[0], "2 nodes out of service") {
		t.Errorf("two out at once with max_unavailable 1: %s", over)
	}
	twice := judgeOf(map[string][]local.Event{
		"w-0": {ev("w-0", 0, local.EventReboot, "r1"), ev("w-0", 10, local.EventReboot, "r2"), ev("w-0", 20, local.EventReboot, "r2"),
			ev("w-0", 30, local.EventCordon)},
	})
	if twice.DoubleReboots != 1 || len(twice.LeftCordoned) != 1 || len(twice.Problems) != 2 {
		t.Errorf("a second reboot into r2 and a node left cordoned: %s", twice)
	}
}

// A recovered event is dated no later than the kill of the writer that made its change,
// and no earlier than the node's previous event.
func TestJudgeDatesRecoveredEvents(t *testing.T) {
	late := ev("w-0", 500, local.EventUncordon)
	late.Recovered, late.LateStamp = true, true // made before the kill at 15 ms, logged by the next writer
	r := judgeOf(map[string][]local.Event{
		"w-0": {ev("w-0", 0, local.EventCordon), late},
		"w-1": {ev("w-1", 20, local.EventCordon), ev("w-1", 30, local.EventUncordon)},
	}, 15)
	if !r.OK() || r.MaxOut["w"] != 1 {
		t.Errorf("recovered uncordon dated at the kill: %s", r)
	}
	early := ev("w-0", 12, local.EventDone)
	early.Recovered, early.LateStamp = true, true // the last kill before it was long ago
	r = judgeOf(map[string][]local.Event{
		"w-0": {ev("w-0", 10, local.EventWorking), early},
		"w-1": {ev("w-1", 13, local.EventWorking), ev("w-1", 14, local.EventDone)},
	}, 1, 20)
	if !r.OK() {
		t.Errorf("a recovered event moved before its node's previous one: %s", r)
	}
	// A recovered event with its own stamp (taken before its change) keeps it: moving it
	// back to an earlier kill would make an overlap that never was.
	cordon := ev("w-1", 30, local.EventCordon)
	cordon.Recovered = true
	r = judgeOf(map[string][]local.Event{
		"w-0": {ev("w-0", 10, local.EventCordon), ev("w-0", 25, local.EventUncordon)},
		"w-1": {cordon, ev("w-1", 40, local.EventUncordon)},
	}, 5, 35)
	if !r.OK() {
		t.Errorf("a recovered cordon moved back to an earlier kill: %s", r)
	}
}
