package benchdoc

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// ApplyTrace is what the JSON lines of one `mcp apply -json` tell a benchmark.
type ApplyTrace struct {
	Updated     int
	APIRequests int64 // 0 from providers that do not count them
	// Makespan is from the first node's first step to the last node's end (after its health
	// gates): the rollout alone, without the refresh and plan before it.
	Makespan time.Duration
}

// ReadApplyTrace reads the output of `mcp apply -json`; an error when it has no summary or
// no node finished.
func ReadApplyTrace(r io.Reader) (ApplyTrace, error) {
	var t ApplyTrace
	var first, last time.Time
	summary := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct {
			Timestamp time.Time `json:"@timestamp"`
			Type      string    `json:"type"`
			Event     string    `json:"event"`
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
		case ev.Event == "start" && (first.IsZero() || ev.Timestamp.Before(first)):
			first = ev.Timestamp
		case ev.Event == "node-done" && ev.Timestamp.After(last):
			last = ev.Timestamp
		}
	}
	if err := sc.Err(); err != nil {
		return t, err
	}
	if !summary || first.IsZero() || last.IsZero() {
		return t, fmt.Errorf("mcp apply -json: summary %v, first step at %v, last node done at %v", summary, first, last)
	}
	t.Makespan = last.Sub(first)
	return t, nil
}
