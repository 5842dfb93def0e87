package views

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vbauerster/mpb/v8/decor"

	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// The lines' text, from the engine's events (the redrawing itself is mpb's, read back from
// a real terminal in acceptance/live_test.go).
func TestLiveLines(t *testing.T) {
	plan := &planner.Rollout{Nodes: []planner.NodePlan{
		{Name: "w-0", Pool: "worker", Action: planner.NodeUpdate},
		{Name: "w-1", Pool: "worker", Action: planner.NodeUpdate},
		{Name: "w-2", Pool: "worker", Action: planner.NodeUpdate},
		{Name: "w-3", Pool: "worker", Action: planner.NodeUpdate, Deferred: true},
		{Name: "i-0", Pool: "infra", Action: planner.NodeNoOp},
	}}
	var out bytes.Buffer
	l := NewLiveProgress(&out, false, plan)
	at := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return at.Add(7 * time.Second) }
	if l.pool["infra"] != nil {
		t.Error("a line for pool infra, which the plan changes nothing in")
	}
	drain := model.Step{Kind: model.StepDrain}
	for _, e := range []engine.Event{
		{Kind: engine.EventStepStart, Node: "w-0", Pool: "worker", Step: drain, Time: at},
		{Kind: engine.EventNodeDone, Node: "w-0", Pool: "worker", Time: at},
		{Kind: engine.EventStepStart, Node: "w-1", Pool: "worker", Step: drain, Time: at},
		{Kind: engine.EventChecking, Node: "w-1", Pool: "worker", Time: at.Add(2 * time.Second)},
		{Kind: engine.EventWaiting, Node: "w-2", Pool: "worker", Reason: "max_unavailable 1: w-1 (updating)", Time: at.Add(2 * time.Second)},
	} {
		l.Event(e)
	}
	lp := l.pool["worker"]
	if got, want := l.poolStatus(lp, 200), "1/3 done, 1 updating, waiting 5s before node.w-2: max_unavailable 1: w-1 (updating)"; got != want {
		t.Errorf("pool line:\n got %q\nwant %q", got, want)
	}
	if got, want := l.nodeStatus(l.node["w-1"]), "  node.w-1: health gates (5s)"; got != want {
		t.Errorf("node line:\n got %q\nwant %q", got, want)
	}
	l.Event(engine.Event{Kind: engine.EventNodeFailed, Node: "w-1", Pool: "worker", Err: errors.New(`health gate "app" did not pass`)})
	l.Event(engine.Event{Kind: engine.EventPoolStopped, Pool: "worker"})
	if got, want := l.poolStatus(lp, 200), "1/3 done, 1 failed, stopped"; got != want {
		t.Errorf("pool line after the failure:\n got %q\nwant %q", got, want)
	}
	if len(l.node) != 0 {
		t.Errorf("lines left for finished nodes: %v", l.node)
	}
	l.Summary(ApplySummary{Updated: 1, Failed: 1, Deferred: 2, Failures: []string{"node w-1: failed"}})
	if !strings.Contains(out.String(), "Apply failed. Nodes: 1 updated, 1 failed, 2 not started.") {
		t.Errorf("no summary after the lines:\n%s", out.String())
	}
}

