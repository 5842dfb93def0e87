package views

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/planner"
)

// Terraform's words for -target, which mcp's targeting follows: it is for exceptional use.
const (
	targetPlanTitle  = "Resource targeting is in effect"
	targetPlanDetail = "You are creating a plan with the -target option, which means that the result of this plan may not represent all of the changes requested by the current configuration.\n\n" +
		"The -target option is not for routine use, and is provided only for exceptional situations such as recovering from errors or mistakes, or when mcp specifically suggests to use it as part of an error message."
	targetApplyTitle  = "Applied changes may be incomplete"
	targetApplyDetail = "The plan was created with the -target option in effect, so some changes requested in the configuration may have been ignored. Run the following command to verify that no other changes are pending:\n    mcp plan\n\n" +
		"Note that the -target option is not suitable for routine use, and is provided only for exceptional situations such as recovering from errors or mistakes, or when mcp specifically suggests to use it as part of an error message."
)

// warning writes a warning as Terraform's human view boxes its diagnostics.
func warning(w io.Writer, c painter, title, detail string) {
	fmt.Fprintf(w, "\n╷\n│ %s %s\n│\n", c.yellow("Warning:"), c.bold(title))
	for _, line := range strings.Split(detail, "\n") {
		if line == "" {
			fmt.Fprintln(w, "│")
			continue
		}
		fmt.Fprintf(w, "│ %s\n", line)
	}
	fmt.Fprintln(w, "╵")
}

// Targeted warns, at the end of an apply of a plan made with -target, that the
// configuration may not be fully applied (Terraform's warning).
func (v applyHuman) Targeted() {
	warning(v.text.w, painter(v.text.color), targetApplyTitle, targetApplyDetail)
}

// Targeted writes the warning as a diagnostic line, as Terraform's machine-readable UI.
func (v applyJSON) Targeted() {
	json.NewEncoder(v.approval.w).Encode(map[string]any{"@level": "warn", "@message": "Warning: " + targetApplyTitle,
		"@timestamp": time.Now().UTC().Format(time.RFC3339Nano), "type": "diagnostic",
		"diagnostic": map[string]string{"severity": "warning", "summary": targetApplyTitle, "detail": targetApplyDetail}})
}

// LeftOutNode is a node the plan left as it is although its config changes, and why.
type LeftOutNode struct{ Name, Why string }

// LeftOutOf lists the plan's nodes that were kept out of it — held, excluded, untargeted —
// whatever they need: the plan gave them no steps, so apply can say nothing of them.
func LeftOutOf(p *planner.Rollout) []LeftOutNode {
	var out []LeftOutNode
	for _, n := range p.Nodes {
		switch {
		case n.Held != "":
			out = append(out, LeftOutNode{n.Name, "held: " + n.Held})
		case n.Untargeted:
			out = append(out, LeftOutNode{n.Name, "not targeted"})
		}
	}
	return out
}

const leftOutTitle = "Nodes left as they are"

func leftOutDetail(nodes []LeftOutNode) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The plan kept %s out of this apply, not changed whatever the configuration asks of them:\n", plural(len(nodes), "%d node", "%d nodes"))
	for _, n := range nodes {
		fmt.Fprintf(&b, "  node.%s (%s)\n", n.Name, n.Why)
	}
	b.WriteString("Release the hold, or plan without -target or -exclude, and run mcp apply again to update them.")
	return b.String()
}

// LeftOut warns of the nodes the plan left out, as Targeted warns of -target.
func (v applyHuman) LeftOut(nodes []LeftOutNode) {
	if nodes = Shown(nodes); len(nodes) > 0 {
		warning(v.text.w, painter(v.text.color), leftOutTitle, leftOutDetail(nodes))
	}
}

// LeftOut writes the warning as a diagnostic line.
func (v applyJSON) LeftOut(nodes []LeftOutNode) {
	if len(nodes) == 0 {
		return
	}
	json.NewEncoder(v.approval.w).Encode(map[string]any{"@level": "warn", "@message": "Warning: " + leftOutTitle,
		"@timestamp": time.Now().UTC().Format(time.RFC3339Nano), "type": "diagnostic",
		"diagnostic": map[string]string{"severity": "warning", "summary": leftOutTitle, "detail": leftOutDetail(nodes)}})
}
