package state

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/mcpfleet/mcp/model"
)

// Ran is where one rendered config ran in this cluster: per node, from when it ran it,
// until when it was last seen on it, and whether it stayed healthy. A later stage's plan
// reads it to tell whether the config soaked here (package clusters, docs/fleets.md).
// Every time is one the engine's clock read when it saw the node so: none is inferred.
type Ran struct {
	Pool  string             `json:"pool"`
	Nodes map[string]NodeRan `json:"nodes"`
}

// NodeRan is one node's run on a rendered config.
type NodeRan struct {
	// Since is when the node was first seen running it: when apply saw it reach it
	// (verified, health gates passed), or when a refresh first found it on it.
	Since time.Time `json:"since"`
	// Seen is the last time it was seen on it, healthy (Since or later).
	Seen time.Time `json:"seen"`
	// Unhealthy says how the node failed on it (it went Degraded, or failed its health
	// gates), when seen so; once set it stays: the config did not soak here.
	Unhealthy string `json:"unhealthy,omitempty"`
}

// MaxRan bounds the records a state keeps: the most recently seen are kept.
const MaxRan = 16

// Soaked is how long a node ran on the config, healthy, as far as seen.
func (n NodeRan) Soaked() time.Duration { return n.Seen.Sub(n.Since) }

// Reached records node of pool running rendered config name, healthy, at now: its run
// starts now unless it ran it already.
func (s *State) Reached(name, pool, node string, now time.Time) {
	r := s.ran(name, pool)
	n, ok := r.Nodes[node]
	if !ok {
		n.Since = now.UTC()
	}
	if n.Unhealthy == "" {
		n.Seen = maxTime(n.Seen, now.UTC())
	}
	r.Nodes[node] = n
}

// Failed records node of pool having failed on rendered config name (why) at now.
func (s *State) Failed(name, pool, node, why string, now time.Time) {
	r := s.ran(name, pool)
	n, ok := r.Nodes[node]
	if !ok {
		n.Since, n.Seen = now.UTC(), now.UTC()
	}
	if n.Unhealthy == "" {
		n.Unhealthy = why
	}
	r.Nodes[node] = n
}

// ran returns the record of name, made when absent.
func (s *State) ran(name, pool string) *Ran {
	if s.Ran == nil {
		s.Ran = map[string]*Ran{}
	}
	r := s.Ran[name]
	if r == nil {
		r = &Ran{Pool: pool, Nodes: map[string]NodeRan{}}
		s.Ran[name] = r
	}
	return r
}

// Observe folds a refresh of the fleet at now into the records: a node of a pool (pools:
// node to pool) on a rendered config this state knows runs it still (extending its run),
// or went Degraded — on the config it was told to move to, when it had not reached it
// (the update failed), else on the one it runs. A drifted node is not running the config
// as rendered: its run is not extended while it drifts, nor counted against the config
// (drift is not the config's failure).
func (s *State) Observe(nodes []model.Node, pools map[string]string, now time.Time) {
	for _, n := range nodes {
		pool := pools[n.Name]
		if pool == "" {
			continue
		}
		switch {
		case n.State == model.StateDegraded:
			name := cmp.Or(n.DesiredConfig, n.CurrentConfig)
			if s.Rendered[name] != nil {
				s.Failed(name, pool, n.Name, "went Degraded: "+n.Reason, now)
			}
		case n.CurrentConfig == "" || s.Rendered[n.CurrentConfig] == nil:
		case len(n.Drift) == 0 && (n.DesiredConfig == "" || n.DesiredConfig == n.CurrentConfig) && n.State != model.StateWorking:
			s.Reached(n.CurrentConfig, pool, n.Name, now)
		}
	}
}

// TrimRan drops the records of rendered configs the state no longer holds (mcp prune
// deleted them), then all but the MaxRan most recently seen.
func (s *State) TrimRan() {
	for name := range s.Ran {
		if s.Rendered[name] == nil {
			delete(s.Ran, name)
		}
	}
	if len(s.Ran) <= MaxRan {
		return
	}
	names := slices.SortedFunc(maps.Keys(s.Ran), func(a, b string) int {
		return cmp.Or(s.Ran[b].lastSeen().Compare(s.Ran[a].lastSeen()), cmp.Compare(a, b))
	})
	for _, name := range names[MaxRan:] {
		delete(s.Ran, name)
	}
}

func (r *Ran) lastSeen() time.Time {
	var t time.Time
	for _, n := range r.Nodes {
		t = maxTime(t, n.Seen)
	}
	return t
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// checkRan refuses records mcp would not have written.
func (s *State) checkRan() error {
	for name, r := range s.Ran {
		if name == "" || r == nil || r.Pool == "" {
			return fmt.Errorf("its record of where rendered config %q ran names no config or no pool", name)
		}
		for node, n := range r.Nodes {
			if node == "" || n.Since.IsZero() || n.Seen.Before(n.Since) {
				return fmt.Errorf("its record of node %q on rendered config %s has no start, or was seen before it started", node, name)
			}
		}
	}
	return nil
}

// cloneRan copies the records deeply (Reached and Failed change them in place).
func cloneRan(in map[string]*Ran) map[string]*Ran {
	if in == nil {
		return nil
	}
	out := make(map[string]*Ran, len(in))
	for k, r := range in {
		out[k] = &Ran{Pool: r.Pool, Nodes: maps.Clone(r.Nodes)}
	}
	return out
}