// A pool's text fits the terminal: beside its bar what fits whole, so that the bar keeps
// its width, and the rest on the lines below, wrapped without a word cut (issue 33: it was
// cut at 80 columns, "waiting 0s before n…"); a wait for a node that has started since is
// no longer shown, and the final frame shows no wait.
func TestLivePoolTextFitsAndWaitsEnd(t *testing.T) {
	plan := &planner.Rollout{Nodes: []planner.NodePlan{
		{Name: "w-0", Pool: "worker", Action: planner.NodeUpdate},
		{Name: "w-1", Pool: "worker", Action: planner.NodeUpdate},
	}}
	var out bytes.Buffer
	l := NewLiveProgress(&out, true, plan)
	at := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return at }
	lp := l.pool["worker"]
	long := "max_unavailable 1: 1 of the pool's nodes is out of service: w-0 (updating, cordoned, waiting for its pods to come back)"
	l.Event(engine.Event{Kind: engine.EventStepStart, Node: "w-0", Pool: "worker", Step: model.Step{Kind: model.StepDrain}, Time: at})
	l.Event(engine.Event{Kind: engine.EventWaiting, Node: "w-1", Pool: "worker", Reason: long, Time: at})
	for _, cols := range []int{80, 70, 64} {
		frame := poolFrame(l, lp, cols)
		if frame[0] != "0/2 done, 1 updating" {
			t.Errorf("%d columns: beside the bar %q", cols, frame[0])
		}
		text := ansi.ReplaceAllString(strings.Join(frame[1:], " "), "")
		for _, line := range frame[1:] {
			if width(line) > cols {
				t.Errorf("%d columns: a line of %d: %q", cols, width(line), line)
			}
		}
		// Every word whole, in order, up to where the lines end ("…" after a whole word).
		text = strings.TrimSuffix(text, " …")
		if words := strings.Fields(text); !strings.HasPrefix("waiting 0s before node.w-1: "+long, strings.Join(words, " ")) || len(words) < 8 {
			t.Errorf("%d columns: the wait below the bar is not the reason's words, whole:\n%s", cols, strings.Join(frame, "\n"))
		}
	}
	if got := poolFrame(l, lp, 400); len(got) != 1 || got[0] != "0/2 done, 1 updating, \x1b[33mwaiting 0s\x1b[0m before node.w-1: "+long {
		t.Errorf("room enough: %q", got)
	}
	// w-1 starts: its wait is over; a late wait event for it changes nothing.
	l.Event(engine.Event{Kind: engine.EventStepStart, Node: "w-1", Pool: "worker", Step: model.Step{Kind: model.StepDrain}, Time: at})
	l.Event(engine.Event{Kind: engine.EventWaiting, Node: "w-1", Pool: "worker", Reason: long, Time: at})
	if got := l.poolStatus(lp, 300); strings.Contains(got, "waiting") {
		t.Errorf("a wait for a node that started: %q", got)
	}
	l.Event(engine.Event{Kind: engine.EventNodeDone, Node: "w-0", Pool: "worker", Time: at})
	l.Event(engine.Event{Kind: engine.EventNodeDone, Node: "w-1", Pool: "worker", Time: at})
	l.Stop()
	if got := poolFrame(l, lp, 80); len(got) != 1 || got[0] != "2/2 done" {
		t.Errorf("the final frame: %q", got)
	}
}

// poolFrame is what the live view draws of pool lp on a terminal cols wide: the text after
// its bar, then its lines below.
func poolFrame(l *LiveProgress, lp *livePool, cols int) []string {
	out := []string{l.poolStatus(lp, cols-len("pool."+lp.name)-1-barWidth-2)}
	var b bytes.Buffer
	for _, f := range l.poolBelow(lp) {
		f.Fill(&b, decor.Statistics{AvailableWidth: cols})
	}
	if b.Len() > 0 {
		out = append(out, strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")...)
	}
	return out
}

// A node's line wraps the same way: its first line fits, what it waits on goes below.
func TestLiveNodeLineWraps(t *testing.T) {
	plan := &planner.Rollout{Nodes: []planner.NodePlan{{Name: "w-0", Pool: "worker", Action: planner.NodeUpdate}}}
	l := NewLiveProgress(new(bytes.Buffer), false, plan)
	at := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return at }
	l.Event(engine.Event{Kind: engine.EventStepStart, Node: "w-0", Pool: "worker", Step: model.Step{Kind: model.StepDrain}, Time: at})
	l.Event(engine.Event{Kind: engine.EventNodeWaiting, Node: "w-0", Pool: "worker", Time: at,
		Reason: "eviction of demo/web-2 refused by PodDisruptionBudget demo/web-pdb (needs 2 healthy, has 2); retrying every 5s"})
	n := l.node["w-0"]
	first := l.nodeFirst(n, 40)
	var b bytes.Buffer
	for _, f := range l.nodeBelow(n) {
		f.Fill(&b, decor.Statistics{AvailableWidth: 40})
	}
	want := "  node.w-0: drain (0s): eviction of\n    demo/web-2 refused by\n    PodDisruptionBudget demo/web-pdb …\n"
	if got := first + "\n" + b.String(); got != want {
		t.Errorf("node lines at 40 columns:\n%s\nwant\n%s", got, want)
	}
}

