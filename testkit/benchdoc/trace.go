package benchdoc

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"
)

// ApplyTrace is what the JSON lines of one `mcp apply -json` tell a benchmark.
type ApplyTrace struct {
	Updated     int
	APIRequests int64 // 0 from providers that do not count them
	// Makespan is from the first node's first step to the last node's end (after its health
	// gates): the rollout alone, without the refresh and plan before it.
	Makespan time.Duration
	// Nodes are the nodes that finished, each with its first step's start (on Kubernetes,
	// just before its hand-over) and its end.
	Nodes []NodeSpan
}

// NodeSpan is one node's part of a rollout.
type NodeSpan struct {
	Node, Pool  string
	Start, Done time.Time
	// Steps is each step's own time by kind ("drain", "reboot"), as apply reports it when
	// the step is done (elapsed_ms: the provider's or the agent's part, not the waits
	// around it); a kind the node ran twice adds up.
	Steps map[string]time.Duration
}

// ReadApplyTrace reads the output of `mcp apply -json`; an error when it has no summary or
// no node finished.
func ReadApplyTrace(r io.Reader) (ApplyTrace, error) {
	var t ApplyTrace
	var first, last time.Time
	spans := map[string]*NodeSpan{}
	summary := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct {
			Timestamp time.Time `json:"@timestamp"`
			Type      string    `json:"type"`
			Event     string    `json:"event"`
			Node      string    `json:"node"`
			Pool      string    `json:"pool"`
			Step      *struct {
				Kind string `json:"kind"`
			} `json:"step"`
			ElapsedMS int64 `json:"elapsed_ms"`
			Summary   *struct {
				Updated     int
				APIRequests int64
			} `json:"summary"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return t, fmt.Errorf("mcp apply -json: %v: %.200s", err, sc.Text())
		}
		switch {
		case ev.Type == "apply_summary" && ev.Summary != nil:
			t.Updated, t.APIRequests, summary = ev.Summary.Updated, ev.Summary.APIRequests, true
		case ev.Event == "start":
			if first.IsZero() || ev.Timestamp.Before(first) {
				first = ev.Timestamp
			}
			if s := spans[ev.Node]; s == nil {
				spans[ev.Node] = &NodeSpan{Node: ev.Node, Pool: ev.Pool, Start: ev.Timestamp}
			}
		case ev.Event == "done" && ev.Step != nil:
			if s := spans[ev.Node]; s != nil {
				if s.Steps == nil {
					s.Steps = map[string]time.Duration{}
				}
				s.Steps[ev.Step.Kind] += time.Duration(ev.ElapsedMS) * time.Millisecond
			}
		case ev.Event == "node-done":
			if ev.Timestamp.After(last) {
				last = ev.Timestamp
			}
			if s := spans[ev.Node]; s != nil {
				s.Done = ev.Timestamp
			}
		}
	}
	if err := sc.Err(); err != nil {
		return t, err
	}
	if !summary || first.IsZero() || last.IsZero() {
		return t, fmt.Errorf("mcp apply -json: summary %v, first step at %v, last node done at %v", summary, first, last)
	}
	t.Makespan = last.Sub(first)
	for _, s := range spans {
		if !s.Done.IsZero() {
			t.Nodes = append(t.Nodes, *s)
		}
	}
	slices.SortFunc(t.Nodes, func(a, b NodeSpan) int { return a.Start.Compare(b.Start) })
	return t, nil
}

// Wave is the w-th group of k nodes each pool started (by start time), over all pools: when
// every node takes the same time and a pool updates k at once, these are the rollout's
// waves, and ceil(N/k) of them make the makespan.
type Wave struct {
	Nodes int
	// FirstStart is the wave's first hand-over, LastStart its last, LastDone its last end.
	FirstStart, LastStart, LastDone time.Time
	// Gap is from LastDone to the next wave's FirstStart (negative: the waves overlap; zero
	// for the last wave).
	Gap time.Duration
}

// Duration is the wave's first hand-over to its last end.
func (w Wave) Duration() time.Duration { return w.LastDone.Sub(w.FirstStart) }

// Spread is the wave's first hand-over to its last.
func (w Wave) Spread() time.Duration { return w.LastStart.Sub(w.FirstStart) }

// Waves groups the nodes into waves of k per pool, in the order each pool started them.
func Waves(nodes []NodeSpan, k int) []Wave {
	if k <= 0 {
		k = 1
	}
	byStart := slices.Clone(nodes)
	slices.SortStableFunc(byStart, func(a, b NodeSpan) int { return a.Start.Compare(b.Start) })
	seen := map[string]int{} // pool → nodes of it placed so far
	var waves []Wave
	for _, n := range byStart {
		i := seen[n.Pool] / k
		seen[n.Pool]++
		for len(waves) <= i {
			waves = append(waves, Wave{})
		}
		w := &waves[i]
		if w.Nodes == 0 || n.Start.Before(w.FirstStart) {
			w.FirstStart = n.Start
		}
		if n.Start.After(w.LastStart) {
			w.LastStart = n.Start
		}
		if n.Done.After(w.LastDone) {
			w.LastDone = n.Done
		}
		w.Nodes++
	}
	for i := 0; i+1 < len(waves); i++ {
		waves[i].Gap = waves[i+1].FirstStart.Sub(waves[i].LastDone)
	}
	return waves
}
