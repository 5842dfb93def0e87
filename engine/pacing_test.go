package engine

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// jumpClock is a fake clock that never sleeps: a wait moves it forward at once by what was
// waited for. Times it reads are compared with the pacing asked for; no test sleeps.
type jumpClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *jumpClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *jumpClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.now = c.now.Add(d)
	}
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

// clockTrace records, on the fake clock, when each node was cordoned and finished, and the
// reasons apply gave for waiting.
type clockTrace struct {
	mu      sync.Mutex
	clock   *jumpClock
	start   map[string]time.Time
	done    map[string]time.Time
	waiting []string
	order   []string // nodes in the order they started
}

func newClockTrace(now string) *clockTrace {
	t, _ := time.Parse(time.RFC3339, now)
	return &clockTrace{clock: &jumpClock{now: t}, start: map[string]time.Time{}, done: map[string]time.Time{}}
}

func (c *clockTrace) observe(e Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	switch {
	case e.Kind == EventStepStart && e.Step.Kind == model.StepCordon:
		c.start[e.Node] = now
		c.order = append(c.order, e.Node)
	case e.Kind == EventNodeDone || e.Kind == EventNodeFailed:
		c.done[e.Node] = now
	case e.Kind == EventWaiting:
		c.waiting = append(c.waiting, e.Reason)
	}
}

func (c *clockTrace) opts() ApplyOptions {
	return ApplyOptions{Clock: c.clock, Observer: c.observe, BudgetPoll: time.Millisecond}
}

// The canary nodes run alone; the others start only after the canary soak, counted from
// the last canary's end.
func TestApplyCanaryThenSoak(t *testing.T) {
	f := newFake(map[string]int{"worker": 4})
	w, st := newTestWorkspace(t, f)
	p := planFor(f, map[string]int{"worker": 3}, rebootSteps())
	p.Pools[0].Canary, p.Pools[0].CanarySoak = 1, 10*time.Minute
	p.Nodes[0].Canary = true
	tr := newClockTrace("2026-11-27T12:00:00Z")
	res, err := w.carryOutPlanned(context.Background(), st, p, tr.opts())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Updated) != 4 {
		t.Fatalf("updated %v, want all 4", res.Updated)
	}
	if tr.order[0] != "worker-0" {
		t.Fatalf("start order %v, want the canary worker-0 first", tr.order)
	}
	soakEnd := tr.done["worker-0"].Add(10 * time.Minute)
	for _, n := range []string{"worker-1", "worker-2", "worker-3"} {
		if tr.start[n].Before(soakEnd) {
			t.Errorf("%s started at %s, before the canary's end + soak (%s)", n, tr.start[n].Format(time.TimeOnly), soakEnd.Format(time.TimeOnly))
		}
	}
	if len(tr.waiting) == 0 || !strings.Contains(tr.waiting[0], "canary soak 10m after worker-0") {
		t.Errorf("waiting events %q, want the canary soak named", tr.waiting)
	}
	if f.maxBusy["worker"] < 2 {
		t.Errorf("after the canary the pool never used more than one slot (max %d)", f.maxBusy["worker"])
	}
}

// A failed canary stops its pool even when max_failures would allow more.
func TestApplyFailedCanaryStopsPool(t *testing.T) {
	f := newFake(map[string]int{"worker": 3})
	f.failNode["worker-0"] = "drain"
	w, st := newTestWorkspace(t, f)
	p := planFor(f, map[string]int{"worker": 2}, rebootSteps())
	p.Pools[0].Canary, p.Pools[0].MaxFailures = 1, 3
	p.Nodes[0].Canary = true
	res, err := w.carryOutPlanned(context.Background(), st, p, ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), "a canary node failed (canary: worker-0): the other 2 nodes not started") {
		t.Fatalf("error %v, want the failed canary named", err)
	}
	if d := cmp.Diff([]string{"worker-1", "worker-2"}, res.Skipped); d != "" || len(f.trace["worker-1"]) > 0 {
		t.Errorf("skipped (-want +got):\n%s; worker-1 trace %v", d, f.trace["worker-1"])
	}
}

