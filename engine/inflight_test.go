package engine

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state"
)

// What was in flight is read from the records the interrupted apply made, never from how
// a node looks: the journal entry opened before its first action (with the intent on the
// node's claim, written with each action, as the later word), or a held claim whose intent
// says its apply cordoned the node. A node finished under the lock keeps its claim on the
// node, unreleased, with the intent of its last action: the journal, which dropped its
// entry, says it is done.
func TestInFlightFromTheRecords(t *testing.T) {
	claim := func(apply string, ph model.Phase, cordoned bool) *model.Claim {
		return &model.Claim{Apply: apply, Lock: "L", State: "mine", Since: time.Unix(0, 0),
			Intent: &model.Intent{Target: "rendered-x", Phase: ph, Cordoned: cordoned}}
	}
	released := claim("A", model.PhaseUncordon, true)
	released.Released = time.Unix(1, 0)
	fleet := &model.Fleet{Nodes: []model.Node{
		// Cordoned by A, killed before the cordon was journaled: the begin record and the
		// intent on the claim.
		{Name: "begun", Unschedulable: true, Claim: claim("A", model.PhaseCordon, true)},
		// Handed over by A, killed before a step was journaled.
		{Name: "handed", State: model.StateWorking, DesiredConfig: "rendered-x", Claim: claim("A", model.PhaseHandOver, true)},
		// A journal of an mcp that wrote no intents: its steps say it all.
		{Name: "old-journal", Unschedulable: true},
		// Uncordon intended, written just before the uncordon (a provider that cannot
		// carry it in the uncordon's write): the journal's cordon stands.
		{Name: "uncordoning", Unschedulable: true, Claim: claim("A", model.PhaseUncordon, false)},
		// Finished under the lock: its claim stays on the node as a record; no entry.
		{Name: "finished", Claim: claim("A", model.PhaseHandOver, false)},
		// Another state's apply cordoned it and stopped: no entry here, its claim says so.
		{Name: "theirs", Unschedulable: true, Claim: func() *model.Claim { c := claim("B", model.PhaseHandOver, true); c.State = "theirs"; return c }()},
		// Cordoned under a released claim: that apply ended with the node.
		{Name: "released", Unschedulable: true, Claim: released},
		// An intent of no phase mcp writes: it says nothing.
		{Name: "hand-edited", Unschedulable: true, Claim: claim("D", model.Phase("half-done"), true)},
		// Looks in flight — Working on a target, cordoned under a held claim — and nothing
		// recorded says so.
		{Name: "shape", Unschedulable: true, State: model.StateWorking, DesiredConfig: "rendered-x",
			Claim: &model.Claim{Apply: "C", Since: time.Unix(0, 0)}},
	}}
	st := state.New()
	st.Lineage = "mine"
	st.Journal = map[string]model.JournalEntry{
		"begun":       {Apply: "A", From: "rendered-old", Target: "rendered-x"},
		"handed":      {Apply: "A", From: "rendered-old", Target: "rendered-x", Done: []string{"cordon", "drain"}},
		"old-journal": {From: "rendered-old", Target: "rendered-x", Done: []string{"cordon"}},
		"uncordoning": {Apply: "A", From: "rendered-old", Target: "rendered-x", Done: []string{"cordon", "drain", "write /etc/a"}},
	}
	want := []model.InFlight{
		{Node: "begun", Apply: "A", From: "rendered-old", Target: "rendered-x", Phase: model.PhaseCordon, Cordoned: true},
		{Node: "handed", Apply: "A", From: "rendered-old", Target: "rendered-x", Phase: model.PhaseHandOver, Cordoned: true, Done: []string{"cordon", "drain"}},
		{Node: "old-journal", From: "rendered-old", Target: "rendered-x", Phase: model.PhaseCordon, Cordoned: true, Done: []string{"cordon"}},
		{Node: "uncordoning", Apply: "A", From: "rendered-old", Target: "rendered-x", Phase: model.PhaseUncordon, Cordoned: true, Done: []string{"cordon", "drain", "write /etc/a"}},
		{Node: "theirs", Apply: "B", Target: "rendered-x", Phase: model.PhaseHandOver, Cordoned: true},
	}
	if d := cmp.Diff(want, inFlight(st, fleet)); d != "" {
		t.Errorf("in flight (-want +got):\n%s", d)
	}
}
