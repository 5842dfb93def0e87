package state

import (
	"maps"
	"testing"

	"github.com/mcpfleet/mcp/model"
)

// What one writer changed since it read the state is written over another writer's state;
// what it did not change is the other's.
func TestMerge(t *testing.T) {
	base := New()
	base.Serial = 3
	base.Pointers = map[string]string{"worker": "rendered-worker-1", "infra": "rendered-infra-1", "gone": "rendered-gone-1"}
	base.Journal = map[string]model.JournalEntry{"worker-0": {Target: "rendered-worker-1", Done: []string{"cordon"}}}

	ours := base.Clone()
	ours.Pointers["worker"] = "rendered-worker-2" // moved by us
	delete(ours.Pointers, "gone")                 // removed by us
	ours.Journal["worker-1"] = model.JournalEntry{Target: "rendered-worker-2", Done: []string{"cordon"}}
	delete(ours.Journal, "worker-0") // finished by us
	ours.Rendered["rendered-worker-2"] = &model.Rendered{Name: "rendered-worker-2"}

	theirs := base.Clone()
	theirs.Serial = 5
	theirs.Pointers["infra"] = "rendered-infra-2" // moved by them
	theirs.Journal["infra-0"] = model.JournalEntry{Target: "rendered-infra-2", Done: []string{"cordon", "drain"}}
	theirs.Rendered["rendered-infra-2"] = &model.Rendered{Name: "rendered-infra-2"}

	m, err := Merge(base, ours, theirs)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"worker": "rendered-worker-2", "infra": "rendered-infra-2"}; !maps.Equal(m.Pointers, want) {
		t.Errorf("pointers %v, want %v", m.Pointers, want)
	}
	if _, ok := m.Journal["worker-0"]; ok || len(m.Journal["worker-1"].Done) != 1 || len(m.Journal["infra-0"].Done) != 2 {
		t.Errorf("journal %v", m.Journal)
	}
	if m.Rendered["rendered-worker-2"] == nil || m.Rendered["rendered-infra-2"] == nil || m.Serial != 5 || m.Lineage != base.Lineage {
		t.Errorf("rendered %v, serial %d, lineage %s", m.Rendered, m.Serial, m.Lineage)
	}
	// Another lineage is another state, unless there was none when ours started.
	other := New()
	if _, err := Merge(base, ours, other); err == nil {
		t.Error("states of two lineages merged")
	}
	fresh := &State{Pointers: map[string]string{}}
	if m, err := Merge(fresh, ours, theirs); err != nil || m.Lineage != theirs.Lineage {
		t.Errorf("from no state: lineage %s, %v; want the first writer's", m.Lineage, err)
	}
}
