package views

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/planner"
)

// foldAfter is the longest list a markdown summary shows open; a longer one is folded in
// <details>, so that a rollout of a thousand nodes stays a comment a reviewer can read.
// A fold lists at most foldMax entries: GitHub refuses a comment over 65,536 characters,
// and mcp show PLANFILE lists every node.
const (
	foldAfter = 8
	foldMax   = 100
)

// Markdown writes a saved plan as a summary fit for a pull-request comment (mcp show
// -markdown): the summary line and what the plan was made from; a table of pools with
// their rendered configs and how many nodes update in place, drain or reboot; then, per
// pool with something to say, its nodes grouped by what they do, and its blockers, waits,
// holds, drift and warnings, named as the human plan names them. Lists longer than
// foldAfter are folded. Step reasons are left to mcp show (and its -json): the summary is for review.
//
// Each pool's changes follow it, a diff per file and unit in a <details> block (tfcmt's
// way), within GitHub's limit on a comment: the summary without diffs is measured first,
// and the diffs get what is left of MarkdownLimit; those that do not fit are cut, with a
// note that says so.
func Markdown(out io.Writer, pf *planfile.File) error {
	return markdownWithin(out, pf, MarkdownLimit)
}

// markdownWithin is Markdown with limit characters for the summary and its diffs.
func markdownWithin(out io.Writer, pf *planfile.File, limit int) error {
	pf = Shown(pf)
	var base bytes.Buffer
	if err := markdown(&base, pf, nil); err != nil {
		return err
	}
	var full bytes.Buffer
	if err := markdown(&full, pf, &mdBudget{left: limit - mdMargin - base.Len()}); err != nil {
		return err
	}
	_, err := out.Write(full.Bytes())
	return err
}

// markdown writes the summary; the pools' diffs only with a budget for them.
func markdown(out io.Writer, pf *planfile.File, budget *mdBudget) error {
	w := bufio.NewWriter(out)
	p := pf.Rollout
	fmt.Fprintf(w, "### mcp plan\n\n**%s**\n", mdEscape(PlanSummary(p)))
	if made := madeLine(pf); made != "" {
		fmt.Fprintf(w, "\n%s\n", made)
	}
	if len(pf.Targets) > 0 {
		fmt.Fprintf(w, "\n> **Warning: %s** (%s): this plan may not show every change the configuration asks for.\n",
			targetPlanTitle, codeList(pf.Targets))
	}
	if len(p.Unmanaged) > 0 {
		fmt.Fprintf(w, "\n**Note:** no pool selects %s.\n", codeList(p.Unmanaged))
	}
	byPool := nodesByPool(p)
	if p.HasChanges() {
		mdPoolTable(w, p, byPool)
	}
	for _, pp := range p.Pools {
		mdPool(w, pp, byPool[pp.Name], budget, pf.Created)
	}
	mdBootImages(w, p)
	mdSoak(w, pf.Soak)
	return w.Flush()
}

// madeLine says when and from what the plan was made, with what the plan file records.
func madeLine(pf *planfile.File) string {
	var parts []string
	if !pf.Created.IsZero() {
		parts = append(parts, "Made "+pf.Created.UTC().Format("2006-01-02 15:04 UTC"))
	}
	if pf.MCPVersion != "" {
		parts = append(parts, "mcp "+mdEscape(pf.MCPVersion))
	}
	if pf.Lineage != "" || pf.Serial > 0 {
		parts = append(parts, fmt.Sprintf("state serial %d", pf.Serial))
	}
	if pf.FleetFingerprint != "" {
		parts = append(parts, "fleet "+mdCode(short(pf.FleetFingerprint, 12)))
	}
	if len(pf.Exclude) > 0 {
		parts = append(parts, "excluded "+codeList(pf.Exclude))
	}
	return strings.Join(parts, " · ")
}

// mdCounts is one pool's row of the table.
type mdCounts struct{ inPlace, drain, reboot, blocked, drifted int }

func countPool(nodes []*planner.NodePlan) mdCounts {
	var c mdCounts
	for _, n := range nodes {
		if len(n.Drift) > 0 || n.DriftUnlisted > 0 {
			c.drifted++
		}
		if !n.Changed() {
			continue
		}
		switch nodeKind(n) {
		case symAdopt: // none of the columns: nothing on it changes (the groups list it)
		case symReboot:
			c.reboot++
		case symDrain:
			c.drain++
		default:
			c.inPlace++
		}
		if hasBlock(n.Blockers) {
			c.blocked++
		}
	}
	return c
}

func mdPoolTable(w *bufio.Writer, p *planner.Rollout, byPool map[string][]*planner.NodePlan) {
	fmt.Fprintf(w, "\n| pool | rendered config | nodes | `%s` in place | `%s` drain | `%s` reboot | blocked | drifted |\n",
		symInPlace, symDrain, symReboot)
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|")
	for _, pp := range p.Pools {
		c := countPool(byPool[pp.Name])
		fmt.Fprintf(w, "| %s | %s | %d | %d | %d | %d | %d | %d |\n", mdEscape(pp.Name), mdCell(mdRendered(pp)), pp.Size,
			c.inPlace, c.drain, c.reboot, c.blocked, c.drifted)
	}
}

