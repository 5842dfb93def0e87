package views

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/engine"
)

// The end of apply names every node not started, with why, and says "run mcp apply again"
// only when another apply would do more: not when the nodes left are held (issue 33:
// "Apply incomplete: Nodes: 4 updated, 0 failed, 1 not started" named neither).
func TestSummaryNamesEveryNodeNotStarted(t *testing.T) {
	held := &engine.ApplyResult{Updated: []string{"w-10", "w-2", "w-1", "w-3"}, Skipped: []string{"w-4"}, Elapsed: time.Second,
		NotStarted: map[string]engine.NotStarted{"w-4": {Why: `put on hold after the plan was made: not started (mcpfleet.io/hold="debug")`, Held: true}}}
	var b bytes.Buffer
	NewHumanProgress(&b, false).Summary(SummaryOf(held, nil))
	want := `
Nodes:
  node.w-4   not started: put on hold after the plan was made: not started (mcpfleet.io/hold="debug")
  node.w-1   updated
  node.w-2   updated
  node.w-3   updated
  node.w-10  updated

Apply incomplete. Nodes: 4 updated, 0 failed, 1 not started; what is left waits for a person (a hold, a paused pool). (1s)
`
	if d := cmp.Diff(want, b.String()); d != "" {
		t.Errorf("only a held node left (-want +got):\n%s", d)
	}

	budget := &engine.ApplyResult{Updated: []string{"infra-0"}, Deferred: []string{"infra-1"}, Elapsed: time.Second,
		NotStarted: map[string]engine.NotStarted{"infra-1": {Why: "deferred by the plan: no room in pool infra's max_unavailable of 1 when it was made (1 out of service: infra-2)"}}}
	b.Reset()
	NewHumanProgress(&b, false).Summary(SummaryOf(budget, nil))
	for _, want := range []string{"  node.infra-1  not started: deferred by the plan: no room in pool infra's max_unavailable of 1",
		"Apply incomplete. Nodes: 1 updated, 0 failed, 1 not started; run mcp apply again to continue. (1s)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("a node deferred by the budget: no %q in\n%s", want, b.String())
		}
	}
}

// On a terminal the summary fits its width: a line too long wraps at a space, its next
// lines under the first's text, no word cut.
func TestSummaryWrapsToTheTerminal(t *testing.T) {
	res := &engine.ApplyResult{Updated: []string{"infra-0"}, Elapsed: time.Second}
	s := SummaryOf(res, nil)
	s.Nodes[0].Rebooted, s.Nodes[0].Evidence = true, "boot id 9d72a2317ce95604ab300b8a80bbd582 → c4d0ada85fad9326215d92619da43e79"
	var b bytes.Buffer
	h := NewHumanProgress(&b, false).(*humanProgress)
	h.cols = func() int { return 80 }
	h.Summary(s)
	lines := strings.Split(b.String(), "\n")
	want := []string{"", "Nodes:",
		"  node.infra-0  updated, rebooted: boot id 9d72a2317ce95604ab300b8a80bbd582 →",
		"                c4d0ada85fad9326215d92619da43e79",
		"", "Apply complete! Nodes: 1 updated, 0 failed, 0 not started. (1s)", ""}
	if d := cmp.Diff(want, lines); d != "" {
		t.Errorf("at 80 columns (-want +got):\n%s", d)
	}
	if i := slices.IndexFunc(lines, func(l string) bool { return width(l) > 80 }); i >= 0 {
		t.Errorf("line %d is wider than 80 columns: %q", i, lines[i])
	}
}

// A long list of updated nodes is cut short; failed and not started ones never are.
func TestSummaryFoldsUpdatedNodesOnly(t *testing.T) {
	res := &engine.ApplyResult{NotStarted: map[string]engine.NotStarted{}}
	for i := range 100 {
		res.Updated = append(res.Updated, "u-"+strings.Repeat("x", i%3)+string(rune('a'+i%26))+strings.Repeat("y", i/26))
		n := "s-" + string(rune('a'+i%26)) + strings.Repeat("z", i/26)
		res.Skipped = append(res.Skipped, n)
		res.NotStarted[n] = engine.NotStarted{Why: "apply was interrupted"}
	}
	var b bytes.Buffer
	NewHumanProgress(&b, false).Summary(SummaryOf(res, nil))
	if got := strings.Count(b.String(), "not started: apply was interrupted"); got != 100 {
		t.Errorf("%d nodes named not started, want 100", got)
	}
	if got := strings.Count(b.String(), "  updated\n"); got != updatedShown || !strings.Contains(b.String(), "… and 70 more updated") {
		t.Errorf("%d updated nodes named, want %d and the rest counted:\n%s", got, updatedShown, b.String())
	}
}
