package state

import (
	"maps"
	"time"

	"github.com/mcpfleet/mcp/model"
)

// NotePauses records the pools' pauses as an apply that starts at now sees them: a paused
// pool without a record is paused since now; a record of a pool not paused (or no longer
// declared) is forgotten. It reports whether a record changed.
func (s *State) NotePauses(pools []model.Pool, now time.Time) bool {
	before := maps.Clone(s.PausedSince)
	paused := map[string]bool{}
	for _, p := range pools {
		if !p.Paused.On() {
			continue
		}
		paused[p.Name] = true
		if _, ok := s.PausedSince[p.Name]; !ok {
			if s.PausedSince == nil {
				s.PausedSince = map[string]time.Time{}
			}
			s.PausedSince[p.Name] = now.UTC()
		}
	}
	maps.DeleteFunc(s.PausedSince, func(pool string, _ time.Time) bool { return !paused[pool] })
	if len(s.PausedSince) == 0 {
		s.PausedSince = nil
	}
	return !maps.EqualFunc(before, s.PausedSince, time.Time.Equal)
}