// max_failures N: the pool starts nodes until N have failed, then no more.
func TestApplyMaxFailures(t *testing.T) {
	for _, tt := range []struct {
		max              int
		updated, skipped []string
	}{
		{1, nil, []string{"worker-1", "worker-2", "worker-3", "worker-4"}},
		{2, []string{"worker-1"}, []string{"worker-3", "worker-4"}},
	} {
		f := newFake(map[string]int{"worker": 5})
		f.failNode["worker-0"], f.failNode["worker-2"] = "drain", "drain"
		w, st := newTestWorkspace(t, f)
		p := planFor(f, map[string]int{"worker": 1}, rebootSteps())
		p.Pools[0].MaxFailures = tt.max
		res, err := w.carryOutPlanned(context.Background(), st, p, ApplyOptions{})
		if err == nil {
			t.Fatalf("max_failures %d: no error", tt.max)
		}
		if d := cmp.Diff(tt.updated, res.Updated); d != "" {
			t.Errorf("max_failures %d: updated (-want +got):\n%s", tt.max, d)
		}
		if d := cmp.Diff(tt.skipped, res.Skipped); d != "" {
			t.Errorf("max_failures %d: skipped (-want +got):\n%s", tt.max, d)
		}
		for _, n := range tt.skipped {
			if len(f.trace[n]) > 0 {
				t.Errorf("max_failures %d: %s was touched: %v", tt.max, n, f.trace[n])
			}
		}
	}
}

// soak keeps a finished node's slot taken: with max_unavailable 1, each node starts no
// sooner than soak after the one before it finished.
func TestApplySoakKeepsTheSlot(t *testing.T) {
	f := newFake(map[string]int{"worker": 3})
	w, st := newTestWorkspace(t, f)
	p := planFor(f, map[string]int{"worker": 1}, rebootSteps())
	p.Pools[0].Soak = 5 * time.Minute
	tr := newClockTrace("2026-11-27T12:00:00Z")
	if _, err := w.carryOutPlanned(context.Background(), st, p, tr.opts()); err != nil {
		t.Fatal(err)
	}
	for i, n := range []string{"worker-1", "worker-2"} {
		prev := tr.order[i]
		if tr.order[i+1] != n || tr.start[n].Before(tr.done[prev].Add(5*time.Minute)) {
			t.Errorf("%s started at %s; %s finished at %s: want a 5m soak between", n,
				tr.start[n].Format(time.TimeOnly), prev, tr.done[prev].Format(time.TimeOnly))
		}
	}
}

func weekendWindow() []model.Window {
	return []model.Window{{Days: []time.Weekday{time.Saturday, time.Sunday}, Start: 2 * time.Hour,
		Duration: time.Hour, Location: time.UTC, Zone: "UTC"}}
}

// Apply starts a pool's nodes only while a window is open: it waits for the opening, and
// a node that would start after the window closed waits for the next one when -budget-wait
// allows waiting that long.
func TestApplyWaitsForTheWindow(t *testing.T) {
	f := newFake(map[string]int{"worker": 3})
	w, st := newTestWorkspace(t, f)
	w.Desired = &model.Desired{Pools: []model.Pool{{Name: "worker", Windows: weekendWindow()}}}
	p := planFor(f, map[string]int{"worker": 1}, rebootSteps())
	p.Pools[0].Soak = 40 * time.Minute          // worker-0 at 02:00, worker-1 at 02:40, worker-2 not before Sunday
	tr := newClockTrace("2026-11-27T12:00:00Z") // a Friday
	opts := tr.opts()
	opts.BudgetWait = 24 * time.Hour // Saturday's window closes at 03:00, Sunday's opens at 02:00
	res, err := w.carryOutPlanned(context.Background(), st, p, opts)
	if err != nil || len(res.Updated) != 3 {
		t.Fatalf("updated %v, error %v", res.Updated, err)
	}
	for n, r := range tr.start {
		open, _, _ := planner.WindowState(weekendWindow(), r)
		if !open {
			t.Errorf("%s started at %s, outside the window", n, r.Format(time.RFC3339))
		}
	}
	sunday, _ := time.Parse(time.RFC3339, "2026-11-29T02:00:00Z")
	if tr.start["worker-2"].Before(sunday) {
		t.Errorf("worker-2 started at %s, want not before Sunday's window: Saturday's closed at 03:00", tr.start["worker-2"].Format(time.RFC3339))
	}
	if len(tr.waiting) == 0 || !strings.Contains(tr.waiting[0], "next opening Sat 2026-11-28 02:00 UTC (in 14h)") {
		t.Errorf("waiting events %q, want the next opening named", tr.waiting)
	}
}

