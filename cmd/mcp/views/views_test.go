package views

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

func samplePlan() *planner.Rollout {
	reboot := []model.Step{{Kind: model.StepCordon}, {Kind: model.StepDrain}, {Kind: model.StepWrite, Target: "/etc/a"},
		{Kind: model.StepWrite, Target: "/etc/b"}, {Kind: model.StepWrite, Target: "x.service"}, {Kind: model.StepReboot},
		{Kind: model.StepVerify}, {Kind: model.StepUncordon}}
	inPlace := []model.Step{{Kind: model.StepWrite, Target: "/etc/chrony.conf", Reason: "/etc/chrony.conf changed (content)"},
		{Kind: model.StepRestart, Target: "chronyd.service", Reason: "on_change restart:chronyd.service"}}
	return &planner.Rollout{
		Pools: []planner.PoolPlan{
			{Name: "infra", Rendered: "rendered-infra-2", Previous: "rendered-infra-1", ReRendered: true, Size: 2, MaxUnavailable: 1, Slots: 1, Updates: 1, Waves: 1, Paused: true,
				Blockers: []planner.Blocker{{Kind: planner.BlockPaused, Message: "pool infra is paused: 1 node change deferred"}}},
			{Name: "worker", Rendered: "rendered-worker-2", Previous: "rendered-worker-1", ReRendered: true, Size: 3, MaxUnavailable: 1, Slots: 1, Updates: 2, Waves: 2,
				Changes: sampleChanges()},
		},
		Nodes: []planner.NodePlan{
			{Name: "infra-0", Pool: "infra", Zone: "a", Action: planner.NodeUpdate, Steps: inPlace, Deferred: true},
			{Name: "infra-1", Pool: "infra", Action: planner.NodeNoOp},
			{Name: "worker-0", Pool: "worker", Zone: "a", Action: planner.NodeUpdate, Steps: reboot, Reboot: true, Wave: 1,
				Blockers: []planner.Blocker{{Kind: planner.BlockPDB, PDB: "demo/web-pdb", Pod: "demo/web-0", Message: "eviction of demo/web-0 would be refused by PodDisruptionBudget demo/web-pdb"}}},
			{Name: "worker-1", Pool: "worker", Zone: "b", Action: planner.NodeUpdate, Steps: inPlace, Wave: 2},
			{Name: "worker-2", Pool: "worker", Action: planner.NodeNoOp},
		},
	}
}

// sampleChanges are the worker pool's changes: a file's content and mode, a sensitive
// file, a unit's drop-in and enablement, a binary file, the kernel arguments and OS image.
func sampleChanges() []planner.Change {
	text := func(s string) *planner.Content { return planner.ContentOf([]byte(s), false) }
	secret := &planner.Content{Hidden: planner.HiddenSensitive}
	yes := true
	return []planner.Change{{From: "rendered-worker-1", To: "rendered-worker-2", Nodes: []string{"worker-0", "worker-1"},
		Items: []planner.ItemChange{
			{Kind: planner.ItemFile, Name: "/etc/chrony.conf", Action: planner.ItemUpdate, ContentChanged: true,
				Before: &planner.Item{Mode: 0o644, Content: text("# chrony\nserver a iburst\nrtcsync\n")},
				After:  &planner.Item{Mode: 0o600, Content: text("# chrony\nserver b iburst\nrtcsync\n")}},
			{Kind: planner.ItemFile, Name: "/etc/pki/key.pem", Action: planner.ItemUpdate, ContentChanged: true,
				Before: &planner.Item{Mode: 0o600, Sensitive: true, Content: secret}, After: &planner.Item{Mode: 0o600, Sensitive: true, Content: secret}},
			{Kind: planner.ItemFile, Name: "/etc/blob", Action: planner.ItemCreate, ContentChanged: true,
				After: &planner.Item{Mode: 0o644, Content: planner.ContentOf([]byte{0, 1, 2}, false)}},
			{Kind: planner.ItemUnit, Name: "x.service", Action: planner.ItemUpdate,
				Before: &planner.Item{Content: text("[Service]\n"), Dropins: map[string]*planner.Content{"10.conf": text("[Service]\nNice=1\n")}},
				After:  &planner.Item{Content: text("[Service]\n"), Enabled: &yes, Dropins: map[string]*planner.Content{"10.conf": text("[Service]\nNice=2\n")}}},
			{Kind: planner.ItemKernelArgs, Action: planner.ItemUpdate, Before: &planner.Item{KernelArgs: []string{"a", "b"}},
				After: &planner.Item{KernelArgs: []string{"a", "c"}}},
			{Kind: planner.ItemOSImage, Action: planner.ItemUpdate, Before: &planner.Item{OSImage: "img:1"}, After: &planner.Item{OSImage: "img:2"}},
		}}}
}

