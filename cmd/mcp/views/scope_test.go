package views

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// scopedPlan: worker-1 held (and NotReady), worker-2 outside -target, worker-3 waiting on
// a PDB; pool infra not targeted (its pointer stays).
func scopedPlan() *planfile.File {
	drain := []model.Step{{Kind: model.StepCordon}, {Kind: model.StepDrain}, {Kind: model.StepReboot}, {Kind: model.StepUncordon}}
	p := &planner.Rollout{
		Pools: []planner.PoolPlan{
			{Name: "infra", Rendered: "rendered-infra-2", Previous: "rendered-infra-1", ReRendered: true, Size: 1, MaxUnavailable: 1, Slots: 1, PointerKept: true, Untargeted: 1},
			{Name: "worker", Rendered: "rendered-worker-2", Previous: "rendered-worker-1", ReRendered: true, Size: 4, MaxUnavailable: 2, Unavailable: 1, Slots: 1, Updates: 2, Waves: 2, Held: 1, Untargeted: 1},
		},
		Nodes: []planner.NodePlan{
			{Name: "infra-0", Pool: "infra", Action: planner.NodeNoOp, Untargeted: true},
			{Name: "worker-0", Pool: "worker", Action: planner.NodeUpdate, Steps: drain, Reboot: true, Wave: 1},
			{Name: "worker-1", Pool: "worker", Action: planner.NodeNoOp, Held: "kernel-debug (mcpfleet.io/hold)", Condition: "NotReady"},
			{Name: "worker-2", Pool: "worker", Action: planner.NodeNoOp, Untargeted: true},
			{Name: "worker-3", Pool: "worker", Action: planner.NodeUpdate, Steps: drain, Reboot: true, Wave: 2,
				Blockers: []planner.Blocker{{Kind: planner.BlockPDBWait, PDB: "demo/web-pdb", After: []string{"worker-0"},
					Message: "drain waits for PodDisruptionBudget demo/web-pdb (allows 1 disruption) until worker-0 is uncordoned with its pods back"}}},
		},
	}
	return &planfile.File{Rollout: p, Targets: []string{"pool.worker"}, Exclude: []string{"node.worker-1"}}
}

func TestHumanPlanHeldTargetedAndPDBWait(t *testing.T) {
	var out bytes.Buffer
	if err := (text{w: &out}).plan(scopedPlan()); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"pool.infra rendered-infra-1 (not targeted: its boot pointer stays; targeted nodes move to rendered-infra-2)",
		"1 node not targeted",
		"held: node.worker-1: kernel-debug (mcpfleet.io/hold); no steps; NotReady, counts against max_unavailable",
		"waits: drain waits for PodDisruptionBudget demo/web-pdb",
		"Plan: 2 nodes to update (2 reboot, 0 in place), 1 pool re-rendered, 0 blocked, 1 waiting on a PodDisruptionBudget, 1 held.",
		"Warning: Resource targeting is in effect",
		"The -target option is not for routine use",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("plan text lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "out of service: node.worker-1") {
		t.Errorf("a held node is listed twice:\n%s", s)
	}
}

func TestJSONPlanHeldAndTargets(t *testing.T) {
	var out bytes.Buffer
	if err := writeJSONPlan(&out, scopedPlan()); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ResourceChanges []struct {
			Address string `json:"address"`
			Change  struct {
				Actions []string `json:"actions"`
			} `json:"change"`
			MCP *nodeMeta `json:"mcp"`
		} `json:"resource_changes"`
		MCP struct {
			Targets []string `json:"targets"`
			Exclude []string `json:"exclude"`
		} `json:"mcp"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, rc := range doc.ResourceChanges {
		s := rc.Change.Actions[0]
		if rc.MCP != nil {
			s += " held=" + rc.MCP.Held
			if rc.MCP.Untargeted {
				s += " untargeted"
			}
		}
		got[rc.Address] = s
	}
	want := map[string]string{"pool.infra": "no-op", "pool.worker": "update", "node.infra-0": "no-op held= untargeted",
		"node.worker-0": "update held=", "node.worker-1": "no-op held=kernel-debug (mcpfleet.io/hold)",
		"node.worker-2": "no-op held= untargeted", "node.worker-3": "update held="}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	if strings.Join(doc.MCP.Targets, ",") != "pool.worker" || strings.Join(doc.MCP.Exclude, ",") != "node.worker-1" {
		t.Errorf("targets %v, exclude %v", doc.MCP.Targets, doc.MCP.Exclude)
	}
}
