package views

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/model"
)

// NodeResult is how a node the plan changed ended, for the summary at the end of apply.
type NodeResult struct {
	Node string
	// Result is "updated", "failed", "not confirmed" (steps done, health gates not
	// waited for) or "not started".
	Result string
	// Rebooted is true when the node rebooted in this apply; Evidence is what it showed of
	// it (its boot ids before and after), when it showed something.
	Rebooted bool   `json:",omitempty"`
	Evidence string `json:",omitempty"`
	// Adopted is true when the node was adopted: recorded on its target, nothing changed.
	Adopted bool `json:",omitempty"`
	// Why a node was not started (or, updated, that it was to an interim config); Held when
	// another apply would not start it either until a person acts (a hold, a paused pool).
	Why  string `json:",omitempty"`
	Held bool   `json:",omitempty"`
	// Reverted: a failure in its pool (on_failure = "revert") put it back on the config it
	// ran before, after this result.
	Reverted bool `json:",omitempty"`
}

// nodeResults lists the nodes of res: failed, not confirmed, not started, then updated,
// each kind in name order (numbers in names as numbers: worker-2 before worker-10).
func nodeResults(res *engine.ApplyResult) []NodeResult {
	var out []NodeResult
	add := func(result string, names []string) {
		names = slices.Clone(names)
		slices.SortFunc(names, naturalCompare)
		for _, n := range names {
			ns := res.NotStarted[n]
			out = append(out, NodeResult{Node: n, Result: result, Why: ns.Why, Held: ns.Held})
		}
	}
	add("failed", res.Failed)
	add("not confirmed", res.Unconfirmed)
	add("not started", append(slices.Clone(res.Skipped), res.Deferred...))
	add("updated", res.Updated)
	for i := range out {
		if out[i].Result == "updated" && slices.Contains(res.Interim, out[i].Node) {
			out[i].Why = "to an interim config: what disrupts nothing; the rest waits for the pool's pause"
		}
	}
	first := len(out)
	add("updated", res.Adopted)
	for i := first; i < len(out); i++ {
		out[i].Adopted = true
	}
	return out
}

// naturalCompare orders names with their runs of digits compared as numbers.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Or(cmp.Compare(len(na), len(nb)), strings.Compare(na, nb)); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func digits(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// marks remembers, from a progress view's events, which nodes rebooted (with what they
// showed of it), for the summary, and which were adopted, for the live lines: the step each
// finished of these. The summary's adopted nodes are the apply's result (ApplyResult.Adopted).
type marks map[string]model.Step

func (m marks) see(e engine.Event) {
	if e.Kind == engine.EventStepDone && (e.Step.Kind == model.StepReboot || e.Step.Kind == model.StepAdopt) {
		m[e.Node] = e.Step
	}
}

// doneWord is what a node that ended well became: adopted or updated.
func (m marks) doneWord(node string) string {
	if m[node].Kind == model.StepAdopt {
		return "adopted"
	}
	return "updated"
}

// fill sets the nodes' reboots in s.
func (m marks) fill(s *ApplySummary) {
	for i := range s.Nodes {
		if st, ok := m[s.Nodes[i].Node]; ok && st.Kind == model.StepReboot {
			s.Nodes[i].Rebooted, s.Nodes[i].Evidence = true, st.Evidence
		}
	}
}

// updatedShown is how many updated nodes the summary names; failed and not started ones
// are all named, as what needs looking at.
const updatedShown = 30

// writeNodeResults writes the summary's list of nodes, one a line: what became of each,
// wrapped to cols columns when cols > 0.
func writeNodeResults(w io.Writer, c painter, nodes []NodeResult, cols int) {
	if len(nodes) == 0 {
		return
	}
	name := 0
	for _, n := range nodes {
		name = max(name, len("node."+n.Node))
	}
	fmt.Fprintf(w, "\n%s\n", c.bold("Nodes:"))
	updated := 0
	for i, n := range nodes {
		if n.Result == "updated" {
			if updated++; updated > updatedShown {
				fmt.Fprintf(w, "  … and %d more updated (mcp status shows every node)\n", len(nodes)-i)
				return
			}
		}
		text := nodeResultText(c, n)
		lead := fmt.Sprintf("  %-*s  ", name, "node."+n.Node)
		for j, l := range wrapWords(text, cols-len(lead)) {
			if j > 0 {
				lead = strings.Repeat(" ", len(lead))
			}
			fmt.Fprintf(w, "%s%s\n", lead, l)
		}
	}
}

// nodeResultText is what became of a node, in words.
func nodeResultText(c painter, n NodeResult) string {
	switch n.Result {
	case "updated":
		s := c.green("updated")
		if n.Adopted {
			return c.green("adopted") + " (recorded on its target; nothing on it changed)"
		}
		if n.Rebooted {
			s += ", rebooted"
			if n.Evidence != "" {
				s += ": " + n.Evidence
			}
		}
		if n.Why != "" {
			s += " " + n.Why
		}
		if n.Reverted {
			s += ", then reverted (below)"
		}
		return s
	case "failed":
		if n.Reverted {
			return c.red("failed") + " (its error is above), then reverted (below)"
		}
		return c.red("failed") + " (its error is above)"
	case "not started":
		if n.Why == "" {
			return c.yellow("not started")
		}
		return c.yellow("not started") + ": " + n.Why
	}
	return c.yellow(n.Result)
}

// wrapWords breaks s into lines of at most cols columns at spaces, never inside a word
// (a word longer than cols gets a line of its own); cols <= 0: one line.
func wrapWords(s string, cols int) []string {
	if cols <= 0 || width(s) <= cols {
		return []string{s}
	}
	var lines []string
	line, lw := "", 0
	for _, word := range strings.Fields(s) {
		ww := width(word)
		switch {
		case line == "":
			line, lw = word, ww
		case lw+1+ww <= cols:
			line, lw = line+" "+word, lw+1+ww
		default:
			lines = append(lines, line)
			line, lw = word, ww
		}
	}
	return append(lines, line)
}

// again reports whether another apply would do more: a node failed or not confirmed, or
// one not started that no person keeps out (a hold, a paused pool).
func (s ApplySummary) again() bool {
	if len(s.Nodes) == 0 {
		return true // a summary made without its nodes: say what was always said
	}
	for _, n := range s.Nodes {
		if n.Result != "updated" && !n.Held {
			return true
		}
	}
	return false
}
