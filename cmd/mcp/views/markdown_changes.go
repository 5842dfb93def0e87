package views

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/mcpfleet/mcp/planner"
)

// MarkdownLimit is the most characters mcp show -markdown prints: GitHub refuses a comment
// longer than 65,536 characters. mdMargin is kept for the notes of what was cut.
const (
	MarkdownLimit = 65536
	mdMargin      = 2048
)

// mdBudget is what is left of MarkdownLimit for the diffs (nil: none are written).
type mdBudget struct {
	left int
	cut  int // changes left out for want of room
}

func hasItems(pp planner.PoolPlan) bool {
	for _, ch := range pp.Changes {
		if len(ch.Items) > 0 {
			return true
		}
	}
	return false
}

// mdChanges writes each of the pool's changes as a <details> block: per item its line and
// a diff block. Items that do not fit the budget are left out, and counted in a note.
func mdChanges(w *bufio.Writer, pp planner.PoolPlan, b *mdBudget) {
	if b == nil || !hasItems(pp) {
		return
	}
	for _, ch := range pp.Changes {
		if len(ch.Items) == 0 {
			continue
		}
		head := fmt.Sprintf("\n<details><summary>%s</summary>\n\n", htmlEscaper.Replace(mdChangeSummary(ch, pp)))
		const tail = "</details>\n"
		if b.left < len(head)+len(tail) {
			b.cut += len(ch.Items)
			continue
		}
		b.left -= len(head) + len(tail)
		w.WriteString(head)
		cut := 0
		for _, it := range ch.Items {
			block := mdItem(ch, it)
			if len(block) > b.left {
				cut++
				continue
			}
			b.left -= len(block)
			w.WriteString(block)
		}
		if cut > 0 {
			fmt.Fprintf(w, "\n%s not shown: this comment would pass GitHub's limit of %d characters; `mcp show PLANFILE` shows every diff.\n",
				plural(cut, "%d more change", "%d more changes"), MarkdownLimit)
			b.cut += cut
		}
		w.WriteString(tail)
	}
}

func hasDriftDiffs(nodes []*planner.NodePlan) bool {
	for _, n := range nodes {
		for _, d := range n.Drift {
			if d.Diff != "" {
				return true
			}
		}
	}
	return false
}

// mdDriftDiffs writes, per drifted file whose content the node showed, a <details> block
// with how it differs on the node, within the budget.
func mdDriftDiffs(w *bufio.Writer, nodes []*planner.NodePlan, b *mdBudget) {
	if b == nil {
		return
	}
	cut := 0
	defer func() {
		if cut > 0 {
			fmt.Fprintf(w, "\n%s not shown: this comment would pass GitHub's limit of %d characters; `mcp show PLANFILE` shows them.\n",
				plural(cut, "%d drift diff", "%d drift diffs"), MarkdownLimit)
		}
	}()
	for _, n := range nodes {
		for _, d := range n.Drift {
			if d.Diff == "" {
				continue
			}
			fence := strings.Repeat("`", max(3, longestRun(d.Diff, '`')+1))
			block := fmt.Sprintf("\n<details><summary>Drift on node.%s: %s</summary>\n\n%sdiff\n%s%s\n\n</details>\n",
				htmlEscaper.Replace(n.Name), htmlEscaper.Replace(d.Path), fence, d.Diff, fence)
			if len(block) > b.left {
				b.cut++
				cut++
				continue
			}
			b.left -= len(block)
			w.WriteString(block)
		}
	}
}

// mdChangeSummary is a change's one line: its move, its nodes and what it changes.
func mdChangeSummary(ch planner.Change, pp planner.PoolPlan) string {
	counts := map[planner.ItemKind]int{}
	for _, it := range ch.Items {
		counts[it.Kind]++
	}
	var what []string
	if n := counts[planner.ItemFile]; n > 0 {
		what = append(what, plural(n, "%d file", "%d files"))
	}
	if n := counts[planner.ItemUnit]; n > 0 {
		what = append(what, plural(n, "%d unit", "%d units"))
	}
	if counts[planner.ItemKernelArgs] > 0 {
		what = append(what, "kernel arguments")
	}
	if n := counts[planner.ItemDirectory]; n > 0 {
		what = append(what, plural(n, "%d directory", "%d directories"))
	}
	if n := counts[planner.ItemLink]; n > 0 {
		what = append(what, plural(n, "%d link", "%d links"))
	}
	if counts[planner.ItemOSImage] > 0 {
		what = append(what, "OS image")
	}
	if counts[planner.ItemFirstBoot] > 0 {
		what = append(what, "first boot only")
	}
	return strings.TrimSuffix(changeHeading(ch, pp), ":") + " — " + strings.Join(what, ", ")
}

// mdItem is one item: its line, then its diff in a fenced diff block (fenced longer than
// any run of backticks in it).
func mdItem(ch planner.Change, it planner.ItemChange) string {
	var b strings.Builder
	sym := itemSymbol(painter(false), it.Action)
	var diff string
	switch it.Kind {
	case planner.ItemKernelArgs, planner.ItemOSImage:
		var t strings.Builder
		writeItem(&t, painter(false), ch, it)
		lines := strings.SplitN(t.String(), "\n", 2)
		fmt.Fprintf(&b, "%s\n", mdCode(sym+" "+string(it.Kind)))
		for _, l := range strings.Split(strings.TrimSuffix(lines[1], "\n"), "\n") {
			diff += strings.TrimSpace(l) + "\n"
		}
	case planner.ItemFile:
		fmt.Fprintf(&b, "%s%s\n", mdCode(sym+" file "+it.Name), mdEscape(attrChanges(it)))
		diff = contentDiff(itemContent(it.Before), itemContent(it.After), it.ContentChanged, it.Name, ch)
	case planner.ItemUnit:
		fmt.Fprintf(&b, "%s%s\n", mdCode(sym+" unit "+it.Name), mdEscape(attrChanges(it)))
		diff = contentDiff(itemContent(it.Before), itemContent(it.After), it.ContentChanged, "/etc/systemd/system/"+it.Name, ch)
		for _, d := range dropinDiffs(it, ch) {
			diff += d.diff
		}
	case planner.ItemDirectory, planner.ItemLink:
		fmt.Fprintf(&b, "%s\n", mdCode(sym+" "+treeLine(it)))
	case planner.ItemFirstBoot:
		fmt.Fprintf(&b, "%s\n", mdCode(sym+" "+firstBootLine))
		diff = contentDiff(itemContent(it.Before), itemContent(it.After), true, "first boot only", ch)
	}
	switch {
	case diff == "":
	case !strings.HasPrefix(diff, "--- ") && !strings.HasPrefix(diff, "-") && !strings.HasPrefix(diff, "+"):
		fmt.Fprintf(&b, "\n%s\n", mdEscape(strings.TrimSuffix(diff, "\n"))) // a summary: sensitive, binary, large
	default:
		fence := strings.Repeat("`", max(3, longestRun(diff, '`')+1))
		fmt.Fprintf(&b, "\n%sdiff\n%s%s\n", fence, diff, fence)
	}
	b.WriteString("\n")
	return b.String()
}

// htmlEscaper keeps text in an HTML element (a <summary>) text.
var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}
