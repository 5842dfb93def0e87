package views

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/mcpfleet/mcp/internal/textdiff"
	"github.com/mcpfleet/mcp/planner"
)

// nodesShown is how many nodes a change's heading names; the rest are counted.
const nodesShown = 4

// writeChanges writes what each of a pool's moves changes, once per move (not per node):
// each file and unit with a unified diff of its content, the kernel arguments and the OS
// image removed and added. Sensitive content is never shown; binary and large content is
// summarised by size and digest.
func writeChanges(w io.Writer, c painter, pp planner.PoolPlan) {
	for _, ch := range pp.Changes {
		if len(ch.Items) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n  %s\n", c.bold(changeHeading(ch, pp)))
		for _, it := range ch.Items {
			writeItem(w, c, ch, it)
		}
	}
}

// changeHeading says which move a change is and who makes it.
func changeHeading(ch planner.Change, pp planner.PoolPlan) string {
	from := ch.From
	switch {
	case ch.From == "":
		from = "nothing (no config of mcp's yet)"
	case ch.FromUnknown:
		from += " (unknown to the state: every item is written)"
	}
	who := "new nodes of the pool (its boot config)"
	if len(ch.Nodes) > 0 {
		who = nodeList(ch.Nodes)
	}
	if ch.To != pp.Rendered && pp.Rendered != "" {
		// A variant for chosen nodes: say which, as the pool's variant lines name it.
		return fmt.Sprintf("Changes from %s to %s, on %s:", from, ch.To, who)
	}
	return fmt.Sprintf("Changes from %s, on %s:", from, who)
}

