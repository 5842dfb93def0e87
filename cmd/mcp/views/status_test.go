package views

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/planner"
)

// On a terminal -watch redraws in place: from the top left, each line cleared to its end,
// the rest of the screen cleared, and never more lines than the terminal has (they would
// scroll out of the next redraw's reach).
func TestStatusRedrawFitsTheTerminal(t *testing.T) {
	s := &planner.Status{}
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		s.Nodes = append(s.Nodes, planner.NodeStatus{Name: "node-" + n, Pool: "worker", Current: "r1", Desired: "r1", State: "Done"})
	}
	var b bytes.Buffer
	v := NewStatus(StatusOptions{Nodes: true, Watch: true, Redraw: true, Height: func() int { return 10 },
		Interval: 2 * time.Second}, &b)
	at := time.Date(2026, 11, 23, 17, 0, 0, 0, time.UTC)
	if err := v.Status(s, at); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.HasPrefix(out, "\x1b[H") || !strings.HasSuffix(out, "\x1b[J") {
		t.Errorf("a redraw does not start at home and clear below:\n%q", out)
	}
	lines := strings.Split(strings.TrimSuffix(strings.TrimSuffix(out, "\x1b[J"), "\n"), "\n")
	if len(lines) != 9 || !strings.Contains(lines[0], "Every 2s: mcp status") || !strings.Contains(lines[8], "more lines") {
		t.Errorf("a redraw on a terminal of 10 lines has %d lines:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for _, l := range lines {
		if !strings.HasSuffix(l, "\x1b[K") {
			t.Errorf("line %q is not cleared to its end", l)
		}
	}
	// A second redraw replaces the first: it starts at home again, no blank line between.
	b.Reset()
	v.Status(s, at)
	if !strings.HasPrefix(b.String(), "\x1b[H") {
		t.Errorf("the second redraw: %q", b.String())
	}
}
