package views

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

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
