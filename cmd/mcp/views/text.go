package views

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// text is what the views for people share: where they write and whether they colour.
type text struct {
	w     io.Writer
	color bool
}

// plan writes a plan as mcp plan prints it and mcp show prints it again from the plan
// file, as Terraform's show does: what the refresh before it observed, then the plan.
func (t text) plan(pf *planfile.File) error {
	if pf.Refresh != nil {
		fmt.Fprintf(t.w, "%s\n\n", RefreshLine(pf.Refresh))
	}
	return t.planBody(pf)
}

// planBody writes the plan alone (apply, which shows the plan it made before carrying it out).
func (t text) planBody(pf *planfile.File) error {
	if err := HumanPlan(t.w, pf.Rollout, HumanOptions{Color: t.color, Now: pf.Created}); err != nil {
		return err
	}
	writeSoak(t.w, pf.Soak, t.color)
	if len(pf.Targets) > 0 {
		warning(t.w, painter(t.color), targetPlanTitle, targetPlanDetail)
	}
	return nil
}

// HumanOptions tune the human plan view.
type HumanOptions struct {
	Color bool
	// Now is when the plan was made: a pool's pause is said to have lasted until then
	// (zero: not said).
	Now time.Time
}

// Symbols of a node's change, as in Terraform's plan.
const (
	symInPlace = "~"   // updated in place: no drain, no reboot
	symReboot  = "-/+" // drained and rebooted
	symDrain   = "±"   // drained, no reboot
	symAdopt   = "="   // adopted: recorded on its target, nothing on it changes
)

type painter bool

func (p painter) paint(code, s string) string {
	if !p {
		return s
	}
	return "\033[" + code + "m" + s + "\033[0m"
}

func (p painter) bold(s string) string   { return p.paint("1", s) }
func (p painter) yellow(s string) string { return p.paint("33", s) }
func (p painter) red(s string) string    { return p.paint("31", s) }
func (p painter) green(s string) string  { return p.paint("32", s) }

// HumanPlan writes the plan as text: a legend, per pool a line and a table of changing
// nodes with their steps and blockers, then blockers, warnings and the summary line.
func HumanPlan(out io.Writer, p *planner.Rollout, o HumanOptions) error {
	w := bufio.NewWriterSize(out, 64<<10) // a line per node: one write per line would be 100,000 writes
	if err := humanPlan(w, p, o); err != nil {
		return err
	}
	return w.Flush()
}

func humanPlan(w *bufio.Writer, p *planner.Rollout, o HumanOptions) error {
	p = Shown(p)
	c := painter(o.Color)
	if !p.HasChanges() {
		fmt.Fprintf(w, "%s\n", c.green(PlanSummary(p)))
		for i := range p.Nodes {
			writeHeld(w, c, &p.Nodes[i])
		}
		if p.Drifted() != nil {
			fmt.Fprintln(w)
			writeDriftNote(w, c, p)
		}
		for _, pp := range p.Pools {
			if pp.Pause != nil {
				fmt.Fprintf(w, "%s %s\n", c.yellow("pool."+pp.Name+":"), PauseWords(pp.Pause, o.Now))
			}
		}
		writeBootImages(w, c, p)
		writeNotes(w, c, p)
		return nil
	}
	if p.Drifted() != nil {
		writeDriftNote(w, c, p)
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "mcp will perform the following actions. Node changes are marked:\n")
	fmt.Fprintf(w, "  %s update in place (no drain, no reboot)\n", c.yellow(symInPlace))
	fmt.Fprintf(w, "  %s drain, update, uncordon (no reboot)\n", c.yellow(symDrain))
	fmt.Fprintf(w, "  %s drain and reboot\n", c.red(symReboot))
	if adopts(p) > 0 {
		fmt.Fprintf(w, "  %s adopt: recorded on its target after it checks it carries it; nothing on the node changes\n", c.green(symAdopt))
	}
	byPool := nodesByPool(p)
	for _, pp := range p.Pools {
		writePool(w, c, pp, byPool[pp.Name], o.Now)
	}
	writeBootImages(w, c, p)
	writeNotes(w, c, p)
	_, err := fmt.Fprintf(w, "\n%s\n", c.bold(PlanSummary(p)))
	return err
}

