package model

import (
	"fmt"
	"slices"
	"time"
)

// MaxStepSamples bounds the times a pool's record keeps: per step kind the last
// MaxStepSamples steps, and the health gates of the last MaxStepSamples nodes.
const MaxStepSamples = 32

// StepTimes is what a pool's updates took, as apply measured them on the nodes that
// finished (every step done, health gates passed): per step kind the durations of the last
// MaxStepSamples steps of that kind, oldest first, and how long the nodes' health gates
// took. A plan estimates the pool's next rollout from their medians (planner.Estimate).
type StepTimes struct {
	Steps  map[StepKind][]time.Duration `json:"steps,omitempty"`
	Health []time.Duration              `json:"health,omitempty"`
	// Nodes counts the finished nodes recorded, at most MaxStepSamples (the last ones).
	Nodes int `json:"nodes"`
}

// StepTime is one finished step of a node and how long it took.
type StepTime struct {
	Kind StepKind
	Took time.Duration
}

// NodeTimes is one finished node's measured times: its steps in the order they ran, and
// its health gates.
type NodeTimes struct {
	Steps  []StepTime
	Health time.Duration
}

// Add records one finished node's times, keeping the last MaxStepSamples of each.
func (t *StepTimes) Add(n NodeTimes) {
	if t.Steps == nil && len(n.Steps) > 0 {
		t.Steps = map[StepKind][]time.Duration{}
	}
	for _, s := range n.Steps {
		t.Steps[s.Kind] = keepLast(append(t.Steps[s.Kind], max(s.Took, 0)))
	}
	t.Health = keepLast(append(t.Health, max(n.Health, 0)))
	t.Nodes = min(t.Nodes+1, MaxStepSamples)
}

func keepLast(d []time.Duration) []time.Duration {
	if len(d) > MaxStepSamples {
		return slices.Clone(d[len(d)-MaxStepSamples:])
	}
	return d
}

// Median is the median time of the step kind's samples (false: none recorded).
func (t *StepTimes) Median(k StepKind) (time.Duration, bool) {
	if t == nil {
		return 0, false
	}
	return Median(t.Steps[k])
}

// Median is the median of ds (the mean of the middle two of an even count); false when
// ds is empty.
func Median(ds []time.Duration) (time.Duration, bool) {
	if len(ds) == 0 {
		return 0, false
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 0 {
		return (s[m-1] + s[m]) / 2, true
	}
	return s[m], true
}

// Clone copies t deeply.
func (t *StepTimes) Clone() *StepTimes {
	if t == nil {
		return nil
	}
	c := &StepTimes{Health: slices.Clone(t.Health), Nodes: t.Nodes}
	if t.Steps != nil {
		c.Steps = make(map[StepKind][]time.Duration, len(t.Steps))
		for k, v := range t.Steps {
			c.Steps[k] = slices.Clone(v)
		}
	}
	return c
}

// Check refuses a record mcp would not have written: an unknown step kind, a negative
// time, more samples than kept.
func (t *StepTimes) Check() error {
	for k, ds := range t.Steps {
		if !k.Valid() {
			return fmt.Errorf("times of an unknown step kind %d", k)
		}
		if err := checkSamples(k.String(), ds); err != nil {
			return err
		}
	}
	if t.Nodes < 0 || t.Nodes > MaxStepSamples {
		return fmt.Errorf("counts %d nodes (0 to %d)", t.Nodes, MaxStepSamples)
	}
	return checkSamples("health", t.Health)
}

func checkSamples(what string, ds []time.Duration) error {
	if len(ds) > MaxStepSamples {
		return fmt.Errorf("%d times of %s (at most %d are kept)", len(ds), what, MaxStepSamples)
	}
	if slices.ContainsFunc(ds, func(d time.Duration) bool { return d < 0 }) {
		return fmt.Errorf("a negative time of %s", what)
	}
	return nil
}
