package planner

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpfleet/mcp/model"
)

// rolloutOrder is the order of the pool's nodes (indexes into plans and nodes): changing
// nodes out of service already first (they take no more of the budget), then the changing
// ones in the pool's order — the nodes its order lists, in that order, then zone, then
// oldest (or newest), then name (the MCO's order) —, unchanged nodes last, by name. It
// records the order in pp, and warns of listed names that are no node of the pool.
func rolloutOrder(pp *PoolPlan, o model.Order, plans []NodePlan, nodes []*model.Node) []int {
	pp.Order, pp.OrderNodes = cmp.Or(o.By, model.OrderOldest), o.Nodes
	if len(o.Nodes) > 0 {
		pp.Order = model.OrderList
	}
	listed := make(map[string]int, len(o.Nodes))
	for i, name := range o.Nodes {
		listed[name] = i
	}
	for _, n := range nodes {
		delete(listed, n.Name)
	}
	for i, name := range o.Nodes {
		if _, missing := listed[name]; missing {
			pp.Warnings = append(pp.Warnings, fmt.Sprintf("order names node %q (%s), which is no node of pool %s: it is left out of the order",
				name, o.NodeRanges[i], pp.Name))
		}
	}
	at := make(map[string]int, len(o.Nodes))
	for i, name := range o.Nodes {
		at[name] = i + 1
	}
	rank := func(i int) int {
		switch {
		case !plans[i].Changed():
			return 2
		case plans[i].Condition != "":
			return 0
		}
		return 1
	}
	age := func(a, b *model.Node) int { return a.Created.Compare(b.Created) }
	if o.By == model.OrderNewest {
		age = func(a, b *model.Node) int { return b.Created.Compare(a.Created) }
	}
	order := make([]int, len(nodes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		na, nb := nodes[a], nodes[b]
		if ra, rb := rank(a), rank(b); ra != rb || ra == 2 {
			return cmp.Or(ra-rb, strings.Compare(na.Name, nb.Name))
		}
		if la, lb := at[na.Name], at[nb.Name]; la != lb {
			switch {
			case la == 0:
				return 1
			case lb == 0:
				return -1
			}
			return la - lb
		}
		return cmp.Or(strings.Compare(na.Zone, nb.Zone), age(na, nb), strings.Compare(na.Name, nb.Name))
	})
	return order
}

// OrderWords says a pool's rollout order for people: "zone, then oldest",
// "w-3, w-1, then zone, then oldest".
func OrderWords(pp *PoolPlan) string {
	by := "zone, then oldest"
	if pp.Order == model.OrderNewest {
		by = "zone, then newest"
	}
	if len(pp.OrderNodes) == 0 {
		return by
	}
	return strings.Join(pp.OrderNodes, ", ") + ", then " + by
}
