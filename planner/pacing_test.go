package planner

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

// A canary takes the first waves alone; the others start in waves after its last, and
// the plan carries the pool's pacing for apply and for people.
func TestCanaryWavesAndPacing(t *testing.T) {
	fleet := &model.Fleet{Nodes: []model.Node{node("w-0", "worker", "a", 0), node("w-1", "worker", "a", 1),
		node("w-2", "worker", "a", 2), node("w-3", "worker", "a", 3), node("w-4", "worker", "a", 4)}}
	fleet.Nodes[3].Ready = false // out of service: updated in its own slot, first in order
	pool := model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: 3},
		Pacing: model.Pacing{Canary: 2, CanarySoak: 10 * time.Minute, MaxFailures: 2, Soak: time.Minute}}
	p, err := MakePlan(Input{Desired: desired(pool), Fleet: fleet,
		Rendered: map[string]*model.Rendered{"worker": target("worker", file("/etc/a", "x"))}})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Wave   int
		Canary bool
	}
	got := map[string]row{}
	for _, n := range p.Nodes {
		got[n.Name] = row{n.Wave, n.Canary}
	}
	// w-3 (NotReady, first in order) and w-0 are the canary, both in wave 1; the others
	// share the 2 slots the budget leaves (3, less w-3 out of service) from wave 2.
	want := map[string]row{"w-3": {1, true}, "w-0": {1, true}, "w-1": {2, false}, "w-2": {2, false}, "w-4": {3, false}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("waves and canaries (-want +got):\n%s", d)
	}
	pp := p.Pools[0]
	if pp.Waves != 3 || pp.Canary != 2 || pp.CanarySoak != 10*time.Minute || pp.MaxFailures != 2 || pp.Soak != time.Minute {
		t.Errorf("pool plan %+v: want 3 waves and the pacing carried", pp)
	}
	if pp.Window != nil {
		t.Errorf("a pool without windows has a window status: %+v", pp.Window)
	}
}

func TestPlanShowsWindowAtItsTime(t *testing.T) {
	fleet := &model.Fleet{Nodes: []model.Node{node("w-0", "worker", "a", 0)}}
	pool := model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: 1},
		Windows: []model.Window{{Days: []time.Weekday{time.Saturday}, Start: 2 * time.Hour, Duration: 4 * time.Hour,
			Location: time.UTC, Zone: "UTC"}}}
	in := Input{Desired: desired(pool), Fleet: fleet, Now: utc("2026-11-27T12:00:00Z"),
		Rendered: map[string]*model.Rendered{"worker": target("worker", file("/etc/a", "x"))}}
	p, err := MakePlan(in)
	if err != nil {
		t.Fatal(err)
	}
	ws := p.Pools[0].Window
	if ws == nil || ws.Open || ws.NextOpening == nil || !ws.NextOpening.Equal(utc("2026-11-28T02:00:00Z")) ||
		!cmp.Equal(ws.Windows, []string{"sat 02:00 for 4h (UTC)"}) {
		t.Fatalf("window status %+v, want closed, next opening Saturday 02:00", ws)
	}
	// A closed window defers nothing in the plan: apply waits for it (or -no-wait says so).
	if p.Nodes[0].Deferred || p.Nodes[0].Wave != 1 {
		t.Errorf("node deferred=%v wave=%d: a window must not defer a node in the plan", p.Nodes[0].Deferred, p.Nodes[0].Wave)
	}
	in.Now = utc("2026-11-28T03:00:00Z")
	p, _ = MakePlan(in)
	if ws := p.Pools[0].Window; !ws.Open || ws.Closes == nil || !ws.Closes.Equal(utc("2026-11-28T06:00:00Z")) {
		t.Errorf("window status %+v at Saturday 03:00, want open until 06:00", ws)
	}
}

// A soaking node keeps its slot, and the reason says so.
func TestRoomForSoakingNode(t *testing.T) {
	nodes := []model.Node{node("w-0", "worker", "a", 0), node("w-1", "worker", "a", 1)}
	ok, why := RoomFor(1, "w-1", nodes, map[string]string{"w-0": "soaking until 12:05:00 UTC"})
	if ok || why != "max_unavailable 1: 1 of the pool's nodes is out of service: w-0 (soaking until 12:05:00 UTC)" {
		t.Errorf("RoomFor = %v, %q: want no room, the soaking node named", ok, why)
	}
}
