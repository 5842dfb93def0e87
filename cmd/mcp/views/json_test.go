package views

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

// The fields mcp's plan JSON shares with Terraform's beyond resource_changes: when the plan
// was made, its variables, and create for a pool that has no rendered config in the state
// yet (before null), as Terraform names a resource new to its state.
func TestJSONPlanTerraformFields(t *testing.T) {
	p := samplePlan()
	p.Pools[0].Previous = ""
	b, err := JSONPlan(p, Meta{Created: time.Date(2026, 5, 1, 12, 30, 0, 5, time.FixedZone("x", 3600)),
		Variables: map[string]json.RawMessage{"ntp_server": json.RawMessage(`"ntp.internal"`)}})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Timestamp       string
		Variables       map[string]struct{ Value any }
		ResourceChanges []struct {
			Address string
			Change  struct {
				Actions []string
				Before  any
			}
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Timestamp != "2026-05-01T11:30:00Z" || got.Variables["ntp_server"].Value != "ntp.internal" {
		t.Errorf("timestamp %q, variables %v", got.Timestamp, got.Variables)
	}
	pools := map[string][]string{}
	for _, rc := range got.ResourceChanges[:2] {
		pools[rc.Address] = rc.Change.Actions
	}
	if d := cmp.Diff(map[string][]string{"pool.infra": {"create"}, "pool.worker": {"update"}}, pools); d != "" || got.ResourceChanges[0].Change.Before != nil {
		t.Errorf("pool actions (-want +got):\n%s", d)
	}
}

// complete, as Terraform's: false when applying the plan leaves changes for the next one.
func TestJSONPlanComplete(t *testing.T) {
	inPlace := samplePlan()
	inPlace.Nodes[0].Deferred = false
	for name, c := range map[string]struct {
		b    func() ([]byte, error)
		want bool
	}{
		"deferred node": {func() ([]byte, error) { return JSONPlan(samplePlan(), Meta{}) }, false},
		"-target":       {func() ([]byte, error) { return JSONPlan(inPlace, Meta{Targets: []string{"pool.worker"}}) }, false},
		"everything":    {func() ([]byte, error) { return JSONPlan(inPlace, Meta{}) }, true},
	} {
		b, err := c.b()
		if err != nil {
			t.Fatal(err)
		}
		var got struct{ Complete *bool }
		if err := json.Unmarshal(b, &got); err != nil || got.Complete == nil || *got.Complete != c.want {
			t.Errorf("%s: complete %v, want %v (%v)", name, got.Complete, c.want, err)
		}
	}
}

// A node whose update stages ahead has each step's phase, stage or slot; none when its
// pool's max_staging is 0 (the stage is in the slot).
func TestJSONPlanStagePhase(t *testing.T) {
	for _, maxStaging := range []int{1, 0} {
		p := samplePlan()
		p.Pools[0].MaxStaging = maxStaging
		for i := range p.Nodes {
			if p.Nodes[i].Pool == p.Pools[0].Name {
				p.Nodes[i].Steps = []model.Step{{Kind: model.StepStage}, {Kind: model.StepCordon}, {Kind: model.StepPivot}}
			}
		}
		b, err := JSONPlan(p, Meta{})
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			ResourceChanges []struct {
				MCP *struct {
					Pool  string
					Steps []struct{ Phase string }
				} `json:"mcp"`
			} `json:"resource_changes"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, rc := range got.ResourceChanges {
			if rc.MCP == nil || rc.MCP.Pool != p.Pools[0].Name || len(rc.MCP.Steps) != 3 {
				continue
			}
			n++
			var phases []string
			for _, s := range rc.MCP.Steps {
				phases = append(phases, s.Phase)
			}
			want := []string{"stage", "slot", "slot"}
			if maxStaging == 0 {
				want = []string{"", "", ""}
			}
			if d := cmp.Diff(want, phases); d != "" {
				t.Errorf("max_staging %d: phases (-want +got):\n%s", maxStaging, d)
			}
		}
		if n == 0 {
			t.Fatalf("max_staging %d: no node of pool %s with its 3 steps in the JSON", maxStaging, p.Pools[0].Name)
		}
	}
}