// nodesByPool is the plan's nodes per pool, in plan order, in one pass.
func nodesByPool(p *planner.Rollout) map[string][]*planner.NodePlan {
	out := make(map[string][]*planner.NodePlan, len(p.Pools))
	for i := range p.Nodes {
		out[p.Nodes[i].Pool] = append(out[p.Nodes[i].Pool], &p.Nodes[i])
	}
	return out
}

func writePool(w io.Writer, c painter, pp planner.PoolPlan, nodes []*planner.NodePlan, now time.Time) {
	rendered := pp.Rendered
	if pp.ReRendered && pp.Previous != "" {
		rendered = pp.Previous + " → " + pp.Rendered
	} else if pp.ReRendered {
		rendered = "(none) → " + pp.Rendered
	}
	if pp.ReRendered && pp.PointerKept {
		rendered = cmp.Or(pp.Previous, "(none)") + " (not targeted: its boot pointer stays; targeted nodes move to " + pp.Rendered + ")"
	}
	fmt.Fprintf(w, "\n%s %s  %s\n", c.bold("pool."+pp.Name), rendered,
		fmt.Sprintf("[%s, max_unavailable %d, %d unavailable, %d at once, %s%s]", plural(pp.Size, "%d node", "%d nodes"),
			pp.MaxUnavailable, pp.Unavailable, max(pp.Slots, 0), plural(pp.Waves, "%d wave", "%d waves"), pacing(pp)))
	if pp.Rollback {
		fmt.Fprintf(w, "  %s back to the stored %s; the configuration is not changed, and plan warns until it renders %s again\n",
			c.yellow("rollback:"), pp.Rendered, pp.Rendered)
	}
	if pp.OnFailure.Reverts() && pp.Updates > 0 {
		fmt.Fprintf(w, "  %s %s\n", c.yellow("on failure:"), revertLine(pp))
	}
	if ws := pp.Window; ws != nil {
		fmt.Fprintf(w, "  %s\n", windowLine(c, ws))
	}
	if e := pp.Estimate; e != nil {
		fmt.Fprintf(w, "  %s %s\n", c.green("estimate:"), estimateText(e))
	}
	if g := pp.AlertGate; g != nil {
		fmt.Fprintf(w, "  %s\n", alertGateLine(c, *g))
	}
	if pp.Pause != nil {
		fmt.Fprintf(w, "  %s %s\n", c.yellow("pause:"), PauseWords(pp.Pause, now))
	}
	if line := stagingLine(pp, nodes); line != "" {
		fmt.Fprintf(w, "  %s %s\n", c.green("staging:"), line)
	}
	if pp.Updates > 0 && pp.Order != model.OrderOldest && pp.Order != "" {
		fmt.Fprintf(w, "  %s %s\n", c.green("order:"), planner.OrderWords(&pp))
	}
	if pp.Size == 0 {
		fmt.Fprintf(w, "  %s its node_selector matches no node of the fleet: it updates nothing now, and new nodes of it boot its config\n", c.yellow("note:"))
	}
	for _, b := range pp.Blockers {
		// Under the word the summary counts them by: deferred nodes are not blocked ones.
		label := c.red("blocked:")
		if defers(b) {
			label = c.yellow("deferred:")
		}
		fmt.Fprintf(w, "  %s %s\n", label, b.Message)
	}
	for _, wn := range pp.Warnings {
		fmt.Fprintf(w, "  %s %s\n", c.yellow("warning:"), wn)
	}
	for _, v := range pp.Variants {
		fmt.Fprintf(w, "  %s %s\n", c.bold("variant:"), VariantLine(v))
	}
	for _, m := range pp.MachinesMoved {
		to := cmp.Or(pp.Machines[m], "(none: no machine block declares it any more)")
		fmt.Fprintf(w, "  %s machine %s boots %s\n", c.bold("boot:"), m, to)
	}
	unchanged := 0
	var t columns
	t.add("", "NODE", "ZONE", "WAVE", "STEPS")
	for _, n := range nodes {
		if !n.Changed() {
			if n.Held == "" && !n.Untargeted {
				unchanged++
			}
			continue
		}
		wave := fmt.Sprint(n.Wave)
		if n.Deferred {
			wave = "deferred"
		}
		if n.Canary {
			wave += " (canary)"
		}
		t.add(c.symbol(n), "node."+n.Name, n.Zone, wave, describeSteps(n, pp.MaxStaging > 0))
		if n.FromSource != "" {
			t.add("", "", "", "", c.yellow("from: ")+n.From+", read from "+n.FromSource)
		}
		if n.Condition != "" {
			t.add("", "", "", "", c.yellow("condition: ")+n.Condition+ownSlot(n))
		}
		if n.Happened != "" {
			t.add("", "", "", "", c.yellow("happened: ")+n.Happened)
		}
		if n.Interim != nil {
			t.add("", "", "", "", c.yellow("interim: ")+InterimWords(n))
		}
		for _, b := range n.Blockers {
			if b.Kind == planner.BlockPDBWait {
				t.add("", "", "", "", c.yellow("waits: ")+b.Message)
				continue
			}
			t.add("", "", "", "", c.red("blocked: ")+b.Message)
		}
		if o := observedLine(n); o != "" {
			t.add("", "", "", "", c.yellow("observed: ")+o)
		}
		if n.DriftOnly {
			t.add("", "", "", "", c.yellow("drift: ")+"only restores drift (see the note above)")
		} else if len(n.Drift) > 0 || n.DriftUnlisted > 0 {
			t.add("", "", "", "", c.yellow("drift: ")+"also restores drift (see the note above)")
		}
		for _, wn := range n.Warnings {
			t.add("", "", "", "", c.yellow("warning: ")+wn)
		}
	}
	if pp.Updates > 0 {
		t.write(w)
	}
	if unchanged > 0 {
		fmt.Fprintf(w, "  %s unchanged\n", plural(unchanged, "%d node", "%d nodes"))
	}
	if pp.Untargeted > 0 {
		fmt.Fprintf(w, "  %s not targeted\n", plural(pp.Untargeted, "%d node", "%d nodes"))
	}
	for _, n := range nodes {
		writeHeld(w, c, n)
	}
	for _, n := range nodes {
		if !n.Changed() && n.Condition != "" && n.Held == "" {
			fmt.Fprintf(w, "  %s node.%s: %s (counts against max_unavailable)\n", c.yellow("out of service:"), n.Name, n.Condition)
		}
	}
	writeChanges(w, c, pp)
	writeReasons(w, c, nodes)
}