func TestHumanPlan(t *testing.T) {
	var out bytes.Buffer
	if err := HumanPlan(&out, samplePlan(), HumanOptions{}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if strings.Contains(s, "\033[") {
		t.Error("colour codes without Color")
	}
	for _, want := range []string{
		"pool.worker rendered-worker-1 → rendered-worker-2",
		"-/+  node.worker-0",
		"cordon, drain, write 2 files, write 1 unit, reboot, verify, uncordon",
		"blocked: eviction of demo/web-0 would be refused by PodDisruptionBudget demo/web-pdb",
		"~    node.worker-1",
		"write 1 file, restart chronyd.service",
		"deferred",
		"deferred: pool infra is paused",
		"1 node unchanged",
		"Plan: 3 nodes to update (1 reboot, 2 in place), 2 pools re-rendered, 1 blocked, 1 deferred.",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("human plan lacks %q:\n%s", want, s)
		}
	}
	out.Reset()
	HumanPlan(&out, samplePlan(), HumanOptions{Color: true})
	if !strings.Contains(out.String(), "\033[") || !strings.Contains(out.String(), "restart chronyd.service: on_change restart:chronyd.service") {
		t.Errorf("colour or reasons missing:\n%s", out.String())
	}
}

func TestPlanSummaryNoChanges(t *testing.T) {
	p := &planner.Rollout{Pools: []planner.PoolPlan{{Name: "w", Rendered: "r", Previous: "r"}},
		Nodes: []planner.NodePlan{{Name: "n", Pool: "w", Action: planner.NodeNoOp}}}
	if got := PlanSummary(p); got != "No changes. The fleet matches the configuration." {
		t.Errorf("summary %q", got)
	}
}

// A plan without changes still says which nodes no pool selects (a pool's block removed
// leaves its nodes unmanaged), as the plan with changes and show -markdown say it.
func TestNoChangesPlanNotesUnselectedNodes(t *testing.T) {
	p := &planner.Rollout{Pools: []planner.PoolPlan{{Name: "w", Rendered: "r", Previous: "r"}},
		Nodes: []planner.NodePlan{{Name: "n", Pool: "w", Action: planner.NodeNoOp}}, Unmanaged: []string{"infra-0"}}
	var out strings.Builder
	HumanPlan(&out, p, HumanOptions{})
	if !strings.Contains(out.String(), "No changes.") || !strings.Contains(out.String(), "Note: no pool selects infra-0.") {
		t.Errorf("plan:\n%s", out.String())
	}
}

func TestRefreshLine(t *testing.T) {
	for _, c := range []struct {
		rs   model.RefreshStats
		want string
	}{
		{model.RefreshStats{Nodes: 1000, Pods: 3000, PDBs: 1, APIRequests: 9, Duration: 412345678},
			"Refreshed 1000 nodes, 3000 pods, 1 PDB in 412ms (9 API requests)."},
		{model.RefreshStats{Nodes: 1, APIRequests: -1, Duration: 4 * time.Millisecond},
			"Refreshed 1 node, 0 pods, 0 PDBs in 4ms."},
		{model.RefreshStats{Nodes: 6, Pods: 10, APIRequests: 5, Duration: time.Second, Observed: 6, ObserveRequests: 24},
			"Refreshed 6 nodes, 10 pods, 0 PDBs in 1s (5 API requests); asked 6 nodes what they carry of their targets (24 API requests)."},
	} {
		if got := RefreshLine(&c.rs); got != c.want {
			t.Errorf("RefreshLine(%+v) = %q, want %q", c.rs, got, c.want)
		}
	}
}

