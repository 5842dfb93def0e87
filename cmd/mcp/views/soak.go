package views

import (
	"bufio"
	"fmt"
	"io"

	"github.com/mcpfleet/mcp/engine/planfile"
)

// The soak gate's word on a plan (package clusters): each pool the plan changes, in a
// cluster of a stage that comes after others, soaked, refused, or refused and let through
// by -ignore-soak.

// soakVerdict is the gate's word on n, in a word or three.
func soakVerdict(n planfile.SoakNote) string {
	switch {
	case n.Overridden:
		return "not soaked, let through by -ignore-soak"
	case n.Refused:
		return "refused, not soaked"
	}
	return "soaked"
}

// writeSoak writes the soak gate's notes as text under the plan.
func writeSoak(out io.Writer, notes []planfile.SoakNote, color bool) {
	if len(notes) == 0 {
		return
	}
	c := painter(color)
	w := bufio.NewWriter(out)
	fmt.Fprintf(w, "\n%s\n", c.bold("Soak gate (what the earlier stages ran):"))
	for _, n := range Shown(notes) {
		verdict := soakVerdict(n)
		switch {
		case n.Overridden:
			verdict = c.yellow(verdict)
		case n.Refused:
			verdict = c.red(verdict)
		default:
			verdict = c.green(verdict)
		}
		fmt.Fprintf(w, "  pool %s: %s: %s\n", n.Pool, verdict, n.Reason)
	}
	w.Flush()
}

// mdSoak writes the soak gate's notes in a plan's Markdown.
func mdSoak(w *bufio.Writer, notes []planfile.SoakNote) {
	if len(notes) == 0 {
		return
	}
	fmt.Fprintf(w, "\n**Soak gate** (what the earlier stages ran):\n\n")
	for _, n := range notes {
		fmt.Fprintf(w, "- pool %s: **%s**: %s\n", mdCode(n.Pool), soakVerdict(n), mdEscape(n.Reason))
	}
}

// soakRefused says whether the gate refuses the plan (not overridden).
func soakRefused(notes []planfile.SoakNote) bool {
	for _, n := range notes {
		if n.Refused && !n.Overridden {
			return true
		}
	}
	return false
}