// writeHeld writes a held node's line: why, and its condition when it is out of service
// (it counts against the budget all the same).
func writeHeld(w io.Writer, c painter, n *planner.NodePlan) {
	if n.Held == "" {
		return
	}
	fmt.Fprintf(w, "  %s node.%s: %s; no steps", c.yellow("held:"), n.Name, n.Held)
	if n.Condition != "" {
		fmt.Fprintf(w, "; %s, counts against max_unavailable", n.Condition)
	}
	fmt.Fprintln(w)
}

// describeSteps summarises a changing node's steps; ahead: its pool stages ahead of the
// slots (max_staging above 0).
func describeSteps(n *planner.NodePlan, ahead bool) string {
	if n.Action == planner.NodeResume && len(n.Steps) == 0 {
		return "check its health gates again (the interrupted update's steps are done)"
	}
	if n.Action == planner.NodeAdopt {
		return "adopt: record on " + n.To + " (nothing on the node changes)"
	}
	steps := n.Steps
	if ahead && model.StagesFirst(steps) {
		// Its own phase: before the node's slot, outside its pool's budget.
		return "stage ahead; in its slot: " + SummarizeSteps(steps[1:])
	}
	return SummarizeSteps(steps)
}

// observedLine says, for a node planned from what it carries (its current config absent or
// unknown to the state), against what and which items differ; "" for another node.
func observedLine(n *planner.NodePlan) string {
	o := n.Observation
	if o == nil {
		return ""
	}
	from := "no current config"
	if n.From != "" {
		from = "current config " + n.From + " unknown to the state"
	}
	if len(o.Drift) == 0 && o.Unlisted == 0 {
		return "" // adopted: its steps say so
	}
	items := make([]string, len(o.Drift))
	for i, d := range o.Drift {
		items[i] = d.String()
	}
	if o.Unlisted > 0 {
		items = append(items, fmt.Sprintf("%d more", o.Unlisted))
	}
	return fmt.Sprintf("%s; steps from what the node carries against %s, which differs in: %s", from, o.Target, strings.Join(items, "; "))
}