func TestWrapWords(t *testing.T) {
	for _, c := range []struct {
		s    string
		cols int
		want []string
	}{
		{"a bb ccc", 0, []string{"a bb ccc"}},
		{"a bb ccc", 4, []string{"a bb", "ccc"}},
		{"a bb ccc dddd", 5, []string{"a bb", "ccc", "dddd"}},
		{"abcdefgh ij", 4, []string{"abcdefgh", "ij"}}, // a word wider than the line: alone
	} {
		if got := wrapWords(c.s, c.cols); !slices.Equal(got, c.want) {
			t.Errorf("wrapWords(%q, %d) = %q, want %q", c.s, c.cols, got, c.want)
		}
	}
	if got, want := wrapAbbrev("one two three four five six", 9, 2), []string{"one two", "three …"}; !slices.Equal(got, want) {
		t.Errorf("wrapAbbrev = %q, want %q", got, want)
	}
}

// Over a frame the terminal rewrapped when it shrank, the next frame moves up as many rows
// as the old one takes now, not as many lines as it had: none of it stays on the screen.
func TestReflowConsoleMovesUpOverRewrappedRows(t *testing.T) {
	var out bytes.Buffer
	cols := 160
	c := &reflowConsole{out: &out, size: func() (int, int, error) { return cols, 40, nil }}
	long := strings.Repeat("x", 150)
	c.WriteString("failed: printed once above the bars\n" + long + "\nshort\n")
	if err := c.Flush(2); err != nil {
		t.Fatal(err)
	}
	if out.String() != "failed: printed once above the bars\n"+long+"\nshort\n" {
		t.Errorf("first frame: %q", out.String())
	}
	out.Reset()
	cols = 80 // the 150-column line now takes two rows
	c.WriteString("a\nb\n")
	c.Flush(2)
	if want := "\x1b[3A\x1b[Ja\nb\n"; out.String() != want {
		t.Errorf("after the shrink: %q, want %q", out.String(), want)
	}
	out.Reset()
	c.WriteString("c\nd\n")
	c.Flush(2)
	if want := "\x1b[2A\x1b[Jc\nd\n"; out.String() != want {
		t.Errorf("then: %q, want %q", out.String(), want)
	}
}

// A node the alert gate holds: the pool's line says which alerts hold it; after a stop
// the pool shows stopped (the stop's own line is printed above the lines, as a failure's,
// which mpb writes only to a terminal).
func TestLiveAlertGate(t *testing.T) {
	plan := &planner.Rollout{Nodes: []planner.NodePlan{
		{Name: "w-0", Pool: "worker", Action: planner.NodeUpdate},
		{Name: "w-1", Pool: "worker", Action: planner.NodeUpdate},
	}}
	var out bytes.Buffer
	l := NewLiveProgress(&out, false, plan)
	at := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return at.Add(4 * time.Second) }
	lp := l.pool["worker"]
	held := `alert gate: 1 alert firing at http://p:9090: NodeDown{severity="critical"}: waiting until 10:10:00 UTC at most`
	l.Event(engine.Event{Kind: engine.EventWaiting, Node: "w-0", Pool: "worker", Reason: held, Time: at,
		Alerts: []model.Alert{{Labels: map[string]string{"alertname": "NodeDown", "severity": "critical"}}}})
	if got, want := l.poolStatus(lp, 300), "0/2 done, waiting 4s before node.w-0: "+held; got != want {
		t.Errorf("pool line:\n got %q\nwant %q", got, want)
	}
	l.Event(engine.Event{Kind: engine.EventStepStart, Node: "w-0", Pool: "worker", Step: model.Step{Kind: model.StepDrain}, Time: at})
	l.Event(engine.Event{Kind: engine.EventNodeDone, Node: "w-0", Pool: "worker", Time: at})
	stop := `alert gate: 1 alert firing at http://p:9090: NodeDown{severity="critical"}, after node w-0 finished: no more nodes of the pool start`
	l.Event(engine.Event{Kind: engine.EventAlertsFiring, Node: "w-0", Pool: "worker", Reason: stop, Time: at})
	l.Event(engine.Event{Kind: engine.EventPoolStopped, Pool: "worker"})
	if got, want := l.poolStatus(lp, 300), "1/2 done, stopped"; got != want {
		t.Errorf("pool line after the stop:\n got %q\nwant %q", got, want)
	}
	l.Stop()
}

