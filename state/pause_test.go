package state

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
)

// A pool is paused since the first apply that saw it paused; a later one keeps that time,
// a change of mode too; unpaused or gone, it is forgotten. The record survives the state's
// JSON and a merge without the lock.
func TestNotePauses(t *testing.T) {
	t1 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Hour)
	s := New()
	s.Lineage = "l"
	pools := []model.Pool{{Name: "a", Paused: model.PauseAll}, {Name: "b"}}
	if !s.NotePauses(pools, t1) || !s.PausedSince["a"].Equal(t1) || len(s.PausedSince) != 1 {
		t.Fatalf("first: %v", s.PausedSince)
	}
	pools[0].Paused = model.PauseDisruptive
	if s.NotePauses(pools, t2) || !s.PausedSince["a"].Equal(t1) {
		t.Errorf("again, another mode: %v", s.PausedSince)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	read, err := Unmarshal(b)
	if err != nil || !read.PausedSince["a"].Equal(t1) {
		t.Fatalf("read back: %v %v", read, err)
	}
	theirs := read.Clone()
	theirs.Pointers["b"] = "rendered-b-1"
	ours := read.Clone()
	if !ours.NotePauses([]model.Pool{{Name: "a"}, {Name: "b", Paused: model.PauseAll}}, t2) || ours.PausedSince["a"] != (time.Time{}) || !ours.PausedSince["b"].Equal(t2) {
		t.Errorf("unpaused a, paused b: %v", ours.PausedSince)
	}
	m, err := Merge(read, ours, theirs)
	if err != nil || len(m.PausedSince) != 1 || !m.PausedSince["b"].Equal(t2) || m.Pointers["b"] != "rendered-b-1" {
		t.Errorf("merged: %v %v", m, err)
	}
	if !m.NotePauses(nil, t2) || m.PausedSince != nil {
		t.Errorf("no pool declared: %v", m.PausedSince)
	}
}
