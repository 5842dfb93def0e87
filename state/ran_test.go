package state

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

var t0 = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)

// The records of where configs ran go through the state's JSON unchanged, and a refresh
// extends a node's run, marks a Degraded one, and leaves a drifted one as it was.
func TestRanRoundTripAndObserve(t *testing.T) {
	s := New()
	s.Rendered["rendered-worker-a"] = &model.Rendered{Name: "rendered-worker-a"}
	s.Reached("rendered-worker-a", "worker", "w-0", t0)
	s.Reached("rendered-worker-a", "worker", "w-1", t0)
	s.Reached("rendered-worker-a", "worker", "w-2", t0)
	pool := map[string]string{"w-0": "worker", "w-1": "worker", "w-2": "worker", "w-3": "worker"}
	s.Observe([]model.Node{
		{Name: "w-0", CurrentConfig: "rendered-worker-a", DesiredConfig: "rendered-worker-a", State: model.StateDone},
		{Name: "w-1", CurrentConfig: "rendered-worker-a", DesiredConfig: "rendered-worker-a", State: model.StateDegraded, Reason: "chronyd failed"},
		{Name: "w-2", CurrentConfig: "rendered-worker-a", DesiredConfig: "rendered-worker-a", Drift: []model.Drift{{Path: "/etc/motd"}}},
		{Name: "w-3", CurrentConfig: "rendered-worker-unknown", DesiredConfig: "rendered-worker-unknown"},
	}, pool, t0.Add(time.Hour))
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*Ran{"rendered-worker-a": {Pool: "worker", Nodes: map[string]NodeRan{
		"w-0": {Since: t0, Seen: t0.Add(time.Hour)},
		"w-1": {Since: t0, Seen: t0, Unhealthy: "went Degraded: chronyd failed"},
		"w-2": {Since: t0, Seen: t0},
	}}}
	if d := cmp.Diff(want, got.Ran); d != "" {
		t.Errorf("records after a round trip (-want +got):\n%s", d)
	}
	if soaked := got.Ran["rendered-worker-a"].Nodes["w-0"].Soaked(); soaked != time.Hour {
		t.Errorf("w-0 soaked %s, want 1h", soaked)
	}
}

// Records are bounded: those of pruned rendered configs go, then all but the MaxRan most
// recently seen.
func TestTrimRan(t *testing.T) {
	s := New()
	for i := range MaxRan + 5 {
		name := "rendered-worker-" + string(rune('a'+i))
		s.Rendered[name] = &model.Rendered{Name: name}
		s.Reached(name, "worker", "w-0", t0.Add(time.Duration(i)*time.Minute))
	}
	s.Reached("gone", "worker", "w-0", t0.Add(time.Hour))
	s.TrimRan()
	if len(s.Ran) != MaxRan || s.Ran["gone"] != nil || s.Ran["rendered-worker-a"] != nil || s.Ran["rendered-worker-"+string(rune('a'+MaxRan+4))] == nil {
		t.Errorf("after TrimRan: %d records, gone %v, oldest %v", len(s.Ran), s.Ran["gone"], s.Ran["rendered-worker-a"])
	}
}
