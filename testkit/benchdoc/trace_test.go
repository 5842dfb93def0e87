package benchdoc

import (
	"strings"
	"testing"
	"time"
)

func TestWaves(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	// Two pools, k = 2: pool a's third node starts when its first slot frees.
	nodes := []NodeSpan{
		{Node: "a1", Pool: "a", Start: at(0), Done: at(5)},
		{Node: "a2", Pool: "a", Start: at(0.1), Done: at(5.2)},
		{Node: "b1", Pool: "b", Start: at(0.2), Done: at(5.5)},
		{Node: "a3", Pool: "a", Start: at(5.3), Done: at(10.3)},
		{Node: "b2", Pool: "b", Start: at(5.6), Done: at(11)},
	}
	w := Waves(nodes, 2)
	if len(w) != 2 {
		t.Fatalf("%d waves, want 2: %+v", len(w), w)
	}
	// b2 is b's second node: wave 0 (b never had more than one at once).
	if w[0].Nodes != 4 || w[1].Nodes != 1 {
		t.Errorf("wave sizes %d, %d; want 4, 1", w[0].Nodes, w[1].Nodes)
	}
	if w[0].Duration() != 11*time.Second || w[0].Spread() != 5600*time.Millisecond {
		t.Errorf("wave 0: duration %v spread %v", w[0].Duration(), w[0].Spread())
	}
	if w[0].Gap != -5700*time.Millisecond || w[1].Gap != 0 {
		t.Errorf("gaps %v, %v", w[0].Gap, w[1].Gap)
	}
}

func TestReadApplyTraceSpans(t *testing.T) {
	in := `{"@timestamp":"2026-01-01T00:00:00Z","type":"apply_progress","node":"n1","pool":"p","event":"start"}
{"@timestamp":"2026-01-01T00:00:01Z","type":"apply_progress","node":"n1","pool":"p","event":"done","step":{"kind":"drain","reason":"r"},"elapsed_ms":1250}
{"@timestamp":"2026-01-01T00:00:02Z","type":"apply_progress","node":"n1","pool":"p","event":"start"}
{"@timestamp":"2026-01-01T00:00:03Z","type":"apply_progress","node":"n1","pool":"p","event":"node-done"}
{"@timestamp":"2026-01-01T00:00:04Z","type":"apply_summary","summary":{"Updated":1,"APIRequests":2}}
`
	tr, err := ReadApplyTrace(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Nodes) != 1 || tr.Nodes[0].Done.Sub(tr.Nodes[0].Start) != 3*time.Second || tr.Makespan != 3*time.Second {
		t.Errorf("%+v", tr)
	}
	if d := tr.Nodes[0].Steps["drain"]; d != 1250*time.Millisecond || len(tr.Nodes[0].Steps) != 1 {
		t.Errorf("steps %v, want drain 1.25s alone", tr.Nodes[0].Steps)
	}
}