// A node whose agent keeps apply waiting says on what, in its line, until its next step;
// the line view prints it once.
func TestLiveNodeWaitsOnItsAgent(t *testing.T) {
	plan := &planner.Rollout{Nodes: []planner.NodePlan{{Name: "w-0", Pool: "worker", Action: planner.NodeUpdate}}}
	l := NewLiveProgress(&bytes.Buffer{}, false, plan)
	at := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return at.Add(20 * time.Second) }
	write := model.Step{Kind: model.StepWrite, Target: "/etc/a"}
	why := "waiting for its agent to take up update u1 to rendered-worker-1 (handed over 15s ago; node_timeout 30m0s)"
	l.Event(engine.Event{Kind: engine.EventStepStart, Node: "w-0", Pool: "worker", Step: write, Time: at})
	l.Event(engine.Event{Kind: engine.EventNodeWaiting, Node: "w-0", Pool: "worker", Reason: why, Time: at.Add(15 * time.Second)})
	if got, want := l.nodeStatus(l.node["w-0"]), "  node.w-0: write /etc/a (20s): "+why; got != want {
		t.Errorf("node line:\n got %q\nwant %q", got, want)
	}
	l.Event(engine.Event{Kind: engine.EventStepDone, Node: "w-0", Pool: "worker", Step: write, Time: at.Add(20 * time.Second)})
	if got := l.nodeStatus(l.node["w-0"]); strings.Contains(got, "waiting") {
		t.Errorf("node line after its step: %q, want the wait gone", got)
	}
	var out bytes.Buffer
	NewHumanProgress(&out, false).Event(engine.Event{Kind: engine.EventNodeWaiting, Node: "w-0", Pool: "worker", Reason: why})
	if got, want := out.String(), "node.w-0: "+why+"\n"; got != want {
		t.Errorf("line view:\n got %q\nwant %q", got, want)
	}
}

// A pool's line shows the time left: at first from the plan's estimate, then, as nodes
// finish, from how long this run's nodes took; none once the pool has ended.
func TestLiveTimeLeft(t *testing.T) {
	plan := &planner.Rollout{Pools: []planner.PoolPlan{{Name: "worker", Slots: 1,
		Estimate: &planner.Estimate{Node: 10 * time.Minute, Duration: 30 * time.Minute, Waves: 3}}},
		Nodes: []planner.NodePlan{
			{Name: "w-0", Pool: "worker", Action: planner.NodeUpdate},
			{Name: "w-1", Pool: "worker", Action: planner.NodeUpdate},
			{Name: "w-2", Pool: "worker", Action: planner.NodeUpdate},
		}}
	var out bytes.Buffer
	l := NewLiveProgress(&out, false, plan)
	at := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	now := at
	l.now = func() time.Time { return now }
	lp := l.pool["worker"]
	drain := model.Step{Kind: model.StepDrain}
	l.Event(engine.Event{Kind: engine.EventStepStart, Node: "w-0", Pool: "worker", Step: drain, Time: at})
	now = at.Add(4 * time.Minute)
	if got, want := l.poolStatus(lp, 200), "0/3 done, 1 updating, ~26m left"; got != want {
		t.Errorf("from the plan's estimate:\n got %q\nwant %q", got, want)
	}
	// w-0 took 2m: the two left are expected to take as long.
	l.Event(engine.Event{Kind: engine.EventNodeDone, Node: "w-0", Pool: "worker", Time: at.Add(2 * time.Minute)})
	now = at.Add(2 * time.Minute)
	if got, want := l.poolStatus(lp, 200), "1/3 done, ~4m left"; got != want {
		t.Errorf("after a node took 2m:\n got %q\nwant %q", got, want)
	}
	for _, n := range []string{"w-1", "w-2"} {
		l.Event(engine.Event{Kind: engine.EventStepStart, Node: n, Pool: "worker", Step: drain, Time: now})
		l.Event(engine.Event{Kind: engine.EventNodeDone, Node: n, Pool: "worker", Time: now})
	}
	if got, want := l.poolStatus(lp, 200), "3/3 done"; got != want {
		t.Errorf("once done:\n got %q\nwant %q", got, want)
	}
	l.Stop()
}

