package planner

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mcpfleet/mcp/internal/suggest"
	"github.com/mcpfleet/mcp/model"
)

// scope is what -target and -exclude leave in the rollout, checked against the
// configuration and the fleet.
type scope struct {
	pools, nodes map[string]bool // targeted (both empty: no -target, everything)
	excluded     map[string]bool
}

// newScope checks the addresses of -target ("pool.NAME", "node.NAME") and -exclude
// ("node.NAME") against the pools and the fleet: an unknown one is an error naming it, as
// Terraform refuses a target that matches nothing rather than planning nothing.
func newScope(in Input, members map[string][]*model.Node) (scope, error) {
	sc := scope{pools: map[string]bool{}, nodes: map[string]bool{}, excluded: map[string]bool{}}
	nodes := map[string]bool{}
	for _, ns := range members {
		for _, n := range ns {
			nodes[n.Name] = true
		}
	}
	pools := map[string]bool{}
	for _, p := range in.Desired.Pools {
		pools[p.Name] = true
	}
	var errs []string
	for _, t := range in.Targets {
		kind, name, err := ParseAddress(t)
		switch {
		case err != nil:
			errs = append(errs, "-target="+t+": "+err.Error()+"."+bareName(t, pools, nodes))
		case kind == "pool" && !pools[name]:
			errs = append(errs, fmt.Sprintf("-target=%s: the configuration has no pool %q.%s", t, name, suggestAddress("pool", name, pools)))
		case kind == "node" && !nodes[name]:
			errs = append(errs, fmt.Sprintf("-target=%s: no pool of the configuration selects a node %q in the fleet.%s", t, name, suggestAddress("node", name, nodes)))
		case kind == "pool":
			sc.pools[name] = true
		default:
			sc.nodes[name] = true
		}
	}
	for _, x := range in.Exclude {
		kind, name, err := ParseAddress(x)
		switch {
		case err != nil:
			errs = append(errs, "-exclude="+x+": "+err.Error()+"."+bareName(x, nil, nodes))
		case kind != "node":
			errs = append(errs, fmt.Sprintf("-exclude=%s: only nodes can be excluded (node.NAME); to keep a pool out, pause it or -target the others", x))
		case !nodes[name]:
			errs = append(errs, fmt.Sprintf("-exclude=%s: no pool of the configuration selects a node %q in the fleet.%s", x, name, suggestAddress("node", name, nodes)))
		default:
			sc.excluded[name] = true
		}
	}
	if len(errs) > 0 {
		return scope{}, &ScopeError{Problems: errs}
	}
	return sc, nil
}

// ScopeError is -target and -exclude addresses that name nothing the plan has: each
// problem names its flag and address, with the nearest one there is.
type ScopeError struct{ Problems []string }

// Error is the problems, one a line.
func (e *ScopeError) Error() string { return strings.Join(e.Problems, "\n") }

// suggestAddress is " Did you mean "node.worker-1"?" for the name of names nearest to a
// misspelt one, as an address of kind.
func suggestAddress(kind, name string, names map[string]bool) string {
	best := suggest.Nearest(name, slices.Sorted(maps.Keys(names)))
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" Did you mean %q?", kind+"."+best)
}

// bareName is " Did you mean "pool.worker"?" for an address given as a bare pool or node
// name.
func bareName(addr string, pools, nodes map[string]bool) string {
	switch {
	case pools[addr]:
		return fmt.Sprintf(" Did you mean %q?", "pool."+addr)
	case nodes[addr]:
		return fmt.Sprintf(" Did you mean %q?", "node."+addr)
	}
	return ""
}

// ParseAddress splits a resource address of the plan: "pool.NAME" or "node.NAME".
func ParseAddress(addr string) (kind, name string, err error) {
	kind, name, ok := strings.Cut(addr, ".")
	if !ok || name == "" || (kind != "pool" && kind != "node") {
		return "", "", fmt.Errorf("%q is not an address: want pool.NAME or node.NAME", addr)
	}
	return kind, name, nil
}

func (sc scope) targeting() bool { return len(sc.pools)+len(sc.nodes) > 0 }

// poolTargeted reports whether the pool as a whole is in scope: only then does its boot
// pointer move (a node targeted alone is tried on the new config; new nodes keep booting
// the old one).
func (sc scope) poolTargeted(pool string) bool { return !sc.targeting() || sc.pools[pool] }

func (sc scope) nodeTargeted(pool, node string) bool {
	return !sc.targeting() || sc.pools[pool] || sc.nodes[node]
}

// keepOut takes a node out of the rollout: no steps, whatever it needs. Its condition
// stays: a held node out of service still counts against its pool's budget.
func keepOut(np *NodePlan, held string, untargeted bool) {
	if np.Changed() && np.Action == NodeResume {
		np.Warnings = append(np.Warnings, "an interrupted update of this node is unfinished; it stays as it is while the node is kept out")
	}
	np.Held, np.Untargeted = held, untargeted
	np.Action, np.Steps, np.Reboot = NodeNoOp, nil, false
}
