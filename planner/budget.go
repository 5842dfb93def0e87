package planner

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mcpfleet/mcp/model"
)

// Condition says how a node is out of service, or "" when it is Ready, schedulable and
// settled: "NotReady", "cordoned", "Degraded: REASON", "updating" (its agent is Working, or
// it was told to move to a config it does not run yet — its agent will act whoever is
// watching), joined by ", ". It is what the budget counts, the MCO's "unavailable".
func Condition(n *model.Node) string {
	var why []string
	if !n.Ready {
		why = append(why, "NotReady")
	}
	if n.Unschedulable {
		why = append(why, "cordoned")
	}
	switch {
	case n.State == model.StateDegraded:
		why = append(why, "Degraded: "+n.Reason)
	case n.Updating():
		why = append(why, "updating")
	}
	return strings.Join(why, ", ")
}

// Unavailable reports whether the node counts against its pool's max_unavailable.
func Unavailable(n *model.Node) bool { return Condition(n) != "" }

// Room is the one budget rule, used by the plan's prediction and by apply before it starts
// each node: node may start when, counting the pool's nodes that are out of service now
// (observed) and those apply is updating (busy), the pool stays within max nodes out of
// service with it. A node that is out of service already takes no more of the budget: it
// is updated in its own slot, even when the pool is over its budget. When there is no
// room, the reason names what is out.
func Room(max int, node string, observed []model.Node, busy map[string]bool) (bool, string) {
	why := make(map[string]string, len(busy))
	for name := range busy {
		why[name] = "updating"
	}
	return RoomFor(max, node, observed, why)
}

// RoomFor is Room with why each busy node takes a slot ("updating", or "soaking until …"
// for a finished node whose slot the pool's soak keeps taken).
func RoomFor(max int, node string, observed []model.Node, busy map[string]string) (bool, string) {
	out := make(map[string]string, len(busy))
	for name, why := range busy {
		out[name] = why
	}
	for i := range observed {
		if c := Condition(&observed[i]); c != "" {
			if observed[i].Name == node {
				return true, ""
			}
			out[observed[i].Name] = c
		}
	}
	if len(out)+1 <= max {
		return true, ""
	}
	names := slices.Sorted(maps.Keys(out))
	desc := make([]string, len(names))
	for i, k := range names {
		desc[i] = k + " (" + out[k] + ")"
	}
	verb := "are"
	if len(out) == 1 {
		verb = "is"
	}
	return false, fmt.Sprintf("max_unavailable %d: %d of the pool's nodes %s out of service: %s",
		max, len(out), verb, strings.Join(desc, ", "))
}