// Stages ahead of the slots are counted on the pool's line — staging, then staged until
// the node's slot starts — and give the node no line of its own: it is not updating. A
// stage that failed ahead is no failure of the node.
func TestLiveStagingAhead(t *testing.T) {
	plan := &planner.Rollout{Nodes: []planner.NodePlan{
		{Name: "w-0", Pool: "worker", Action: planner.NodeUpdate},
		{Name: "w-1", Pool: "worker", Action: planner.NodeUpdate},
		{Name: "w-2", Pool: "worker", Action: planner.NodeUpdate},
	}}
	var out bytes.Buffer
	l := NewLiveProgress(&out, false, plan)
	at := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	lp := l.pool["worker"]
	stage := model.Step{Kind: model.StepStage}
	l.Event(engine.Event{Kind: engine.EventStepStart, Node: "w-0", Pool: "worker", Step: stage, Ahead: true, Time: at})
	l.Event(engine.Event{Kind: engine.EventStepStart, Node: "w-1", Pool: "worker", Step: stage, Ahead: true, Time: at})
	if got := l.poolStatus(lp, 300); got != "0/3 done, 2 staging ahead" || len(l.node) != 0 {
		t.Errorf("two staging: %q, %d node lines", got, len(l.node))
	}
	l.Event(engine.Event{Kind: engine.EventStepDone, Node: "w-0", Pool: "worker", Step: stage, Ahead: true, Time: at})
	l.Event(engine.Event{Kind: engine.EventStepFailed, Node: "w-1", Pool: "worker", Step: stage, Ahead: true, Time: at,
		Err: errors.New("node w-1: stage: pulling: connection reset")})
	if got := l.poolStatus(lp, 300); got != "0/3 done, 1 staged" {
		t.Errorf("one staged, one failed: %q", got)
	}
	l.Event(engine.Event{Kind: engine.EventStepStart, Node: "w-0", Pool: "worker", Step: model.Step{Kind: model.StepCordon}, Time: at})
	if got := l.poolStatus(lp, 300); got != "0/3 done, 1 updating" {
		t.Errorf("the staged node in its slot: %q", got)
	}
	l.Stop()
	// The line view: a stage ahead of its slot, and one that failed ahead, said so.
	var lines bytes.Buffer
	h := NewHumanProgress(&lines, false)
	h.Event(engine.Event{Kind: engine.EventStepStart, Node: "w-1", Pool: "worker", Step: stage, Ahead: true, Time: at})
	h.Event(engine.Event{Kind: engine.EventStepFailed, Node: "w-1", Pool: "worker", Step: stage, Ahead: true, Time: at,
		Err: errors.New("node w-1: stage: pulling: connection reset")})
	want := "node.w-1: stage… (ahead of its slot, outside the budget)\n" +
		"node.w-1: stage ahead of its slot failed: pulling: connection reset; its slot stages it again\n"
	if lines.String() != want {
		t.Errorf("line view:\n%s\nwant:\n%s", lines.String(), want)
	}
	var js bytes.Buffer
	NewJSONProgress(&js).Event(engine.Event{Kind: engine.EventStepFailed, Node: "w-1", Pool: "worker", Step: stage, Ahead: true, Time: at,
		Err: errors.New("node w-1: stage: pulling: connection reset")})
	if got := js.String(); !strings.Contains(got, `"@level":"warn"`) || !strings.Contains(got, `"ahead":true`) {
		t.Errorf("JSON event of a stage that failed ahead: %s", got)
	}
}