// With -no-wait a pool whose window is closed is left as it is: no node touched, its boot
// pointer not moved, and the error names the next opening. Other pools go on.
func TestApplyNoWaitLeavesAClosedPool(t *testing.T) {
	f := newFake(map[string]int{"worker": 2, "infra": 1})
	w, st := newTestWorkspace(t, f)
	w.Desired = &model.Desired{Pools: []model.Pool{{Name: "worker", Windows: weekendWindow()}, {Name: "infra"}}}
	p := planFor(f, map[string]int{"worker": 1, "infra": 1}, rebootSteps())
	tr := newClockTrace("2026-11-27T12:00:00Z")
	opts := tr.opts()
	opts.NoWait = true
	res, err := w.carryOutPlanned(context.Background(), st, p, opts)
	if err == nil || !strings.Contains(err.Error(), "pool worker: not started (-no-wait)") ||
		!strings.Contains(err.Error(), "next opening Sat 2026-11-28 02:00 UTC (in 14h)") {
		t.Fatalf("error %v, want the pool not started and its next opening named", err)
	}
	if d := cmp.Diff([]string{"worker-0", "worker-1"}, res.Skipped); d != "" {
		t.Errorf("skipped (-want +got):\n%s", d)
	}
	if len(f.trace["worker-0"])+len(f.trace["worker-1"]) > 0 || len(f.trace["infra-0"]) == 0 {
		t.Errorf("trace %v: want the worker pool untouched and infra updated", f.trace)
	}
	st2, _ := w.Backend.Read(context.Background())
	if _, moved := st2.Pointers["worker"]; moved || st2.Pointers["infra"] == "" {
		t.Errorf("pointers %v: want worker's not moved, infra's moved", st2.Pointers)
	}
}

// A window that closes mid-rollout ends the pool's rollout when apply may not wait for the
// next opening — -no-wait, or an opening later than -budget-wait allows (the default 10m
// among them): the node started finishes, nothing new starts, the nodes left are not
// started, named in the error with the next opening, and apply returns at once instead of
// waiting for Sunday.
func TestApplyWindowClosingMidRollout(t *testing.T) {
	sunday, _ := time.Parse(time.RFC3339, "2026-11-29T02:00:00Z")
	for _, tt := range []struct {
		name string
		opts func(*ApplyOptions)
		want string
	}{
		{"-no-wait", func(o *ApplyOptions) { o.NoWait = true }, "-no-wait: not waiting for it"},
		{"-budget-wait=5s", func(o *ApplyOptions) { o.BudgetWait = 5 * time.Second }, "later than -budget-wait 5s allows waiting"},
		{"default -budget-wait", func(*ApplyOptions) {}, "later than -budget-wait 10m allows waiting"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(map[string]int{"worker": 4})
			w, st := newTestWorkspace(t, f)
			w.Desired = &model.Desired{Pools: []model.Pool{{Name: "worker", Windows: weekendWindow()}}}
			p := planFor(f, map[string]int{"worker": 1}, rebootSteps())
			p.Pools[0].Soak = 40 * time.Minute          // worker-0 at 02:00, worker-1 at 02:40, worker-2 at 03:20: closed
			tr := newClockTrace("2026-11-28T02:00:00Z") // Saturday, as the window opens
			opts := tr.opts()
			tt.opts(&opts)
			res, err := w.carryOutPlanned(context.Background(), st, p, opts)
			if err == nil || !strings.Contains(err.Error(), "pool worker: 2 nodes not started (worker-2, worker-3): its maintenance window closed during the rollout") ||
				!strings.Contains(err.Error(), "next opening Sun 2026-11-29 02:00 UTC") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want the nodes left, the closed window, the next opening and %q", err, tt.want)
			}
			if d := cmp.Diff([]string{"worker-0", "worker-1"}, res.Updated); d != "" {
				t.Errorf("updated (-want +got):\n%s", d)
			}
			if d := cmp.Diff([]string{"worker-2", "worker-3"}, res.Skipped); d != "" {
				t.Errorf("skipped (-want +got):\n%s", d)
			}
			if len(f.trace["worker-2"])+len(f.trace["worker-3"]) > 0 {
				t.Errorf("nodes not started were touched: %v", f.trace)
			}
			if now := tr.clock.Now(); !now.Before(sunday) {
				t.Errorf("apply returned at %s: it waited for the next opening", now.Format(time.RFC3339))
			}
		})
	}
}
