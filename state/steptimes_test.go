package state

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

// Step times go through the state's JSON unchanged (step kinds by name), survive a merge
// with a state another apply wrote, and go with their pool.
func TestStepTimesRoundTripMergeTrim(t *testing.T) {
	s := New()
	s.RecordTimes("worker", model.NodeTimes{Steps: []model.StepTime{{Kind: model.StepDrain, Took: 2 * time.Second},
		{Kind: model.StepReboot, Took: time.Minute}}, Health: time.Second})
	s.RecordTimes("infra", model.NodeTimes{Health: time.Second})
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"step_times":{"infra"`) || !strings.Contains(string(b), `"reboot":[60000000000]`) {
		t.Errorf("state JSON: %s", b)
	}
	got, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(s.StepTimes, got.StepTimes); d != "" {
		t.Errorf("after a round trip (-want +got):\n%s", d)
	}
	base, theirs := New(), New()
	theirs.Lineage, base.Lineage = s.Lineage, s.Lineage
	merged, err := Merge(base, s, theirs)
	if err != nil {
		t.Fatal(err)
	}
	if merged.StepTimes["worker"] == nil || merged.StepTimes["worker"].Nodes != 1 {
		t.Errorf("merged step times: %+v", merged.StepTimes)
	}
	s.TrimStepTimes([]string{"worker"})
	if s.StepTimes["infra"] != nil || s.StepTimes["worker"] == nil {
		t.Errorf("after trimming to pool worker: %+v", s.StepTimes)
	}
}

// A record mcp would not write is refused when read.
func TestStepTimesChecked(t *testing.T) {
	for name, bad := range map[string]string{
		"negative":  `{"worker":{"steps":{"drain":[-1]},"nodes":1}}`,
		"too many":  `{"worker":{"health":[` + strings.Repeat("1,", model.MaxStepSamples) + `1],"nodes":1}}`,
		"no pool":   `{"":{"nodes":1}}`,
		"bad count": `{"worker":{"nodes":-1}}`,
	} {
		b := `{"version":4,"lineage":"l","serial":1,"step_times":` + bad + `}`
		if _, err := Unmarshal([]byte(b)); err == nil {
			t.Errorf("%s: a state with step_times %s was read", name, bad)
		}
	}
	if _, err := Unmarshal([]byte(`{"version":4,"lineage":"l","serial":1,"step_times":{"worker":{"steps":{"nap":[1]},"nodes":1}}}`)); err == nil {
		t.Error("an unknown step kind was read")
	}
}
