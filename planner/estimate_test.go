package planner

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []time.Duration
		want time.Duration
		ok   bool
	}{
		{nil, 0, false},
		{[]time.Duration{5}, 5, true},
		{[]time.Duration{9, 1, 5}, 5, true},
		{[]time.Duration{8, 2, 4, 6}, 5, true}, // the mean of the middle two
		{[]time.Duration{100, 1, 2}, 2, true},  // one slow node does not move it
	} {
		if got, ok := model.Median(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("Median(%v) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// A pool's record keeps the last model.MaxStepSamples of each kind, and counts at most as
// many nodes: the state stays bounded however many rollouts it sees.
func TestStepTimesBounded(t *testing.T) {
	var st model.StepTimes
	for i := range 3 * model.MaxStepSamples {
		st.Add(model.NodeTimes{Steps: []model.StepTime{{Kind: model.StepReboot, Took: time.Duration(i)}}, Health: time.Duration(i)})
	}
	if n := len(st.Steps[model.StepReboot]); n != model.MaxStepSamples || len(st.Health) != model.MaxStepSamples || st.Nodes != model.MaxStepSamples {
		t.Fatalf("kept %d reboots, %d health times, %d nodes; want %d each", n, len(st.Health), st.Nodes, model.MaxStepSamples)
	}
	if first := st.Steps[model.StepReboot][0]; first != time.Duration(2*model.MaxStepSamples) {
		t.Errorf("the oldest kept is %v, want the last %d kept", first, model.MaxStepSamples)
	}
	if err := st.Check(); err != nil {
		t.Error(err)
	}
}

// estimatePlan plans 5 nodes of pool whose config changes a file (a reboot: the default
// policy), with times recorded for it.
func estimatePlan(t *testing.T, pool model.Pool, times *model.StepTimes, now time.Time) PoolPlan {
	t.Helper()
	fleet := &model.Fleet{}
	for i := range 5 {
		fleet.Nodes = append(fleet.Nodes, node("w-"+string(rune('0'+i)), "worker", "a", i))
	}
	in := Input{Desired: desired(pool), Fleet: fleet, Now: now,
		Rendered: map[string]*model.Rendered{"worker": target("worker", file("/etc/a", "x"))}}
	if times != nil {
		in.StepTimes = map[string]*model.StepTimes{"worker": times}
	}
	p, err := MakePlan(in)
	if err != nil {
		t.Fatal(err)
	}
	return p.Pools[0]
}

// nodeKinds are the step kinds of a node of estimatePlan.
func nodeKinds(t *testing.T) []model.StepKind {
	p, err := MakePlan(Input{Desired: desired(model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: 1}}),
		Fleet:    &model.Fleet{Nodes: []model.Node{node("w-0", "worker", "a", 0)}},
		Rendered: map[string]*model.Rendered{"worker": target("worker", file("/etc/a", "x"))}})
	if err != nil {
		t.Fatal(err)
	}
	var ks []model.StepKind
	for _, s := range p.Nodes[0].Steps {
		ks = append(ks, s.Kind)
	}
	if len(ks) < 4 {
		t.Fatalf("a node's steps are %v: want a drain and a reboot among them", ks)
	}
	return ks
}

// A first rollout is estimated from the stated defaults, and says so.
func TestEstimateFromDefaults(t *testing.T) {
	pp := estimatePlan(t, model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: 2}}, nil, time.Time{})
	e := pp.Estimate
	if e == nil {
		t.Fatal("no estimate for a pool whose nodes change")
	}
	perNode := DefaultHealthTime
	var kinds []string
	for _, k := range nodeKinds(t) {
		perNode += DefaultStepTimes[k]
		kinds = append(kinds, k.String())
	}
	if e.ObservedNodes != 0 || e.Node != perNode || e.Waves != 3 || e.Duration != 3*perNode || e.Window != nil {
		t.Errorf("estimate %+v: want 3 waves of %v from defaults, no window", e, perNode)
	}
	for _, k := range append(kinds, "health") {
		if !contains(e.Defaults, k) {
			t.Errorf("defaults %v do not name %s", e.Defaults, k)
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Recorded times give each step kind its median (a slow outlier does not move it), the
// drain and the reboot included; what has no record takes its default, named.
func TestEstimateFromObservedMedians(t *testing.T) {
	kinds := nodeKinds(t)
	times := &model.StepTimes{Nodes: 3, Steps: map[model.StepKind][]time.Duration{}, Health: []time.Duration{time.Second, 2 * time.Second, time.Hour}}
	want := 2 * time.Second // the health gates' median
	for i, k := range kinds {
		if k == model.StepVerify {
			continue // never recorded: its default
		}
		d := time.Duration(i+1) * time.Minute
		times.Steps[k] = []time.Duration{d, d, 10 * time.Hour}
		want += d
	}
	want += DefaultStepTimes[model.StepVerify]
	pp := estimatePlan(t, model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: 2}}, times, time.Time{})
	e := pp.Estimate
	if e.Node != want || e.Duration != 3*want || e.ObservedNodes != 3 {
		t.Errorf("estimate %+v: want a node %v, 3 waves of it, from 3 nodes", e, want)
	}
	if d := cmp.Diff([]string{"verify"}, e.Defaults); d != "" && contains(kindNames(kinds), "verify") {
		t.Errorf("defaults (-want +got):\n%s", d)
	}
}

