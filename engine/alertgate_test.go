package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

// scriptedAlerts is an AlertSource whose answer the test sets at any moment.
type scriptedAlerts struct {
	mu     sync.Mutex
	firing []model.Alert
	err    error
	asked  []string // the URLs asked
}

func (s *scriptedAlerts) set(firing []model.Alert, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.firing, s.err = firing, err
}

func (s *scriptedAlerts) Firing(_ context.Context, url string) ([]model.Alert, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, url)
	return s.firing, s.err
}

func alert(name string, labels ...string) model.Alert {
	a := model.Alert{Labels: map[string]string{"alertname": name}}
	for i := 0; i+1 < len(labels); i += 2 {
		a.Labels[labels[i]] = labels[i+1]
	}
	return a
}

func touched(f *fakeProvider, nodes ...string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, n := range nodes {
		if len(f.trace[n]) > 0 {
			out = append(out, n)
		}
	}
	return out
}

// gated gives the alert source of a plan that updates every node of f with gate g, and a
// function that carries the plan out.
func gated(f *fakeProvider, slots int, g model.AlertGate) (*scriptedAlerts, func(*testing.T, ApplyOptions) (*ApplyResult, error)) {
	src := &scriptedAlerts{}
	return src, func(t *testing.T, o ApplyOptions) (*ApplyResult, error) {
		w, st := newTestWorkspace(t, f)
		w.Alerts = src
		p := planFor(f, map[string]int{"worker": slots}, rebootSteps())
		p.Pools[0].AlertGate = &g
		o.AlertPoll = time.Millisecond
		return w.carryOutPlanned(context.Background(), st, p, o)
	}
}

const promURL = "http://prometheus.test:9090"

// A firing alert holds the pool's first node: it is not started while the alert fires
// (the wait names the alert and its labels), and starts once it stops; the rollout ends
// complete.
func TestAlertGateHoldsUntilAlertsStop(t *testing.T) {
	f := newFake(map[string]int{"worker": 3})
	src, apply := gated(f, 1, model.AlertGate{PrometheusURL: promURL, Timeout: time.Minute})
	src.set([]model.Alert{alert("NodeDown", "severity", "critical", "instance", "a:9100")}, nil)
	var mu sync.Mutex
	var waits []Event
	var startedWhileFiring []string
	obs := func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		switch e.Kind {
		case EventWaiting:
			if !strings.HasPrefix(e.Reason, "alert gate:") {
				return // waits for room in the budget
			}
			waits = append(waits, e)
			if len(waits) == 1 {
				go func() { // the alert stops a while after the first wait is reported
					time.Sleep(50 * time.Millisecond)
					src.set(nil, nil)
				}()
			}
		case EventStepStart:
			src.mu.Lock()
			if len(src.firing) > 0 {
				startedWhileFiring = append(startedWhileFiring, e.Node)
			}
			src.mu.Unlock()
		}
	}
	res, err := apply(t, ApplyOptions{Observer: obs})
	if err != nil || Outcome(res, err) != Complete {
		t.Fatalf("apply: %v (outcome %v), want complete once the alert stopped", err, Outcome(res, err))
	}
	if len(startedWhileFiring) > 0 {
		t.Errorf("nodes started while the alert fired: %v", startedWhileFiring)
	}
	if len(waits) != 1 || waits[0].Node != "worker-0" ||
		!strings.Contains(waits[0].Reason, `alert gate: 1 alert firing at `+promURL+`: NodeDown{instance="a:9100", severity="critical"}`) ||
		len(waits[0].Alerts) != 1 || waits[0].Alerts[0].Name() != "NodeDown" {
		t.Errorf("waiting events %+v, want one before worker-0 naming the alert and its labels", waits)
	}
	if len(res.Updated) != 3 {
		t.Errorf("updated %v, want all 3", res.Updated)
	}
	if src.asked[0] != promURL {
		t.Errorf("asked %q, want the gate's URL", src.asked[0])
	}
}

// An alert still firing at the gate's timeout: the node and the rest of the pool are not
// started, named; the apply is incomplete (exit 2), not failed. Timeout 0 looks once.
func TestAlertGateTimeoutLeavesNodesNotStarted(t *testing.T) {
	for _, timeout := range []time.Duration{0, 20 * time.Millisecond} {
		f := newFake(map[string]int{"worker": 3})
		src, apply := gated(f, 1, model.AlertGate{PrometheusURL: promURL, Timeout: timeout})
		src.set([]model.Alert{alert("DiskFull")}, nil)
		res, err := apply(t, ApplyOptions{})
		if Outcome(res, err) != Incomplete || !errors.Is(err, ErrNotStarted) {
			t.Fatalf("timeout %s: outcome %v, error %v; want incomplete, not started", timeout, Outcome(res, err), err)
		}
		want := "pool worker: 3 nodes not started (worker-0, worker-1, worker-2): alert gate: 1 alert firing at " + promURL +
			": DiskFull{} (still after 20ms, the alert_gate's timeout)"
		if timeout == 0 {
			want = strings.Replace(want, "still after 20ms, the alert_gate's timeout", "looked once: the alert_gate's timeout is 0s", 1)
		}
		if err.Error() != want {
			t.Errorf("timeout %s: error\n%s\nwant\n%s", timeout, err, want)
		}
		if got := touched(f, "worker-0", "worker-1", "worker-2"); len(got) > 0 || len(res.Skipped) != 3 {
			t.Errorf("timeout %s: touched %v, skipped %v; want none touched, all skipped", timeout, got, res.Skipped)
		}
		if timeout == 0 && len(src.asked) != 1 {
			t.Errorf("timeout 0 asked %d times, want once", len(src.asked))
		}
	}
}