// mdRendered is the pool's rendered config as the table shows it: its name is the digest
// of its content, so a reviewer sees whether two plans render the same.
func mdRendered(pp planner.PoolPlan) string {
	switch {
	case !pp.ReRendered:
		return mdCode(pp.Rendered) + " (unchanged)"
	case pp.PointerKept:
		return mdCode(pp.Rendered) + " (not targeted: boot pointer stays)"
	case pp.Previous == "":
		return mdCode(pp.Rendered) + " (new)"
	}
	return mdCode(pp.Previous) + " → " + mdCode(pp.Rendered)
}

// mdPool writes a pool's section: its changing nodes grouped by kind and steps, then its
// notes. A pool with nothing to show has no section (its table row says it all).
func mdPool(w *bufio.Writer, pp planner.PoolPlan, nodes []*planner.NodePlan, budget *mdBudget, now time.Time) {
	groups := groupNodes(nodes, pp.MaxStaging > 0)
	notes := poolNotes(pp, nodes, now)
	if len(groups) == 0 && len(notes) == 0 && !hasItems(pp) && !hasDriftDiffs(nodes) {
		return
	}
	head := fmt.Sprintf("**pool.%s** · max_unavailable %d", mdEscape(pp.Name), pp.MaxUnavailable)
	if pp.Waves > 0 {
		head += " · " + plural(pp.Waves, "%d wave", "%d waves")
	}
	if pp.Paused {
		head += " · paused"
	}
	if pp.Estimate != nil {
		head += " · estimate " + mdEscape(estimateShort(pp.Estimate))
	}
	fmt.Fprintf(w, "\n%s\n\n", head)
	for _, g := range groups {
		what := fmt.Sprintf("`%s` %s", g.sym, g.label)
		if len(g.nodes) <= foldAfter {
			fmt.Fprintf(w, "- %s: %s — %s\n", what, strings.Join(g.nodes, ", "), mdEscape(g.steps))
			continue
		}
		fmt.Fprintf(w, "- %s, %d nodes — %s\n", what, len(g.nodes), mdEscape(g.steps))
		fold(w, fmt.Sprintf("%d nodes", len(g.nodes)), strings.Join(capList(g.nodes), ", "))
	}
	for _, n := range notes {
		if len(n.items) <= foldAfter {
			for _, it := range n.items {
				fmt.Fprintf(w, "- %s: %s\n", n.label, it)
			}
			continue
		}
		fmt.Fprintf(w, "- %s: %d\n", n.label, len(n.items))
		fold(w, fmt.Sprintf("%d %s", len(n.items), n.label), "- "+strings.Join(capList(n.items), "\n  - "))
	}
	mdChanges(w, pp, budget)
	mdDriftDiffs(w, nodes, budget)
}

// capList keeps the first foldMax items, and says how many it left out.
func capList(items []string) []string {
	if len(items) <= foldMax {
		return items
	}
	return append(items[:foldMax:foldMax], fmt.Sprintf("and %d more (mcp show PLANFILE lists them all)", len(items)-foldMax))
}

// fold writes body folded in <details> under the list item before it.
func fold(w *bufio.Writer, summary, body string) {
	fmt.Fprintf(w, "  <details><summary>%s</summary>\n\n  %s\n\n  </details>\n", summary, body)
}

// mdGroup is nodes of a pool that do the same: same kind of change, same steps, and
// deferred or not.
type mdGroup struct {
	sym, label, steps string
	nodes             []string
}

func groupNodes(nodes []*planner.NodePlan, ahead bool) []mdGroup {
	var groups []mdGroup
	at := map[string]int{}
	// Reboots first, then drains, then in place: the order of what a reviewer weighs.
	for _, sym := range []string{symReboot, symDrain, symInPlace, symAdopt} {
		for _, n := range nodes {
			if !n.Changed() || nodeKind(n) != sym {
				continue
			}
			label := kindLabel[sym]
			if n.Deferred {
				label += " (deferred: not in this apply)"
			}
			steps := describeSteps(n, ahead)
			key := label + "\x00" + steps
			i, ok := at[key]
			if !ok {
				i = len(groups)
				at[key] = i
				groups = append(groups, mdGroup{sym: sym, label: label, steps: steps})
			}
			groups[i].nodes = append(groups[i].nodes, mdCode(n.Name))
		}
	}
	return groups
}

var kindLabel = map[string]string{symReboot: "drain and reboot", symDrain: "drain, no reboot", symInPlace: "in place",
	symAdopt: "adopt"}

// nodeKind is the node's change symbol, as the human plan marks it.
func nodeKind(n *planner.NodePlan) string { return painter(false).symbol(n) }

// mdNote is one kind of note in a pool: its label, as the human plan writes it, and its
// lines.
type mdNote struct {
	label string
	items []string
}