func TestJSONPlan(t *testing.T) {
	b, err := JSONPlan(samplePlan(), Meta{Lineage: "l", Serial: 3, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		FormatVersion   string `json:"format_version"`
		Applyable       bool   `json:"applyable"`
		ResourceChanges []struct {
			Address, Type string
			Change        struct{ Actions []string }
			MCP           *struct {
				Steps []struct{ Kind, Target string }
				Wave  int
			}
		} `json:"resource_changes"`
		MCP struct {
			Serial int64
		}
	}
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rc := range j.ResourceChanges {
		got = append(got, rc.Address+" "+rc.Type+" "+strings.Join(rc.Change.Actions, ","))
	}
	want := []string{"pool.infra mcp_pool update", "pool.worker mcp_pool update", "node.infra-0 mcp_node update",
		"node.infra-1 mcp_node no-op", "node.worker-0 mcp_node update", "node.worker-1 mcp_node update", "node.worker-2 mcp_node no-op",
		`file.worker["/etc/chrony.conf"] mcp_file update`, `file.worker["/etc/pki/key.pem"] mcp_file update`,
		`file.worker["/etc/blob"] mcp_file create`, `unit.worker["x.service"] mcp_unit update`,
		"kernel_args.worker mcp_kernel_args update", "os_image.worker mcp_os_image update"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("resource_changes (-want +got):\n%s", d)
	}
	if j.FormatVersion != JSONFormatVersion || !j.Applyable || j.MCP.Serial != 3 {
		t.Errorf("top level: %+v", j)
	}
	if s := j.ResourceChanges[4].MCP.Steps; len(s) != 8 || s[2].Kind != "write" || s[2].Target != "/etc/a" {
		t.Errorf("worker-0 steps: %+v", s)
	}
}

func TestProgress(t *testing.T) {
	var out bytes.Buffer
	p := NewHumanProgress(&out, false)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p.Event(engine.Event{Time: at, Kind: engine.EventStepStart, Node: "w-0", Step: model.Step{Kind: model.StepDrain}})
	p.Event(engine.Event{Time: at, Kind: engine.EventStepDone, Node: "w-0", Step: model.Step{Kind: model.StepDrain}, Elapsed: 1500 * time.Millisecond})
	p.Event(engine.Event{Time: at, Kind: engine.EventStepFailed, Node: "w-1", Step: model.Step{Kind: model.StepDrain}, Err: errors.New("refused")})
	p.Summary(ApplySummary{Updated: 1, Failed: 1, Failures: []string{"node w-1: drain: refused"}, Elapsed: time.Second})
	want := "node.w-0: drain…\nnode.w-0: drain done (1.5s)\nnode.w-1: drain failed: refused\n\nErrors:\n  node w-1: drain: refused\n\n" +
		"Apply failed. Nodes: 1 updated, 1 failed, 0 not started. (1s)\n"
	if d := cmp.Diff(want, out.String()); d != "" {
		t.Errorf("progress (-want +got):\n%s", d)
	}
	out.Reset()
	j := NewJSONProgress(&out)
	j.Event(engine.Event{Time: at, Kind: engine.EventStepDone, Node: "w-0", Step: model.Step{Kind: model.StepWrite, Target: "/etc/a"}})
	var ev map[string]any
	if err := json.Unmarshal(out.Bytes(), &ev); err != nil || ev["type"] != "apply_progress" || ev["@message"] != "node.w-0: write /etc/a done" {
		t.Errorf("json progress: %v %s", err, out.String())
	}
}

// An apply that failed without a failed node (interrupted, its lock lost, no room in a
// budget) says it failed: its exit code is 1.
func TestSummaryOfAnApplyThatStopped(t *testing.T) {
	var b bytes.Buffer
	NewHumanProgress(&b, false).Summary(ApplySummary{Updated: 1, Deferred: 2, Failures: []string{"apply interrupted: 2 nodes not started"}})
	if !strings.Contains(b.String(), "Apply failed.") || strings.Contains(b.String(), "Apply complete!") {
		t.Errorf("human summary:\n%s", b.String())
	}
	b.Reset()
	NewJSONProgress(&b).Summary(ApplySummary{Failures: []string{"lost the state lock"}})
	if !strings.Contains(b.String(), `"@level":"error"`) {
		t.Errorf("JSON summary: %s", b.String())
	}
}

// A cluster's row says its changing pools' maintenance windows: none, open until the
// soonest closing, or closed with the soonest opening; a pool that does not change is not
// counted.
func TestWindowCell(t *testing.T) {
	at := func(h int) *time.Time { v := time.Date(2026, 12, 5, h, 0, 0, 0, time.UTC); return &v }
	changing := []planner.NodePlan{{Name: "w-0", Pool: "worker", Action: planner.NodeUpdate}, {Name: "i-0", Pool: "infra", Action: planner.NodeNoOp}}
	for _, c := range []struct {
		pools []planner.PoolPlan
		want  string
	}{
		{[]planner.PoolPlan{{Name: "worker"}}, "-"},
		{[]planner.PoolPlan{{Name: "worker", Window: &planner.WindowStatus{Open: true, Closes: at(4)}}}, "open until Sat 2026-12-05 04:00 UTC"},
		{[]planner.PoolPlan{{Name: "worker", Window: &planner.WindowStatus{NextOpening: at(2)}}}, "closed, opens Sat 2026-12-05 02:00 UTC"},
		{[]planner.PoolPlan{{Name: "worker", Window: &planner.WindowStatus{Open: true, Closes: at(4)}},
			{Name: "infra", Window: &planner.WindowStatus{NextOpening: at(2)}}}, "open until Sat 2026-12-05 04:00 UTC"},
	} {
		if got := windowCell(&planner.Rollout{Pools: c.pools, Nodes: changing}); got != c.want {
			t.Errorf("windowCell(%+v) = %q, want %q", c.pools, got, c.want)
		}
	}
}
