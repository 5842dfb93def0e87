package state

import (
	"testing"
	"time"
)

// A pool's history records each move of its pointer, at most HistoryLimit of them, starts
// with the pointer a state from before histories had, and Before is the last other config.
func TestPointerHistory(t *testing.T) {
	s := New()
	s.Pointers["worker"] = "r-old" // a state written before histories were kept
	at := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
	s.MovePointer("worker", "r-0", at, false)
	if h := s.History["worker"]; len(h) != 2 || h[0].Rendered != "r-old" || !h[0].Applied.IsZero() || h[1].Rendered != "r-0" || !h[1].Applied.Equal(at) {
		t.Fatalf("history after the first move: %+v", h)
	}
	if b, ok := s.Before("worker"); !ok || b.Rendered != "r-old" {
		t.Errorf("before: %+v %v", b, ok)
	}
	s.MovePointer("worker", "r-0", at, false) // no move
	for i := 1; i <= 12; i++ {
		s.MovePointer("worker", "r-"+string(rune('a'+i)), at.Add(time.Duration(i)*time.Minute), i == 12)
	}
	h := s.History["worker"]
	if len(h) != HistoryLimit || h[len(h)-1].Rendered != "r-m" || !h[len(h)-1].Rollback || h[0].Rendered != "r-d" {
		t.Errorf("history after 14 moves: %+v", h)
	}
	if b, _ := s.Before("worker"); b.Rendered != "r-l" || s.Pointers["worker"] != "r-m" {
		t.Errorf("before %s, pointer %s", b.Rendered, s.Pointers["worker"])
	}
	if _, ok := New().Before("worker"); ok {
		t.Error("a pool without history has a config before")
	}
}