// poolNotes collects a pool's blockers, waits, holds, nodes out of service, drift and
// warnings, each kind in one list.
func poolNotes(pp planner.PoolPlan, nodes []*planner.NodePlan, now time.Time) []mdNote {
	var blockedN, deferredN, waits, held, out, observed, drift, warns []string
	for _, b := range pp.Blockers {
		if defers(b) {
			deferredN = append(deferredN, mdEscape(b.Message))
			continue
		}
		blockedN = append(blockedN, mdEscape(b.Message))
	}
	for _, wn := range pp.Warnings {
		warns = append(warns, mdEscape(wn))
	}
	for _, n := range nodes {
		addr := mdCode("node."+n.Name) + ": "
		for _, b := range n.Blockers {
			if b.Kind == planner.BlockPDBWait {
				waits = append(waits, addr+mdEscape(b.Message))
			} else {
				blockedN = append(blockedN, addr+mdEscape(b.Message))
			}
		}
		switch {
		case n.Held != "" && n.Condition != "":
			held = append(held, addr+mdEscape(n.Held)+"; no steps; "+mdEscape(n.Condition)+", counts against max_unavailable")
		case n.Held != "":
			held = append(held, addr+mdEscape(n.Held)+"; no steps")
		case n.Condition != "":
			out = append(out, addr+mdEscape(n.Condition))
		}
		if o := observedLine(n); o != "" {
			observed = append(observed, addr+mdEscape(o))
		}
		for _, d := range n.Drift {
			drift = append(drift, addr+mdEscape(d.String()))
		}
		if n.DriftUnlisted > 0 {
			drift = append(drift, addr+fmt.Sprintf("and %d more paths, not listed", n.DriftUnlisted))
		}
		for _, wn := range n.Warnings {
			warns = append(warns, addr+mdEscape(wn))
		}
	}
	var variants []string
	for _, v := range pp.Variants {
		variants = append(variants, mdEscape(VariantLine(v)))
	}
	var notes []mdNote
	if pp.Pause != nil {
		notes = append(notes, mdNote{"pause", []string{mdEscape(PauseWords(pp.Pause, now))}})
	}
	if line := stagingLine(pp, nodes); line != "" {
		notes = append(notes, mdNote{"staging", []string{mdEscape(line)}})
	}
	if pp.Updates > 0 && pp.Order != "oldest" && pp.Order != "" {
		notes = append(notes, mdNote{"order", []string{mdEscape(planner.OrderWords(&pp))}})
	}
	for _, n := range []mdNote{{"blocked", blockedN}, {"deferred", deferredN}, {"waits", waits}, {"held", held},
		{"out of service", out}, {"observed", observed}, {"drift", drift}, {"warning", warns}, {"variant", variants}} {
		if len(n.items) > 0 {
			notes = append(notes, n)
		}
	}
	if pp.Rollback {
		notes = append(notes, mdNote{"rollback", []string{"back to the stored " + mdCode(pp.Rendered) + "; the configuration is not changed"}})
	}
	if pp.OnFailure.Reverts() && pp.Updates > 0 {
		notes = append(notes, mdNote{"on failure", []string{mdEscape(revertLine(pp))}})
	}
	if pp.Untargeted > 0 {
		notes = append(notes, mdNote{"not targeted", []string{plural(pp.Untargeted, "%d node", "%d nodes")}})
	}
	return notes
}

// defers reports whether a pool's blocker defers its nodes (a paused pool, a budget used
// up: the plan counts them deferred) rather than blocks them.
func defers(b planner.Blocker) bool {
	return b.Kind == planner.BlockBudget || b.Kind == planner.BlockPaused
}

// hasBlock reports whether a node's blockers hold one that is not just a wait
// (PlanSummary's count of blocked nodes).
func hasBlock(bs []planner.Blocker) bool {
	for _, b := range bs {
		if b.Kind != planner.BlockPDBWait {
			return true
		}
	}
	return false
}

func codeList(items []string) string {
	codes := make([]string, len(items))
	for i, s := range items {
		codes[i] = mdCode(s)
	}
	return strings.Join(codes, ", ")
}

// The markdown view's rules, on text Shown has escaped already (no control character, no
// line break is left in it): free text is mdEscape'd, code is in mdCode's spans, and a
// table's cells are mdCell'd besides. Nothing a configuration or a node says can then end
// a code span, a table cell or a line, nor open a link, an emphasis or an HTML tag.

// mdEscape keeps free text (messages, reasons, paths) from being read as markdown or HTML.
var mdEscaper = strings.NewReplacer(`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"<", "&lt;", ">", "&gt;", "&", "&amp;", "|", `\|`, "~", `\~`, "\n", " ")

func mdEscape(s string) string { return mdEscaper.Replace(s) }

// mdCode is s as an inline code span, exactly: its fence is longer than any run of
// backticks in s, and padded with a space where s starts or ends with one (CommonMark
// strips one space on each side).
func mdCode(s string) string {
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	if s != "" && (s[0] == '`' || s[0] == ' ' || s[len(s)-1] == '`' || s[len(s)-1] == ' ') {
		s = " " + s + " "
	}
	return fence + s + fence
}

// mdCell keeps the pipes of a table cell's code spans from ending the cell: GitHub splits
// cells on "|" before it reads code spans, and takes "\|" as a pipe in them too. (Free
// text in a cell is mdEscape'd, which escapes its pipes.)
func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func short(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
