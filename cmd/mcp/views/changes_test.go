package views

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// A pool's change is shown once, whatever the number of nodes making it; reasons once each.
func TestPlanShowsEachChangeOnce(t *testing.T) {
	p := samplePlan()
	var out bytes.Buffer
	if err := HumanPlan(&out, p, HumanOptions{}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for want, n := range map[string]int{"-server a iburst\n": 1, "+server b iburst\n": 1,
		"  Changes from rendered-worker-1, on 2 nodes (worker-0, worker-1):\n": 1,
		"    restart chronyd.service: on_change restart:chronyd.service\n":     2, // once per pool
		"(sensitive content changed; not shown)":                               1,
		"binary content: none → 3 B, sha256 ae4b3280e56e…":                     1,
		"        - b\n        + c\n":                                           1,
	} {
		if got := strings.Count(s, want); got != n {
			t.Errorf("%q appears %d times, want %d:\n%s", want, got, n, s)
		}
	}
}

// A "Why" names a reason once, after every step it moves (issue 33): a kernel argument
// added is the reason of six steps, written before as six lines saying the same.
func TestWhyGroupsStepsOfOneReason(t *testing.T) {
	karg := "kernel arguments +nosmt"
	var steps []model.Step
	for _, k := range []model.StepKind{model.StepCordon, model.StepDrain, model.StepKargs, model.StepReboot, model.StepVerify, model.StepUncordon} {
		steps = append(steps, model.Step{Kind: k, Reason: karg})
	}
	steps = slices.Insert(steps, 2, model.Step{Kind: model.StepWrite, Target: "/etc/motd", Reason: "/etc/motd added"})
	p := &planner.Rollout{Pools: []planner.PoolPlan{{Name: "infra", Rendered: "r-2", Previous: "r-1", ReRendered: true, Size: 2, MaxUnavailable: 1, Slots: 1, Updates: 2, Waves: 2}},
		Nodes: []planner.NodePlan{
			{Name: "infra-0", Pool: "infra", Action: planner.NodeUpdate, Steps: steps, Reboot: true, Wave: 1},
			{Name: "infra-1", Pool: "infra", Action: planner.NodeUpdate, Steps: steps, Reboot: true, Wave: 2},
		}}
	var out bytes.Buffer
	if err := HumanPlan(&out, p, HumanOptions{}); err != nil {
		t.Fatal(err)
	}
	_, why, _ := strings.Cut(out.String(), "Why:\n")
	why, _, _ = strings.Cut(why, "\n\n")
	want := "    cordon, drain, kargs, reboot, verify, uncordon: kernel arguments +nosmt\n    write /etc/motd: /etc/motd added"
	if diff := cmp.Diff(want, why); diff != "" {
		t.Errorf("the Why (-want +got):\n%s\n%s", diff, out.String())
	}
}

// A heading names at most four nodes, and counts the rest.
func TestChangeHeadingCountsNodes(t *testing.T) {
	ch := planner.Change{From: "r-1", To: "r-2", Nodes: []string{"a", "b", "c", "d", "e", "f"}}
	if got, want := changeHeading(ch, planner.PoolPlan{}), "Changes from r-1, on 6 nodes (a, b, c, d, and 2 more):"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	ch = planner.Change{To: "r-2", Nodes: []string{}}
	if got := changeHeading(ch, planner.PoolPlan{}); got != "Changes from nothing (no config of mcp's yet), on new nodes of the pool (its boot config):" {
		t.Errorf("%q", got)
	}
}

// Plan JSON: a pool's items are resources of their own; a change from a config other
// than the pool's boot pointer's says so in its index, so that addresses stay unique.
func TestJSONItemAddressesAreUnique(t *testing.T) {
	p := samplePlan()
	worker := &p.Pools[1]
	other := worker.Changes[0]
	other.From, other.Nodes = "rendered-worker-0", []string{"worker-2"}
	other.Items = other.Items[:1]
	worker.Changes = append(worker.Changes, other)
	b, err := JSONPlan(p, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		ResourceChanges []struct {
			Address string
			Index   any
			Change  struct {
				BeforeSensitive any `json:"before_sensitive"`
			}
			MCP struct{ From string }
		} `json:"resource_changes"`
		MCP struct{ Pools []map[string]any }
	}
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, rc := range j.ResourceChanges {
		if seen[rc.Address] {
			t.Errorf("address %s twice", rc.Address)
		}
		seen[rc.Address] = true
	}
	last := j.ResourceChanges[len(j.ResourceChanges)-1]
	if last.Address != `file.worker["/etc/chrony.conf from rendered-worker-0"]` || last.MCP.From != "rendered-worker-0" {
		t.Errorf("the other move's item: %+v", last)
	}
	if !seen[`file.worker["/etc/pki/key.pem"]`] {
		t.Errorf("addresses: %v", seen)
	}
	for _, pp := range j.MCP.Pools {
		if _, ok := pp["changes"]; ok {
			t.Errorf("mcp.pools repeats the changes: %v", pp)
		}
	}
}

// However many and large the diffs, the markdown stays within GitHub's comment limit, and
// says what it left out.
func TestMarkdownDiffsStayWithinTheLimit(t *testing.T) {
	pf := samplePlanFile()
	var items []planner.ItemChange
	for i := range 40 {
		var a, b strings.Builder
		for l := range 150 {
			fmt.Fprintf(&a, "line %d of file %d, before\n", l, i)
			fmt.Fprintf(&b, "line %d of file %d, after\n", l, i)
		}
		items = append(items, planner.ItemChange{Kind: planner.ItemFile, Name: fmt.Sprintf("/etc/f%02d", i), Action: planner.ItemUpdate,
			ContentChanged: true, Before: &planner.Item{Mode: 0o644, Content: planner.ContentOf([]byte(a.String()), false)},
			After: &planner.Item{Mode: 0o644, Content: planner.ContentOf([]byte(b.String()), false)}})
	}
	pf.Rollout.Pools[1].Changes = []planner.Change{{From: "rendered-worker-1", To: "rendered-worker-2", Nodes: []string{"worker-0"}, Items: items}}
	var out bytes.Buffer
	if err := Markdown(&out, pf); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if len(s) > MarkdownLimit {
		t.Errorf("%d characters, more than %d", len(s), MarkdownLimit)
	}
	if !strings.Contains(s, "/etc/f00") || !strings.Contains(s, "more changes not shown: this comment would pass GitHub's limit of 65536 characters; `mcp show PLANFILE` shows every diff.") {
		t.Errorf("no first diff or no note of the cut:\n%s", s[len(s)-2000:])
	}
	if strings.Count(s, "<details>") != strings.Count(s, "</details>") || strings.Count(s, "```diff")*2 != strings.Count(s, "```") {
		t.Error("unbalanced <details> or fences")
	}
}

// A diff holding backticks is fenced longer, so it cannot end its block.
func TestMarkdownFenceOutlastsContent(t *testing.T) {
	ch := planner.Change{From: "a", To: "b"}
	it := planner.ItemChange{Kind: planner.ItemFile, Name: "/etc/x", Action: planner.ItemUpdate, ContentChanged: true,
		Before: &planner.Item{Content: planner.ContentOf([]byte("```\n"), false)}, After: &planner.Item{Content: planner.ContentOf([]byte("````\n"), false)}}
	got := mdItem(ch, it)
	if !strings.Contains(got, "\n`````diff\n") {
		t.Errorf("fence:\n%s", got)
	}
	if d := cmp.Diff("`~ file /etc/x`\n", strings.SplitAfter(got, "\n")[0]); d != "" {
		t.Error(d)
	}
}

// One is one: "1 node", "1 wave", "1 node unchanged"; a pool that selects no node says so
// instead of a silent [0 nodes].
func TestPlanWordsCountRight(t *testing.T) {
	p := &planner.Rollout{Pools: []planner.PoolPlan{
		{Name: "one", Rendered: "r-2", Previous: "r-1", ReRendered: true, Size: 2, MaxUnavailable: 1, Slots: 1, Updates: 1, Waves: 1},
		{Name: "empty", Rendered: "e-1", Previous: "", ReRendered: true},
	}, Nodes: []planner.NodePlan{
		{Name: "a", Pool: "one", Action: planner.NodeUpdate, Wave: 1, Steps: []model.Step{{Kind: model.StepWrite, Target: "/etc/a"}}},
		{Name: "b", Pool: "one", Action: planner.NodeNoOp},
	}}
	var out bytes.Buffer
	if err := HumanPlan(&out, p, HumanOptions{}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"[2 nodes, max_unavailable 1, 0 unavailable, 1 at once, 1 wave]", "  1 node unchanged\n",
		"pool.empty (none) → e-1  [0 nodes, max_unavailable 0, 0 unavailable, 0 at once, 0 waves]\n  note: its node_selector matches no node of the fleet"} {
		if !strings.Contains(s, want) {
			t.Errorf("plan lacks %q:\n%s", want, s)
		}
	}
	for _, bad := range []string{"1 waves", "1 nodes"} {
		if strings.Contains(s, bad) {
			t.Errorf("plan says %q:\n%s", bad, s)
		}
	}
}

// The markdown summary shows a drifted file's diff, folded.
func TestMarkdownShowsDriftDiffs(t *testing.T) {
	pf := longPlan()
	pf.Rollout.Nodes[12].Drift[0].Diff = "--- /etc/motd (rendered-big-1)\n+++ /etc/motd (on node big-12)\n@@ -1 +1 @@\n-hello\n+hacked\n"
	var out bytes.Buffer
	if err := Markdown(&out, pf); err != nil {
		t.Fatal(err)
	}
	if want := "<details><summary>Drift on node.big-12: /etc/motd</summary>\n\n```diff\n--- /etc/motd (rendered-big-1)\n"; !strings.Contains(out.String(), want) {
		t.Errorf("no drift diff:\n%s", out.String())
	}
}
