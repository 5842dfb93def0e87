package views

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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
