package chaos

import (
	"slices"
	"time"

	"github.com/mcpfleet/mcp/providers/local"
)

// Began is the order in which the nodes of logs began an update after since (their first
// working event then), as their own event logs say: what a test of a rollout order judges.
func Began(logs map[string][]local.Event, since time.Time) []string {
	at := map[string]time.Time{}
	for node, evs := range logs {
		for _, e := range evs {
			if e.Kind == local.EventWorking && e.Time.After(since) {
				at[node] = e.Time
				break
			}
		}
	}
	out := make([]string, 0, len(at))
	for n := range at {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b string) int { return at[a].Compare(at[b]) })
	return out
}
