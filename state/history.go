package state

import (
	"fmt"
	"time"

	"github.com/mcpfleet/mcp/model"
)

// HistoryLimit bounds each pool's pointer history: the last ten rendered configs it was
// pointed at are what mcp rollback can name (and mcp prune keeps).
const HistoryLimit = 10

// MovePointer points pool at rendered, at the time at, and records the move in the pool's
// history when it is one (rollback: a rollback made it). A pointer that stays where it is
// records nothing; the history keeps its last HistoryLimit moves.
func (s *State) MovePointer(pool, rendered string, at time.Time, rollback bool) {
	if s.Pointers == nil {
		s.Pointers = map[string]string{}
	}
	h, old := s.History[pool], s.Pointers[pool]
	if old == rendered && len(h) > 0 {
		return
	}
	if len(h) == 0 && old != "" {
		// A state written before histories were kept: the config the pool ran is known,
		// not since when (Applied zero).
		h = append(h, model.PointerChange{Rendered: old})
	}
	if old != rendered {
		h = append(h, model.PointerChange{Rendered: rendered, Applied: at.UTC().Truncate(time.Second), Rollback: rollback})
	}
	s.Pointers[pool] = rendered
	if s.History == nil {
		s.History = map[string][]model.PointerChange{}
	}
	if len(h) > HistoryLimit {
		h = h[len(h)-HistoryLimit:]
	}
	s.History[pool] = h
}

// Before is the rendered config pool ran before the one its pointer names now: the last
// entry of its history that is another config ("" when none is recorded). A pool rolled
// back once goes forward again with a second rollback, as kubectl rollout undo does.
func (s *State) Before(pool string) (model.PointerChange, bool) {
	cur := s.Pointers[pool]
	h := s.History[pool]
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Rendered != cur {
			return h[i], true
		}
	}
	return model.PointerChange{}, false
}

// checkHistory refuses a history or a rollback mark that names no pool or no config.
func (s *State) checkHistory() error {
	for pool, h := range s.History {
		for _, c := range h {
			if pool == "" || c.Rendered == "" {
				return fmt.Errorf("its pointer history of pool %q has an entry that names no pool or no rendered config", pool)
			}
		}
	}
	for pool, m := range s.RolledBack {
		if pool == "" || m.To == "" {
			return fmt.Errorf("its rollback mark of pool %q names no pool or no rendered config", pool)
		}
	}
	return nil
}
