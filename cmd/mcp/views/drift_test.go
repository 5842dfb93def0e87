package views

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

func driftPlan(onDrift model.OnDrift) *planner.Rollout {
	drift := []model.Drift{{Path: model.DriftPathKernelArgs, Kind: model.DriftKernelArgs, Expected: "nosmt", Found: ""}}
	p := &planner.Rollout{Pools: []planner.PoolPlan{{Name: "infra", Rendered: "r1", Previous: "r1", Size: 2, OnDrift: onDrift}},
		Nodes: []planner.NodePlan{{Name: "infra-0", Pool: "infra", From: "r1", To: "r1", Action: planner.NodeNoOp, Drift: drift},
			{Name: "infra-1", Pool: "infra", From: "r1", To: "r1", Action: planner.NodeNoOp}}}
	if !onDrift.Reports() {
		n := &p.Nodes[0]
		n.Action, n.DriftOnly, n.Reboot, n.Wave = planner.NodeUpdate, true, true, 1
		n.Steps = []model.Step{{Kind: model.StepCordon}, {Kind: model.StepDrain}, {Kind: model.StepKargs},
			{Kind: model.StepReboot}, {Kind: model.StepVerify}, {Kind: model.StepUncordon}}
		p.Pools[0].Updates = 1
	}
	return p
}

// TestPlanShowsDriftApart: drift is a Note before the actions (restored) or after the
// summary (reported only), and resource_drift says whether the plan restores it.
func TestPlanShowsDriftApart(t *testing.T) {
	for _, tt := range []struct {
		onDrift  model.OnDrift
		want     []string
		restored bool
	}{
		{model.OnDriftRestore, []string{"Note: 1 node has drifted from the config it runs",
			"node.infra-0 (pool infra, r1; restored by this plan)", "drift: kernel_args: kernel-args (expected nosmt, found (none))",
			"drift: only restores drift", "1 only restoring drift."}, true},
		{model.OnDriftReport, []string{"No changes. The configuration is applied; 1 node has drifted (reported only).",
			`reported only: pool on_drift = "report"`}, false},
	} {
		var out bytes.Buffer
		if err := HumanPlan(&out, driftPlan(tt.onDrift), HumanOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, w := range tt.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: plan lacks %q:\n%s", tt.onDrift, w, out.String())
			}
		}
		b, err := JSONPlan(driftPlan(tt.onDrift), Meta{})
		if err != nil {
			t.Fatal(err)
		}
		var pj struct {
			ResourceDrift []struct {
				MCP driftMeta `json:"mcp"`
			} `json:"resource_drift"`
		}
		json.Unmarshal(b, &pj)
		if len(pj.ResourceDrift) != 1 || pj.ResourceDrift[0].MCP != (driftMeta{Pool: "infra", OnDrift: string(tt.onDrift), Restored: tt.restored}) {
			t.Errorf("%s: resource_drift %+v", tt.onDrift, pj.ResourceDrift)
		}
	}
}

func TestDriftView(t *testing.T) {
	r := &planner.DriftReport{Pools: []planner.DriftPool{{Name: "worker", OnDrift: model.OnDriftReport, Size: 3, Drifted: 2, Paths: 1}},
		Nodes: []planner.DriftNode{
			{Name: "lost", Pool: "worker", CurrentConfig: "rendered-gone", Status: planner.DriftUnknownConfig},
			{Name: "stray", Status: planner.DriftUnmanaged},
			{Name: "w-0", Pool: "worker", CurrentConfig: "r1", Status: planner.DriftDrifted,
				Drift: []model.Drift{{Path: "/etc/a", Kind: model.DriftMode, Expected: "0644", Found: "0666"}}},
			{Name: "w-1", Pool: "worker", CurrentConfig: "r1", Status: planner.DriftClean},
		}}
	var out bytes.Buffer
	if err := NewDrift(false, &out, false).Report(r, DriftRun{}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"node.lost (pool worker): runs rendered-gone, which the state does not hold",
		"node.stray: no pool selects it",
		"node.w-0 (pool worker, r1)\n  drift: /etc/a: mode (expected 0644, found 0666)",
		`pool.worker: 2 of 3 nodes drifted, 1 difference; on_drift = "report": mcp plan only reports it`,
		"Drift: 1 of 4 nodes differs from the config it runs; 1 node no pool selects, 1 node on a config the state lacks.",
	} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("drift view lacks %q:\n%s", w, out.String())
		}
	}
	if strings.Contains(out.String(), "w-1") {
		t.Errorf("a clean node is listed:\n%s", out.String())
	}
	out.Reset()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := NewDrift(true, &out, false).Report(r, DriftRun{At: at, Duration: 42 * time.Millisecond, Version: "test"}); err != nil {
		t.Fatal(err)
	}
	var j map[string]any
	if err := json.Unmarshal(out.Bytes(), &j); err != nil || j["format_version"] != DriftFormatVersion || j["drifted"] != true ||
		j["checked_at"] != "2026-01-01T00:00:00Z" || j["duration_ms"] != float64(42) || strings.Count(out.String(), "\n") != 1 {
		t.Errorf("drift JSON: %v\n%s", err, out.String())
	}
}