// nodeList names up to nodesShown nodes and counts the rest.
func nodeList(nodes []string) string {
	s := plural(len(nodes), "%d node", "%d nodes") + " ("
	for i, n := range nodes {
		if i == nodesShown {
			return s + fmt.Sprintf(", and %d more)", len(nodes)-nodesShown)
		}
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s + ")"
}

// itemSymbol is Terraform's mark for an item's action.
func itemSymbol(c painter, a planner.ItemAction) string {
	switch a {
	case planner.ItemCreate:
		return c.green("+")
	case planner.ItemDelete:
		return c.red("-")
	}
	return c.yellow("~")
}

func writeItem(w io.Writer, c painter, ch planner.Change, it planner.ItemChange) {
	sym := itemSymbol(c, it.Action)
	const in = "        "
	switch it.Kind {
	case planner.ItemKernelArgs:
		fmt.Fprintf(w, "    %s kernel_args\n", sym)
		var before, after []string
		if it.Before != nil {
			before = it.Before.KernelArgs
		}
		if it.After != nil {
			after = it.After.KernelArgs
		}
		for _, a := range before {
			if !slices.Contains(after, a) {
				fmt.Fprintf(w, "%s%s\n", in, c.red("- "+a))
			}
		}
		for _, a := range after {
			if !slices.Contains(before, a) {
				fmt.Fprintf(w, "%s%s\n", in, c.green("+ "+a))
			}
		}
	case planner.ItemOSImage:
		writeOSImage(w, c, sym, in, it)
	case planner.ItemFile:
		fmt.Fprintf(w, "    %s file %s%s\n", sym, it.Name, attrChanges(it))
		writeDiff(w, c, in, contentDiff(itemContent(it.Before), itemContent(it.After), it.ContentChanged, it.Name, ch))
	case planner.ItemUnit:
		fmt.Fprintf(w, "    %s unit %s%s\n", sym, it.Name, attrChanges(it))
		writeDiff(w, c, in, contentDiff(itemContent(it.Before), itemContent(it.After), it.ContentChanged, "/etc/systemd/system/"+it.Name, ch))
		for _, d := range dropinDiffs(it, ch) {
			fmt.Fprintf(w, "      %s drop-in %s\n", itemSymbol(c, d.action), d.name)
			writeDiff(w, c, in, d.diff)
		}
	case planner.ItemDirectory, planner.ItemLink:
		fmt.Fprintf(w, "    %s %s\n", sym, treeLine(it))
	case planner.ItemFirstBoot:
		fmt.Fprintf(w, "    %s %s\n", sym, firstBootLine)
		writeDiff(w, c, in, contentDiff(itemContent(it.Before), itemContent(it.After), true, "first boot only", ch))
	}
}

// firstBootLine heads the change of a config's first-boot part.
const firstBootLine = "first boot only (users, disks… Ignition does at a machine's first boot; running nodes keep theirs)"

// treeLine is a directory's or link's change: "directory /etc/foo (mode 0750, owner
// core:core)", "link /etc/localtime → ../usr/share/zoneinfo/UTC (was → …)".
func treeLine(it planner.ItemChange) string {
	b, a := it.Before, it.After
	var parts []string
	if it.Kind == planner.ItemDirectory {
		switch {
		case a == nil:
		case b == nil:
			parts = append(parts, fmt.Sprintf("mode %04o", a.Mode))
			if a.User != "" || a.Group != "" {
				parts = append(parts, "owner "+owner(a))
			}
		default:
			if b.Mode != a.Mode {
				parts = append(parts, fmt.Sprintf("mode %04o → %04o", b.Mode, a.Mode))
			}
			if owner(b) != owner(a) {
				parts = append(parts, "owner "+owner(b)+" → "+owner(a))
			}
		}
		line := "directory " + it.Name
		if len(parts) > 0 {
			line += " (" + strings.Join(parts, ", ") + ")"
		}
		return line
	}
	line := "link " + it.Name
	cur := a
	if a == nil {
		cur = b
	}
	line += " → " + linkTarget(cur)
	if b != nil && a != nil && linkTarget(b) != linkTarget(a) {
		parts = append(parts, "was → "+linkTarget(b))
	}
	if a != nil && (b == nil && (a.User != "" || a.Group != "") || b != nil && owner(b) != owner(a)) {
		parts = append(parts, "owner "+owner(a))
	}
	if len(parts) > 0 {
		line += " (" + strings.Join(parts, ", ") + ")"
	}
	return line
}

func linkTarget(it *planner.Item) string {
	if it.Hard {
		return it.Target + " (hard link)"
	}
	return it.Target
}

// attrChanges says what changes besides content: " (mode 0644 → 0600, owner …)".
func attrChanges(it planner.ItemChange) string {
	var parts []string
	b, a := it.Before, it.After
	switch {
	case it.Kind == planner.ItemFile && b == nil:
		parts = append(parts, fmt.Sprintf("mode %04o", a.Mode))
		if a.User != "" || a.Group != "" {
			parts = append(parts, "owner "+owner(a))
		}
	case it.Kind == planner.ItemFile && a != nil:
		if b.Mode != a.Mode {
			parts = append(parts, fmt.Sprintf("mode %04o → %04o", b.Mode, a.Mode))
		}
		if owner(b) != owner(a) {
			parts = append(parts, "owner "+owner(b)+" → "+owner(a))
		}
	case it.Kind == planner.ItemUnit && a != nil:
		was := &planner.Item{}
		if b != nil {
			was = b
		}
		if en, wen := enabledWord(a.Enabled), enabledWord(was.Enabled); en != wen {
			parts = append(parts, "enabled "+wen+" → "+en)
		}
		if was.Mask != a.Mask {
			parts = append(parts, fmt.Sprintf("mask %t → %t", was.Mask, a.Mask))
		}
	}
	if (b != nil && b.Sensitive) || (a != nil && a.Sensitive) {
		parts = append(parts, "sensitive")
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func owner(it *planner.Item) string {
	u, g := it.User, it.Group
	if u == "" {
		u = "root"
	}
	if g == "" {
		g = "root"
	}
	return u + ":" + g
}

func enabledWord(b *bool) string {
	switch {
	case b == nil:
		return "unset"
	case *b:
		return "true"
	}
	return "false"
}

// itemContent is the item's content: nil for no item, or none.
func itemContent(it *planner.Item) *planner.Content {
	if it == nil {
		return nil
	}
	return it.Content
}

// contentDiff is the diff of a file's or unit's content, labelled with the configs: a
// unified diff of text, a summary of what cannot be shown, or "" when it did not change.
func contentDiff(before, after *planner.Content, changed bool, path string, ch planner.Change) string {
	if !changed {
		return ""
	}
	from, to := path+" ("+nameOr(ch.From, "none")+")", path+" ("+ch.To+")"
	if before == nil {
		from = "/dev/null"
	}
	if after == nil {
		to = "/dev/null"
	}
	for _, c := range []*planner.Content{before, after} {
		if c != nil && c.Hidden == planner.HiddenSensitive {
			return "(sensitive content changed; not shown)\n"
		}
	}
	if hidden(before) || hidden(after) {
		return fmt.Sprintf("%s content: %s → %s\n", hiddenWhy(before, after), summary(before), summary(after))
	}
	return textdiff.Diff([]byte(contentText(before)), []byte(contentText(after)), from, to)
}

func nameOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

func hidden(c *planner.Content) bool { return c != nil && c.Hidden != "" }

func hiddenWhy(a, b *planner.Content) string {
	if hidden(a) {
		return a.Hidden
	}
	return b.Hidden
}

func contentText(c *planner.Content) string {
	if c == nil {
		return ""
	}
	return c.Text
}

func summary(c *planner.Content) string {
	if c == nil {
		return "none"
	}
	return textdiff.Summary{Size: c.Size, SHA256: c.SHA256}.String()
}

// dropinDiff is one drop-in's change.
type dropinDiff struct {
	name   string
	action planner.ItemAction
	diff   string
}

// dropinDiffs are the unit's drop-ins that change, by name.
func dropinDiffs(it planner.ItemChange, ch planner.Change) []dropinDiff {
	var before, after map[string]*planner.Content
	if it.Before != nil {
		before = it.Before.Dropins
	}
	if it.After != nil {
		after = it.After.Dropins
	}
	names := slices.Sorted(maps.Keys(before))
	for n := range after {
		if _, ok := before[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var out []dropinDiff
	for _, n := range names {
		b, a := before[n], after[n]
		if b != nil && a != nil && *b == *a {
			continue
		}
		path := "/etc/systemd/system/" + it.Name + ".d/" + n
		out = append(out, dropinDiff{name: it.Name + ".d/" + n, action: action(b != nil, a != nil),
			diff: contentDiff(b, a, true, path, ch)})
	}
	return out
}

func action(before, after bool) planner.ItemAction {
	switch {
	case !before:
		return planner.ItemCreate
	case !after:
		return planner.ItemDelete
	}
	return planner.ItemUpdate
}

// writeDiff writes a diff indented, its file headers left out (the item's line names the
// file, the change's heading the configs), its lines coloured as diff --color does.
func writeDiff(w io.Writer, c painter, indent, diff string) {
	for _, l := range strings.SplitAfter(diff, "\n") {
		if l == "" || strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ") {
			continue
		}
		l = strings.TrimSuffix(l, "\n")
		switch {
		case strings.HasPrefix(l, "@@"):
			l = c.paint("36", l)
		case strings.HasPrefix(l, "-"):
			l = c.red(l)
		case strings.HasPrefix(l, "+"):
			l = c.green(l)
		}
		fmt.Fprintf(w, "%s%s\n", indent, l)
	}
}

// reasonsShown is how many distinct step reasons a pool's "Why" lists in the plan.
const reasonsShown = 12

// writeReasons writes the reasons of the steps the pool's changing nodes take, each once,
// after the steps it is the reason of ("cordon, drain, kargs, reboot: kernel arguments
// +nosmt"): one reason usually moves several steps, and on every node alike.
func writeReasons(w io.Writer, c painter, nodes []*planner.NodePlan) {
	var reasons []string
	steps := map[string][]string{} // a reason's steps, in the order they first come
	for _, n := range nodes {
		if !n.Changed() {
			continue
		}
		for _, s := range n.Steps {
			if s.Reason == "" {
				continue
			}
			r, st := s.Reason, s.String()
			if _, ok := steps[r]; !ok {
				reasons = append(reasons, r)
			}
			if !slices.Contains(steps[r], st) {
				steps[r] = append(steps[r], st)
			}
		}
	}
	if len(reasons) == 0 {
		return
	}
	fmt.Fprintf(w, "\n  %s\n", c.bold("Why:"))
	for i, r := range reasons {
		if i == reasonsShown {
			fmt.Fprintf(w, "    … %d more (mcp show -json PLANFILE gives each node's steps with their reasons)\n", len(reasons)-reasonsShown)
			break
		}
		fmt.Fprintf(w, "    %s: %s\n", strings.Join(steps[r], ", "), r)
	}
}

// writeOSImage writes an OS image's change. A first os_image (the nodes' config named none)
// shows what the nodes run now instead, per image with how many nodes run it.
func writeOSImage(w io.Writer, c painter, sym, in string, it planner.ItemChange) {
	b := it.Before
	if b == nil || len(b.Running) == 0 {
		fmt.Fprintf(w, "    %s os_image\n", sym)
		if b != nil {
			fmt.Fprintf(w, "%s%s\n", in, c.red("- "+b.OSImage))
		}
		fmt.Fprintf(w, "%s%s\n", in, c.green("+ "+it.After.OSImage))
		return
	}
	fmt.Fprintf(w, "    %s os_image (the config named none; the nodes run now:)\n", sym)
	for _, r := range b.Running {
		fmt.Fprintf(w, "%s%s\n", in, c.red(fmt.Sprintf("- %s  (%s)", r.OSImage, plural(r.Nodes, "%d node", "%d nodes"))))
	}
	if b.Unreported > 0 {
		fmt.Fprintf(w, "%s  %s\n", in, plural(b.Unreported, "%d node reports no image", "%d nodes report no image"))
	}
	fmt.Fprintf(w, "%s%s\n", in, c.green("+ "+it.After.OSImage))
}
