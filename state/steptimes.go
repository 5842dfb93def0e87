package state

import (
	"fmt"
	"slices"

	"github.com/mcpfleet/mcp/model"
)

// RecordTimes adds a finished node's measured times to its pool's record.
func (s *State) RecordTimes(pool string, n model.NodeTimes) {
	if s.StepTimes == nil {
		s.StepTimes = map[string]*model.StepTimes{}
	}
	t := s.StepTimes[pool]
	if t == nil {
		t = &model.StepTimes{}
		s.StepTimes[pool] = t
	}
	t.Add(n)
}

// TrimStepTimes drops the records of pools not in pools (the configuration no longer has
// them): with each pool's record bounded, the state's is too.
func (s *State) TrimStepTimes(pools []string) {
	for p := range s.StepTimes {
		if !slices.Contains(pools, p) {
			delete(s.StepTimes, p)
		}
	}
}

func (s *State) checkStepTimes() error {
	for pool, t := range s.StepTimes {
		if pool == "" || t == nil {
			return fmt.Errorf("its record of step times names no pool, or is empty")
		}
		if err := t.Check(); err != nil {
			return fmt.Errorf("its record of pool %s's step times %w", pool, err)
		}
	}
	return nil
}

func cloneStepTimes(in map[string]*model.StepTimes) map[string]*model.StepTimes {
	if in == nil {
		return nil
	}
	out := make(map[string]*model.StepTimes, len(in))
	for k, t := range in {
		out[k] = t.Clone()
	}
	return out
}