func kindNames(ks []model.StepKind) []string {
	var out []string
	for _, k := range ks {
		out = append(out, k.String())
	}
	return out
}

// The canary soak follows the canary's wave, the pool's soak each other wave but the last.
func TestEstimateSoaks(t *testing.T) {
	pool := model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: 2},
		Pacing: model.Pacing{Canary: 1, CanarySoak: 10 * time.Minute, Soak: time.Minute}}
	pp := estimatePlan(t, pool, nil, time.Time{})
	e := pp.Estimate
	// Wave 1 the canary, then 4 nodes in 2 waves of 2: 3 waves, a canary soak and one soak.
	if e.Waves != 3 || e.Soak != 11*time.Minute || e.Duration != 3*e.Node+11*time.Minute {
		t.Errorf("estimate %+v: want 3 waves with 10m canary soak and 1m soak", e)
	}
}

func TestWindowFit(t *testing.T) {
	sat := []model.Window{{Days: []time.Weekday{time.Saturday}, Start: 2 * time.Hour, Duration: 4 * time.Hour, Location: time.UTC}}
	fri := utc("2026-11-27T12:00:00Z") // a Friday
	for _, tc := range []struct {
		name string
		now  time.Time
		d    time.Duration
		want WindowFit
	}{
		{"fits the next opening", fri, 3 * time.Hour, WindowFit{Opens: utc("2026-11-28T02:00:00Z"), Open: 4 * time.Hour, Windows: 1}},
		{"exactly", fri, 4 * time.Hour, WindowFit{Opens: utc("2026-11-28T02:00:00Z"), Open: 4 * time.Hour, Windows: 1}},
		{"needs two", fri, 5 * time.Hour, WindowFit{Opens: utc("2026-11-28T02:00:00Z"), Open: 4 * time.Hour, Windows: 2}},
		{"open now, what is left of it", utc("2026-11-28T05:00:00Z"), 2 * time.Hour,
			WindowFit{Opens: utc("2026-11-28T05:00:00Z"), Open: time.Hour, Windows: 2}},
		{"does not fit in MaxWindows", fri, time.Duration(MaxWindows)*4*time.Hour + time.Minute,
			WindowFit{Opens: utc("2026-11-28T02:00:00Z"), Open: 4 * time.Hour}},
	} {
		got := windowFit(sat, tc.now, tc.d)
		if got == nil || !got.Opens.Equal(tc.want.Opens) || got.Open != tc.want.Open || got.Windows != tc.want.Windows {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if windowFit(nil, fri, time.Hour) != nil {
		t.Error("a pool without windows has a fit")
	}
}

// The plan carries the fit in the pool's estimate.
func TestEstimateInPlanFitsWindow(t *testing.T) {
	pool := model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: 5},
		Windows: []model.Window{{Days: []time.Weekday{time.Saturday}, Start: 2 * time.Hour, Duration: 4 * time.Hour, Location: time.UTC}}}
	e := estimatePlan(t, pool, nil, utc("2026-11-27T12:00:00Z")).Estimate
	if e.Window == nil || e.Window.Windows != 1 || !e.Window.Opens.Equal(utc("2026-11-28T02:00:00Z")) {
		t.Errorf("window fit %+v: want it to fit the Saturday window", e.Window)
	}
}

