package views

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

func TestPlanShowsPacingAndWindows(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip(err)
	}
	next := time.Date(2026, 11, 28, 2, 0, 0, 0, berlin)
	closes := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
	p := samplePlan()
	w := &p.Pools[1]
	w.Canary, w.CanarySoak, w.MaxFailures, w.Soak = 1, 10*time.Minute, 2, 90*time.Second
	w.Window = &planner.WindowStatus{Windows: []string{"sat,sun 02:00 for 4h (Europe/Berlin)"}, NextOpening: &next}
	p.Pools[0].MaxFailures = 1
	p.Pools[0].Window = &planner.WindowStatus{Windows: []string{"sat 02:00 for 4h (UTC)"}, Open: true, Closes: &closes}
	p.Nodes[2].Canary = true
	var out bytes.Buffer
	if err := HumanPlan(&out, p, HumanOptions{}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"[3 nodes, max_unavailable 1, 0 unavailable, 1 at once, 2 waves, canary 1 then soak 10m, max_failures 2, soak 1m30s after each node]",
		"window: closed: next opening Sat 2026-11-28 02:00 CET (sat,sun 02:00 for 4h (Europe/Berlin)); apply waits for it",
		"window: open until Sat 2026-11-28 06:00 UTC (sat 02:00 for 4h (UTC))",
		"1 (canary)",
		"[2 nodes, max_unavailable 1, 0 unavailable, 1 at once, 1 wave]", // nothing said of default pacing
	} {
		if !strings.Contains(s, want) {
			t.Errorf("human plan lacks %q:\n%s", want, s)
		}
	}
	b, err := JSONPlan(p, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"canary":1,"canary_soak":600000000000,"max_failures":2,"soak":90000000000,"window":{"windows":["sat,sun 02:00 for 4h (Europe/Berlin)"],"open":false,"next_opening":"2026-11-28T02:00:00+01:00"}`,
		`"canary":true}`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("JSON plan lacks %s:\n%s", want, b)
		}
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
}

// The pool's alert gate: a line under the pool in the human plan, the block in the JSON
// plan, the firing alerts in the JSON progress events.
func TestPlanShowsTheAlertGate(t *testing.T) {
	p := samplePlan()
	p.Pools[0].AlertGate = &model.AlertGate{PrometheusURL: "http://prometheus:9090", Ignore: []string{"^Watchdog$", "^InfoInhibitor$"},
		MatchLabels: map[string]string{"severity": "critical"}, Timeout: 10 * time.Minute}
	p.Pools[1].AlertGate = &model.AlertGate{PrometheusURL: "http://p2:9090"}
	var out bytes.Buffer
	if err := HumanPlan(&out, p, HumanOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\n  gate: no firing alerts at http://prometheus:9090 (ignoring ^Watchdog$, ^InfoInhibitor$; only severity=critical), " +
			"before each node starts (apply waits up to 10m for them to stop) and after each finishes (one firing stops the pool)\n",
		"\n  gate: no firing alerts at http://p2:9090, before each node starts (apply does not wait for them to stop)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("human plan lacks %q:\n%s", want, out.String())
		}
	}
	b, err := JSONPlan(p, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	want := `"alert_gate":{"prometheus_url":"http://prometheus:9090","ignore":["^Watchdog$","^InfoInhibitor$"],"match_labels":{"severity":"critical"},"timeout":600000000000}`
	if !bytes.Contains(b, []byte(want)) {
		t.Errorf("JSON plan lacks %s:\n%s", want, b)
	}

	var ev bytes.Buffer
	NewJSONProgress(&ev).Event(engine.Event{Kind: engine.EventWaiting, Pool: "worker", Node: "worker-0", Reason: "alert gate: …",
		Alerts: []model.Alert{{Labels: map[string]string{"alertname": "NodeDown", "severity": "critical"}}}})
	if want := `"alerts":[{"labels":{"alertname":"NodeDown","severity":"critical"}}]`; !strings.Contains(ev.String(), want) {
		t.Errorf("JSON event lacks %s:\n%s", want, ev.String())
	}
	var lines bytes.Buffer
	NewHumanProgress(&lines, false).Event(engine.Event{Kind: engine.EventAlertsFiring, Pool: "worker", Node: "worker-0",
		Reason: "alert gate: 1 alert firing at http://p:9090: NodeDown{}, after node worker-0 finished: no more nodes of the pool start"})
	if want := "pool.worker: stopping: alert gate: 1 alert firing at http://p:9090: NodeDown{}, after node worker-0 finished: no more nodes of the pool start\n"; lines.String() != want {
		t.Errorf("progress line %q, want %q", lines.String(), want)
	}
}