// Prometheus not answering holds the pool as a firing alert would (fail closed), and is
// an error: exit 1, the message naming the server. No source at all is the same.
func TestAlertGateUnreachableFailsClosed(t *testing.T) {
	f := newFake(map[string]int{"worker": 2})
	src, apply := gated(f, 1, model.AlertGate{PrometheusURL: promURL, Timeout: 10 * time.Millisecond})
	src.set(nil, errors.New("asking Prometheus at "+promURL+" for its alerts: dial tcp: connection refused"))
	res, err := apply(t, ApplyOptions{})
	if Outcome(res, err) != Failed || errors.Is(err, ErrNotStarted) {
		t.Fatalf("outcome %v, error %v; want failed", Outcome(res, err), err)
	}
	if !strings.Contains(err.Error(), "pool worker: 2 nodes not started (worker-0, worker-1): alert gate: asking Prometheus at "+promURL) {
		t.Errorf("error %v, want the nodes and the server named", err)
	}
	if got := touched(f, "worker-0", "worker-1"); len(got) > 0 {
		t.Errorf("touched %v while Prometheus did not answer", got)
	}

	f = newFake(map[string]int{"worker": 1})
	w, st := newTestWorkspace(t, f) // no Alerts
	p := planFor(f, map[string]int{"worker": 1}, rebootSteps())
	p.Pools[0].AlertGate = &model.AlertGate{PrometheusURL: promURL}
	res, err = w.carryOutPlanned(context.Background(), st, p, ApplyOptions{AlertPoll: time.Millisecond})
	if Outcome(res, err) != Failed || !strings.Contains(fmtErr(err), "cannot ask Prometheus at "+promURL) || len(touched(f, "worker-0")) > 0 {
		t.Errorf("without an alert source: outcome %v, error %v, want failed and worker-0 untouched", Outcome(res, err), err)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// An alert that fires once a node has finished stops the pool: the nodes after it are not
// started (exit 2, named); the node itself is updated. Alerts the gate does not count
// (ignored by name, or without its labels) hold nothing.
func TestAlertGateAfterNodeStopsThePool(t *testing.T) {
	f := newFake(map[string]int{"worker": 3})
	g := model.AlertGate{PrometheusURL: promURL, Timeout: time.Minute, Ignore: []string{"^Watchdog$"},
		MatchLabels: map[string]string{"severity": "critical"}}
	src, apply := gated(f, 1, g)
	uncounted := []model.Alert{alert("Watchdog", "severity", "critical"), alert("NodeDown", "severity", "warning")}
	src.set(uncounted, nil)
	var mu sync.Mutex
	var stops []Event
	obs := func(e Event) {
		switch e.Kind {
		case EventNodeDone:
			if e.Node == "worker-0" { // before the look after it
				src.set(append(uncounted, alert("NodeDown", "severity", "critical")), nil)
			}
		case EventAlertsFiring:
			mu.Lock()
			stops = append(stops, e)
			mu.Unlock()
		}
	}
	res, err := apply(t, ApplyOptions{Observer: obs})
	if Outcome(res, err) != Incomplete {
		t.Fatalf("outcome %v, error %v; want incomplete", Outcome(res, err), err)
	}
	want := `pool worker: 2 nodes not started (worker-1, worker-2): alert gate: 1 alert firing at ` + promURL +
		`: NodeDown{severity="critical"}, after node worker-0 finished`
	if err.Error() != want {
		t.Errorf("error\n%s\nwant\n%s", err, want)
	}
	if d := cmp.Diff([]string{"worker-0"}, res.Updated); d != "" || len(res.Failed) > 0 {
		t.Errorf("updated (-want +got):\n%s; failed %v", d, res.Failed)
	}
	if got := touched(f, "worker-1", "worker-2"); len(got) > 0 {
		t.Errorf("started after the alert fired: %v", got)
	}
	if len(stops) != 1 || stops[0].Node != "worker-0" || len(stops[0].Alerts) != 1 {
		t.Errorf("alerts-firing events %+v, want one after worker-0 with the counted alert", stops)
	}
}

// The look after the pool's last node is not made: nothing is left to stop.
func TestAlertGateNoLookAfterTheLastNode(t *testing.T) {
	f := newFake(map[string]int{"worker": 2})
	src, apply := gated(f, 1, model.AlertGate{PrometheusURL: promURL, Timeout: time.Minute})
	asked := func() int {
		src.mu.Lock()
		defer src.mu.Unlock()
		return len(src.asked)
	}
	atLastDone, atFirstDone := -1, -1
	obs := func(e Event) {
		if e.Kind == EventNodeDone && e.Node == "worker-1" {
			atLastDone = asked()
		}
		if e.Kind == EventNodeDone && e.Node == "worker-0" {
			atFirstDone = asked()
		}
	}
	res, err := apply(t, ApplyOptions{Observer: obs})
	if err != nil || len(res.Updated) != 2 {
		t.Fatalf("apply: %v, updated %v", err, res.Updated)
	}
	if atLastDone != asked() {
		t.Errorf("Prometheus asked %d times after the last node finished, want 0", asked()-atLastDone)
	}
	if atFirstDone < 0 || atLastDone <= atFirstDone+1 {
		t.Errorf("asked %d times by worker-0's end, %d by worker-1's: want a look after worker-0 and before worker-1", atFirstDone, atLastDone)
	}
}

// An alert that starts firing while a node waits for room in its budget (here: another
// node of the pool out of service) holds the node once it has room: the look made before
// the wait is not trusted after it.
func TestAlertGateLooksAgainAfterWaitingForRoom(t *testing.T) {
	f := newFake(map[string]int{"worker": 2})
	f.fleet.Nodes[1].Unschedulable = true // worker-1: cordoned by someone, not in this plan
	src := &scriptedAlerts{}
	w, st := newTestWorkspace(t, f)
	w.Alerts = src
	p := planFor(f, map[string]int{"worker": 1}, rebootSteps())
	p.Nodes[1].Steps, p.Nodes[1].Action = nil, "no-op"
	p.Pools[0].AlertGate = &model.AlertGate{PrometheusURL: promURL}
	var once sync.Once
	obs := func(e Event) {
		if e.Kind == EventWaiting && strings.HasPrefix(e.Reason, "max_unavailable") {
			once.Do(func() { // worker-0 passed the gate and waits for room: the alert fires, room comes
				src.set([]model.Alert{alert("NodeDown")}, nil)
				f.mu.Lock()
				f.fleet.Nodes[1].Unschedulable = false
				f.mu.Unlock()
			})
		}
	}
	res, err := w.carryOutPlanned(context.Background(), st, p, ApplyOptions{AlertPoll: time.Millisecond, BudgetPoll: 5 * time.Millisecond, Observer: obs})
	if Outcome(res, err) != Incomplete || !strings.Contains(fmtErr(err), "pool worker: 1 node not started (worker-0): alert gate: 1 alert firing") {
		t.Fatalf("outcome %v, error %v; want worker-0 not started for the alert", Outcome(res, err), err)
	}
	if got := touched(f, "worker-0"); len(got) > 0 {
		t.Errorf("worker-0 started while NodeDown fired: %v", f.trace["worker-0"])
	}
}

// Alerts firing after the canary stop the pool at once: no canary soak is waited for
// nodes that will not start.
func TestAlertGateAfterTheCanary(t *testing.T) {
	f := newFake(map[string]int{"worker": 3})
	src := &scriptedAlerts{}
	w, st := newTestWorkspace(t, f)
	w.Alerts = src
	p := planFor(f, map[string]int{"worker": 2}, rebootSteps())
	p.Pools[0].Canary, p.Pools[0].CanarySoak = 1, time.Hour
	p.Nodes[0].Canary = true
	p.Pools[0].AlertGate = &model.AlertGate{PrometheusURL: promURL}
	tr := newClockTrace("2026-11-27T12:00:00Z")
	o := tr.opts()
	o.AlertPoll = time.Millisecond
	observe := o.Observer
	o.Observer = func(e Event) {
		if e.Kind == EventNodeDone && e.Node == "worker-0" {
			src.set([]model.Alert{alert("NodeDown")}, nil)
		}
		observe(e)
	}
	res, err := w.carryOutPlanned(context.Background(), st, p, o)
	if Outcome(res, err) != Incomplete || !strings.Contains(fmtErr(err), "pool worker: 2 nodes not started (worker-1, worker-2): alert gate: 1 alert firing at "+promURL+": NodeDown{}, after node worker-0 finished") {
		t.Fatalf("outcome %v, error %v; want the others not started for the alert", Outcome(res, err), err)
	}
	for _, why := range tr.waiting {
		if strings.Contains(why, "canary soak") {
			t.Errorf("a canary soak was waited for a pool that starts nothing more: %q", why)
		}
	}
	if got := touched(f, "worker-1", "worker-2"); len(got) > 0 {
		t.Errorf("started after the alert: %v", got)
	}
}
