package acceptance

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers/local"
)

// witnessed maps the steps a local node's event log records to their events: what the
// fleet itself saw happen, apart from what apply says it did.
var witnessed = map[model.StepKind]local.EventKind{
	model.StepCordon: local.EventCordon, model.StepDrain: local.EventDrain,
	model.StepReboot: local.EventReboot, model.StepUncordon: local.EventUncordon,
}

// eventCounts is how many events each node's log holds now: pass it to
// assertAppliedAsPlanned as the logs before the apply.
func eventCounts(t *testing.T, fleet string) map[string]int {
	t.Helper()
	logs, err := local.ReadEvents(fleet)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for name, evs := range logs {
		n[name] = len(evs)
	}
	return n
}

// assertAppliedAsPlanned checks an apply against its plan by two witnesses. Apply's own
// JSON progress (applyJSON) must list, per node, exactly the plan's steps in the plan's
// order. The fleet's event logs, from the counts in before on, must show per node the
// plan's cordon, drain (when it evicted pods), reboot and uncordon steps in order and
// nothing of them more, and
// no event at all on a node the plan gave no steps (held, untargeted, up to date).
func assertAppliedAsPlanned(t *testing.T, fleet string, before map[string]int, plan map[string]jsonNode, applyJSON string) {
	t.Helper()
	applied, _ := appliedSteps(t, applyJSON)
	if d := cmp.Diff(planSteps(plan), applied); d != "" {
		t.Errorf("apply reports steps other than the plan's (-plan +apply):\n%s", d)
	}
	logs, err := local.ReadEvents(fleet)
	if err != nil {
		t.Fatal(err)
	}
	for name, n := range plan {
		var want []local.EventKind
		for _, s := range n.Steps {
			if k, ok := witnessed[s.Kind]; ok {
				want = append(want, k)
			}
		}
		evs := logs[name][min(before[name], len(logs[name])):]
		if len(n.Steps) == 0 {
			if len(evs) > 0 {
				t.Errorf("node %s had no steps in the plan but its log shows %v", name, eventKinds(evs))
			}
			continue
		}
		var got []local.EventKind
		for _, e := range evs {
			for _, k := range witnessed {
				if e.Kind == k {
					got = append(got, e.Kind)
				}
			}
		}
		if !slices.Contains(got, local.EventDrain) {
			// A drain that evicts nothing leaves no event: the plan's drain is then unseen.
			want = slices.DeleteFunc(want, func(k local.EventKind) bool { return k == local.EventDrain })
		}
		if !slices.Equal(got, want) {
			t.Errorf("node %s: the fleet saw %v, the plan has %v", name, got, want)
		}
	}
}