// adopts counts the plan's nodes to adopt.
func adopts(p *planner.Rollout) int {
	k := 0
	for i := range p.Nodes {
		if p.Nodes[i].Action == planner.NodeAdopt && p.Nodes[i].Changed() {
			k++
		}
	}
	return k
}

// ownSlot says why a node out of service may update beside a full budget.
func ownSlot(n *planner.NodePlan) string {
	if n.Deferred || n.Wave == 0 {
		return ""
	}
	return "; updated in its own slot (it is out of service already)"
}

func (c painter) symbol(n *planner.NodePlan) string {
	switch {
	case n.Action == planner.NodeAdopt:
		return c.green(symAdopt)
	case n.Reboot:
		return c.red(symReboot)
	case hasKind(n.Steps, model.StepDrain):
		return c.yellow(symDrain)
	}
	return c.yellow(symInPlace)
}

func hasKind(steps []model.Step, k model.StepKind) bool {
	for _, s := range steps {
		if s.Kind == k {
			return true
		}
	}
	return false
}

// SummarizeSteps lists steps briefly: "cordon, drain, write 2 files, write 1 unit, reboot".
func SummarizeSteps(steps []model.Step) string {
	if len(steps) == 0 {
		return "record new config (nothing on the node changes)"
	}
	var parts []string
	files, units := 0, 0
	flush := func() {
		if files > 0 {
			parts = append(parts, plural(files, "write %d file", "write %d files"))
		}
		if units > 0 {
			parts = append(parts, plural(units, "write %d unit", "write %d units"))
		}
		files, units = 0, 0
	}
	for _, s := range steps {
		if s.Kind == model.StepWrite {
			if strings.HasPrefix(s.Target, "/") {
				files++
			} else {
				units++
			}
			continue
		}
		flush()
		parts = append(parts, s.String())
	}
	flush()
	return strings.Join(parts, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf(one, n)
	}
	return fmt.Sprintf(many, n)
}

func writeNotes(w io.Writer, c painter, p *planner.Rollout) {
	if len(p.Unmanaged) > 0 {
		fmt.Fprintf(w, "\n%s no pool selects %s.\n", c.yellow("Note:"), strings.Join(p.Unmanaged, ", "))
	}
}

// PlanSummary is the plan's last line.
func PlanSummary(p *planner.Rollout) string {
	held := 0
	for _, n := range p.Nodes {
		if n.Held != "" {
			held++
		}
	}
	if !p.HasChanges() && held > 0 {
		// A held node may well differ from the configuration: nothing was planned for it.
		return fmt.Sprintf("No changes. The fleet matches the configuration, held nodes aside (%d held).", held)
	}
	if !p.HasChanges() {
		if d := len(p.Drifted()); d > 0 {
			return fmt.Sprintf("No changes. The configuration is applied; %s drifted (reported only).",
				plural(d, "%d node has", "%d nodes have"))
		}
		return "No changes. The fleet matches the configuration."
	}
	nodes, reboot, nblocked, deferred, pools, waiting, driftOnly := 0, 0, 0, 0, 0, 0, 0
	for _, n := range p.Nodes {
		if !n.Changed() {
			continue
		}
		if n.Action != planner.NodeAdopt {
			nodes++
		}
		if n.DriftOnly {
			driftOnly++
		}
		if n.Reboot {
			reboot++
		}
		switch {
		case hasBlock(n.Blockers):
			nblocked++
		case len(n.Blockers) > 0: // pdb-waits only: it waits, it is not blocked
			waiting++
		}
		if n.Deferred {
			deferred++
		}
	}
	for _, pp := range p.Pools {
		if pp.ReRendered && !pp.PointerKept {
			pools++
		}
	}
	adopt := ""
	if a := adopts(p); a > 0 {
		adopt = plural(a, "%d node to adopt", "%d nodes to adopt") + " (recorded, nothing on them changes), "
	}
	s := fmt.Sprintf("Plan: %s (%d reboot, %d in place), %s%s, %d blocked",
		plural(nodes, "%d node to update", "%d nodes to update"), reboot, nodes-reboot, adopt,
		plural(pools, "%d pool re-rendered", "%d pools re-rendered"), nblocked)
	if waiting > 0 {
		s += fmt.Sprintf(", %d waiting on a PodDisruptionBudget", waiting)
	}
	if deferred > 0 {
		s += fmt.Sprintf(", %d deferred", deferred)
	}
	if held > 0 {
		s += fmt.Sprintf(", %d held", held)
	}
	if driftOnly > 0 {
		s += fmt.Sprintf(", %d only restoring drift", driftOnly)
	}
	images, templates := 0, 0
	for i := range p.BootImages {
		if b := &p.BootImages[i]; b.Changes() {
			if b.Changed {
				images++
			}
			templates += b.Count(planner.TemplateUpdate)
		}
	}
	if images > 0 {
		s += ", " + plural(images, "%d boot image changed", "%d boot images changed")
	}
	if templates > 0 {
		s += ", " + plural(templates, "%d machine template to update", "%d machine templates to update")
	}
	return s + "."
}