// The time left: running nodes end, then the rest in waves of slots; once nodes of this
// run finished, their median is the time per node.
func TestEstimateLeft(t *testing.T) {
	e := &Estimate{Node: 10 * time.Minute}
	if got := e.Left(2, 4, 0, nil, nil); got != 20*time.Minute {
		t.Errorf("4 nodes in 2 slots, none run: %v, want 20m", got)
	}
	if got := e.Left(2, 2, 0, []time.Duration{4 * time.Minute, 9 * time.Minute}, nil); got != 16*time.Minute {
		t.Errorf("2 running (4m and 9m in), 2 to go: %v, want 6m + 10m", got)
	}
	if got := e.Left(2, 2, time.Minute, nil, []time.Duration{time.Minute, 3 * time.Minute, 2 * time.Minute}); got != 3*time.Minute {
		t.Errorf("this run's nodes took 2m each: %v, want 2m + 1m soak", got)
	}
	if got := e.Left(2, 0, 0, []time.Duration{20 * time.Minute}, nil); got != 0 {
		t.Errorf("a node past its estimate: %v, want 0", got)
	}
}

// Stages ahead of the slots (max_staging above 0): the first wave's stage before it, max_staging
// at once; a later wave's behind the wave before, but for what outlasts it. With max_staging
// 0 each node's stage is in its slot.
func TestEstimateStagesAhead(t *testing.T) {
	steps := []model.Step{{Kind: model.StepStage}, {Kind: model.StepCordon}, {Kind: model.StepReboot}, {Kind: model.StepUncordon}}
	times := &model.StepTimes{Nodes: 1, Health: []time.Duration{0}, Steps: map[model.StepKind][]time.Duration{
		model.StepStage: {4 * time.Minute}, model.StepCordon: {0}, model.StepReboot: {time.Minute}, model.StepUncordon: {0}}}
	nodes := make([]NodePlan, 4)
	for i := range nodes {
		nodes[i] = NodePlan{Name: fmt.Sprint("w-", i), Action: NodeUpdate, To: "x", Steps: steps, Wave: i/2 + 1}
	}
	for _, tc := range []struct {
		staging int
		want    time.Duration
	}{
		{0, 2 * 5 * time.Minute}, // 2 waves of stage + reboot
		{2, 4*time.Minute + time.Minute + 3*time.Minute + time.Minute},
		{1, 2*4*time.Minute + time.Minute + 7*time.Minute + time.Minute}, // one at a time
	} {
		e := estimate(&PoolPlan{MaxStaging: tc.staging}, nodes, times, nil, time.Time{})
		if e.Duration != tc.want {
			t.Errorf("max_staging %d: %v, want %v", tc.staging, e.Duration, tc.want)
		}
	}
}

// max_staging defaults to the pool's max_unavailable count; 0 is kept.
func TestMaxStagingDefault(t *testing.T) {
	pool := model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: 40, Percent: true}}
	if pp := estimatePlan(t, pool, nil, time.Time{}); pp.MaxStaging != 2 {
		t.Errorf("max_staging %d, want max_unavailable 40%% of 5 nodes: 2", pp.MaxStaging)
	}
	zero := 0
	pool.Pacing.MaxStaging = &zero
	if pp := estimatePlan(t, pool, nil, time.Time{}); pp.MaxStaging != 0 {
		t.Errorf("max_staging %d, want the 0 configured", pp.MaxStaging)
	}
}
