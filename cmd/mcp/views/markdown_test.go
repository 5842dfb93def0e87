package views

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/testkit/golden"
)

// longPlan is a pool of 30 nodes: 12 rebooting (one group, folded), 10 blocked by a PDB
// (folded), one drifted node whose message needs escaping, one with a warning.
func longPlan() *planfile.File {
	reboot := []model.Step{{Kind: model.StepCordon}, {Kind: model.StepDrain}, {Kind: model.StepKargs}, {Kind: model.StepReboot},
		{Kind: model.StepUncordon}}
	inPlace := []model.Step{{Kind: model.StepWrite, Target: "/etc/motd"}}
	p := &planner.Rollout{Pools: []planner.PoolPlan{{Name: "big", Rendered: "rendered-big-2", Previous: "rendered-big-1", ReRendered: true,
		Size: 30, MaxUnavailable: 3, Slots: 3, Updates: 14, Waves: 5}}}
	for i := range 30 {
		n := planner.NodePlan{Name: fmt.Sprintf("big-%02d", i), Pool: "big", Action: planner.NodeNoOp}
		switch {
		case i < 12:
			n.Action, n.Steps, n.Reboot, n.Wave = planner.NodeUpdate, reboot, true, 1+i/3
		case i < 14:
			n.Action, n.Steps, n.Wave = planner.NodeUpdate, inPlace, 5
		}
		if i < 10 {
			n.Blockers = []planner.Blocker{{Kind: planner.BlockPDB, PDB: "demo/db", Pod: fmt.Sprintf("demo/db-%d", i),
				Message: fmt.Sprintf("eviction of demo/db-%d would be refused by PodDisruptionBudget demo/db (allows 0 disruptions)", i)}}
		}
		if i == 12 {
			n.Drift = []model.Drift{{Path: "/etc/motd", Kind: model.DriftContent, Expected: "aaaa", Found: "bbbb"}}
			n.Warnings = []string{"a | pipe, <b>html</b> and *stars* stay text"}
		}
		p.Nodes = append(p.Nodes, n)
	}
	return &planfile.File{MCPVersion: "test", Lineage: "l", Serial: 7, FleetFingerprint: "0123456789abcdef0123",
		Created: time.Date(2026, 5, 1, 12, 30, 0, 0, time.UTC), Rollout: p}
}

// The markdown summary of each sample plan is exactly testdata/<name>.markdown.golden
// (go test -update rewrites them).
func TestMarkdownGolden(t *testing.T) {
	noChange := samplePlanFile()
	noChange.Rollout = &planner.Rollout{Pools: []planner.PoolPlan{{Name: "w", Rendered: "r", Previous: "r", Size: 1}},
		Nodes: []planner.NodePlan{{Name: "n", Pool: "w", Action: planner.NodeNoOp}, {Name: "m", Pool: "w", Action: planner.NodeNoOp, Held: "debugging"}}}
	for name, pf := range map[string]*planfile.File{
		"show": samplePlanFile(), "show-scoped": scopedPlan(), "show-long": longPlan(), "show-nochange": noChange,
	} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Markdown(&b, pf); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", name+".markdown.golden"), b.String(), *update)
		})
	}
}

// Long lists fold and are capped; short ones stay open; free text is escaped; the counts
// are the plan's.
func TestMarkdownFoldsAndEscapes(t *testing.T) {
	var b bytes.Buffer
	if err := Markdown(&b, longPlan()); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{
		"| big | `rendered-big-1` → `rendered-big-2` | 30 | 2 | 0 | 12 | 10 | 1 |",
		"- `-/+` drain and reboot, 12 nodes — cordon, drain, kargs, reboot, uncordon\n  <details><summary>12 nodes</summary>",
		"- blocked: 10\n  <details><summary>10 blocked</summary>",
		"- `~` in place: `big-12`, `big-13` — write 1 file",
		"- drift: `node.big-12`: /etc/motd: content (expected aaaa, found bbbb)",
		`a \| pipe, &lt;b&gt;html&lt;/b&gt; and \*stars\* stay text`,
		"Made 2026-05-01 12:30 UTC · mcp test · state serial 7 · fleet `0123456789ab`",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("markdown lacks %q:\n%s", want, s)
		}
	}
	if strings.Count(s, "<details>") != strings.Count(s, "</details>") || strings.Count(s, "<details>") != 2 {
		t.Errorf("want 2 balanced folds:\n%s", s)
	}

	// 1,000 nodes: the comment stays within GitHub's limit, the fold names how many it left out.
	pf := longPlan()
	for i := range 1000 {
		pf.Rollout.Nodes = append(pf.Rollout.Nodes, planner.NodePlan{Name: fmt.Sprintf("more-%04d", i), Pool: "big",
			Action: planner.NodeUpdate, Steps: pf.Rollout.Nodes[0].Steps, Reboot: true})
	}
	b.Reset()
	if err := Markdown(&b, pf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "and 912 more (mcp show PLANFILE lists them all)") || b.Len() > 65536 {
		t.Errorf("1,012 rebooting nodes: %d bytes, cap missing:\n%s", b.Len(), b.String())
	}
}