// RefreshLine says what a refresh observed and cost, as Terraform prints its refreshing:
// "Refreshed 6 nodes, 4 pods, 1 PDB in 42ms (3 API requests)."; nodes asked what they carry
// (adoption) and what that cost said apart.
func RefreshLine(rs *model.RefreshStats) string {
	s := fmt.Sprintf("Refreshed %s, %s, %s in %s", plural(rs.Nodes, "%d node", "%d nodes"),
		plural(rs.Pods, "%d pod", "%d pods"), plural(rs.PDBs, "%d PDB", "%d PDBs"), rs.Duration.Round(time.Millisecond))
	if rs.APIRequests >= 0 {
		s += " (" + plural(int(rs.APIRequests), "%d API request", "%d API requests") + ")"
	}
	if rs.Observed > 0 {
		s += "; asked " + plural(rs.Observed, "%d node", "%d nodes") + " what they carry of their targets"
		if rs.ObserveRequests > 0 {
			s += " (" + plural(int(rs.ObserveRequests), "%d API request", "%d API requests") + ")"
		}
	}
	return s + "."
}

// VariantLine is one variant of a pool's config for chosen nodes: its name, the configs
// it adds, and whom it reaches ("rendered-worker-1a2b (+ 60-nic): nodes worker-3; machines m-7").
func VariantLine(v planner.VariantPlan) string {
	s := cmp.Or(v.Rendered, "(not rendered)") + " (+ " + strings.Join(v.Configs, ", ") + ")"
	var who []string
	if len(v.Nodes) > 0 {
		who = append(who, word(len(v.Nodes), "node ", "nodes ")+strings.Join(v.Nodes, ", "))
	}
	if len(v.Machines) > 0 {
		who = append(who, word(len(v.Machines), "machine ", "machines ")+strings.Join(v.Machines, ", "))
	}
	return s + ": " + strings.Join(who, "; ")
}

func word(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// revertLine says what a failure would do to a pool whose on_failure is "revert".
func revertLine(pp planner.PoolPlan) string {
	if pp.Previous == "" || pp.Previous == pp.Rendered {
		return "stop (on_failure = \"revert\", but the pool has no other config to go back to: its boot config does not change)"
	}
	return "revert the nodes this apply updates to " + pp.Previous + " (on_failure = \"revert\"; within max_unavailable), then fail"
}

// stagingLine says how the pool's nodes whose update stages (model.StepStage first) stage:
// ahead of their slots, how many at once, or in their slots; "" when none does.
func stagingLine(pp planner.PoolPlan, nodes []*planner.NodePlan) string {
	staging := 0
	for _, n := range nodes {
		if n.Changed() && !n.Deferred && model.StagesFirst(n.Steps) {
			staging++
		}
	}
	switch {
	case staging == 0:
		return ""
	case pp.MaxStaging > 0:
		return fmt.Sprintf("%s the update ahead of their slots, outside max_unavailable, at most %d at once (max_staging)",
			plural(staging, "%d node stages", "%d nodes stage"), pp.MaxStaging)
	}
	return fmt.Sprintf("%s the update in their slots, before the cordon (max_staging = 0)", plural(staging, "%d node stages", "%d nodes stage"))
}
