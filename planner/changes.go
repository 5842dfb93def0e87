package planner

import (
	"bytes"
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/mcpfleet/mcp/internal/textdiff"
	"github.com/mcpfleet/mcp/model"
)

// Change is what one move of a pool's nodes from a rendered config to another changes,
// item by item: the files, units, kernel arguments and OS image a reviewer reads before the
// apply, as Terraform's plan shows each attribute before and after. It is for people (the
// views show it as diffs; plan JSON as change.before/after): apply derives its steps from
// the configs themselves (steps.Derive), never from it, and nothing decides on it.
type Change struct {
	// From is the config the nodes run ("": none of mcp's yet), To the pool's new one.
	From string `json:"from,omitempty"`
	To   string `json:"to"`
	// FromUnknown is true when the state does not hold From: what differs is not known,
	// and every item of To is written (Before is then nil throughout).
	FromUnknown bool `json:"from_unknown,omitempty"`
	// Nodes are the changing nodes that make this move, in rollout order. None: the move
	// is the pool's boot pointer alone (the config new nodes boot), no node making it.
	Nodes []string     `json:"nodes"`
	Items []ItemChange `json:"items,omitempty"`
}

// ItemKind is what an ItemChange changes.
type ItemKind string

const (
	ItemFile       ItemKind = "file"
	ItemUnit       ItemKind = "unit"
	ItemKernelArgs ItemKind = "kernel_args"
	ItemOSImage    ItemKind = "os_image"
	ItemDirectory  ItemKind = "directory"
	ItemLink       ItemKind = "link"
	// ItemFirstBoot is the part of the config only booting nodes get (users, disks…):
	// its change reaches no running node.
	ItemFirstBoot ItemKind = "first_boot"
)

// ItemAction is Terraform's word for an item's change.
type ItemAction string

const (
	ItemCreate ItemAction = "create"
	ItemUpdate ItemAction = "update"
	ItemDelete ItemAction = "delete"
)

// ItemChange is one file, unit, the kernel arguments or the OS image as the move changes
// it: Before as the nodes' config has it (nil: absent), After as the new one has it (nil:
// removed).
type ItemChange struct {
	Kind   ItemKind   `json:"kind"`
	Name   string     `json:"name,omitempty"` // the file's path, the unit's name
	Action ItemAction `json:"action"`
	// ContentChanged: a file's or unit's content differs (a sensitive file's too, whose
	// Content hides both).
	ContentChanged bool  `json:"content_changed,omitempty"`
	Before         *Item `json:"before,omitempty"`
	After          *Item `json:"after,omitempty"`
}

// Item is a file, a unit, the kernel arguments or the OS image of one rendered config.
type Item struct {
	// A file's.
	Mode  int    `json:"mode,omitempty"`
	User  string `json:"user,omitempty"`
	Group string `json:"group,omitempty"`
	// Sensitive: the file is marked sensitive; its Content says nothing of it.
	Sensitive bool `json:"sensitive,omitempty"`
	// A file's or a unit's content.
	Content *Content `json:"content,omitempty"`
	// A unit's.
	Enabled *bool               `json:"enabled,omitempty"`
	Mask    bool                `json:"mask,omitempty"`
	Dropins map[string]*Content `json:"dropins,omitempty"`
	// The kernel arguments, the OS image.
	KernelArgs []string `json:"kernel_args,omitempty"`
	OSImage    string   `json:"os_image,omitempty"`
	// Running is set on the Before of an OS image the nodes' config named none of: the
	// images the move's nodes run now, per image (OSImage is the one most of them run), so
	// that a first os_image shows what it replaces. Unreported counts the move's nodes
	// that report no image.
	Running    []ImageNodes `json:"running,omitempty"`
	Unreported int          `json:"unreported,omitempty"`
	// A link's (Mode, User and Group are a directory's and a link's too). A first-boot
	// part's Content is its Ignition JSON, indented.
	Target string `json:"target,omitempty"`
	Hard   bool   `json:"hard,omitempty"`
}

// Content is a file's or unit's content as a plan may show it: its text when that can be
// read (text, at most textdiff.MaxText bytes, not sensitive), else why not (Hidden:
// "sensitive", "binary", "large"); its size and digest unless sensitive. Bounded so that a
// saved plan stays small whatever its files hold.
type Content struct {
	Text   string `json:"text,omitempty"`
	Hidden string `json:"hidden,omitempty"`
	Size   int    `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
}

// HiddenSensitive is Content.Hidden for a sensitive file's content.
const HiddenSensitive = "sensitive"

// ContentOf is b as a plan may show it; sensitive hides everything of it.
func ContentOf(b []byte, sensitive bool) *Content {
	if sensitive {
		return &Content{Hidden: HiddenSensitive}
	}
	s := textdiff.Summarize(b)
	c := &Content{Hidden: textdiff.Why(b), Size: s.Size, SHA256: s.SHA256}
	if c.Hidden == "" {
		c.Text = string(b)
	}
	return c
}

// poolChanges is what the pool's changing nodes' moves change, one Change per config they
// move from (in rollout order of each's first node), and the pool's boot pointer's move
// when no node makes it.
func poolChanges(in Input, pp *PoolPlan, nodes []NodePlan) []Change {
	var out []Change
	at := map[[2]string]int{}
	for i := range nodes {
		n := &nodes[i]
		target := in.targetOf(pp.Name, n.Name)
		if !n.Changed() || n.From == target.Name || n.Observation != nil {
			continue // unchanged, held, untargeted; only restoring drift (its drift says how); or planned from what it carries (its observation says how)
		}
		key := [2]string{n.From, target.Name}
		k, ok := at[key]
		if !ok {
			k = len(out)
			at[key] = k
			out = append(out, change(in, n.From, target))
		}
		out[k].Nodes = append(out[k].Nodes, n.Name)
	}
	runningImages(in.Fleet, out)
	// The boot pointer moves when the pool's rollout starts: not for a paused pool, nor
	// for one -target leaves out.
	if _, ok := at[[2]string{pp.Previous, pp.Rendered}]; pp.ReRendered && !pp.PointerKept && !pp.Paused && !ok {
		c := change(in, pp.Previous, in.Rendered[pp.Name])
		c.Nodes = []string{}
		out = append(out, c)
	}
	return out
}

// change is the move from the config named from to target.
func change(in Input, from string, target *model.Rendered) Change {
	c := Change{From: from, To: target.Name}
	old := &model.Rendered{}
	if from != "" {
		if old = known(in, from, target); old == nil {
			c.FromUnknown = true
			old = &model.Rendered{}
		}
	}
	c.Items = ItemChanges(old, target)
	return c
}

// ItemChanges lists what differs between old and new: files by path, units by name, then
// the kernel arguments and the OS image — the items whose change steps.Derive makes steps
// for.
func ItemChanges(old, new *model.Rendered) []ItemChange {
	out := treeChanges(old, new, model.EntryFile)
	for _, name := range unionSorted(old.Units, new.Units, func(u model.Unit) string { return u.Name }) {
		o, n := unitItem(old.Unit(name)), unitItem(new.Unit(name))
		if o != nil && n != nil && sameUnit(o, n) {
			continue
		}
		ou, nu := old.Unit(name), new.Unit(name)
		out = append(out, ItemChange{Kind: ItemUnit, Name: name, Action: action(o != nil, n != nil),
			ContentChanged: ou == nil || nu == nil || ou.Contents != nu.Contents, Before: o, After: n})
	}
	out = append(out, treeChanges(old, new, model.EntryDirectory, model.EntryLink)...)
	if !slices.Equal(old.KernelArgs, new.KernelArgs) {
		if added, removed := model.DiffArgs(old.KernelArgs, new.KernelArgs); len(added)+len(removed) > 0 {
			out = append(out, ItemChange{Kind: ItemKernelArgs, Action: action(len(old.KernelArgs) > 0, len(new.KernelArgs) > 0),
				Before: argsItem(old.KernelArgs), After: argsItem(new.KernelArgs)})
		}
	}
	if old.OSImage != new.OSImage && new.OSImage != "" {
		ic := ItemChange{Kind: ItemOSImage, Action: action(old.OSImage != "", true), After: &Item{OSImage: new.OSImage}}
		if old.OSImage != "" {
			ic.Before = &Item{OSImage: old.OSImage}
		}
		out = append(out, ic)
	}
	if !bytes.Equal(old.FirstBoot, new.FirstBoot) {
		b, a := firstBootItem(old.FirstBoot), firstBootItem(new.FirstBoot)
		out = append(out, ItemChange{Kind: ItemFirstBoot, Action: action(b != nil, a != nil), ContentChanged: true, Before: b, After: a})
	}
	return out
}

func action(before, after bool) ItemAction {
	switch {
	case !before:
		return ItemCreate
	case !after:
		return ItemDelete
	}
	return ItemUpdate
}

func unitItem(u *model.Unit) *Item {
	if u == nil {
		return nil
	}
	it := &Item{Enabled: u.Enabled, Mask: u.Mask}
	if u.Contents != "" {
		it.Content = ContentOf([]byte(u.Contents), false)
	}
	for _, d := range u.Dropins {
		if it.Dropins == nil {
			it.Dropins = map[string]*Content{}
		}
		it.Dropins[d.Name] = ContentOf([]byte(d.Contents), false)
	}
	return it
}

func argsItem(args []string) *Item {
	if len(args) == 0 {
		return nil
	}
	return &Item{KernelArgs: slices.Clone(args)}
}

// sameUnit reports whether two unit items are equal (their drop-ins are maps).
func sameUnit(a, b *Item) bool {
	if (a.Enabled == nil) != (b.Enabled == nil) || a.Enabled != nil && *a.Enabled != *b.Enabled || a.Mask != b.Mask {
		return false
	}
	if (a.Content == nil) != (b.Content == nil) || a.Content != nil && *a.Content != *b.Content {
		return false
	}
	return maps.EqualFunc(a.Dropins, b.Dropins, func(x, y *Content) bool { return *x == *y })
}

// unionSorted is the sorted keys of a's and b's elements.
func unionSorted[T any](a, b []T, key func(T) string) []string {
	seen := map[string]bool{}
	for _, x := range a {
		seen[key(x)] = true
	}
	for _, x := range b {
		seen[key(x)] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

// ImageNodes is one OS image and how many nodes run it.
type ImageNodes struct {
	OSImage string `json:"os_image"`
	Nodes   int    `json:"nodes"`
}

// runningImages gives each change's first OS image (one its nodes' config named none of)
// a Before of what those nodes run now, as they report it: the change is then an update
// of their image, not the creation of one. Nodes that report no image are counted apart;
// when none reports one, Before stays nil.
func runningImages(fleet *model.Fleet, changes []Change) {
	var booted map[string]string
	for k := range changes {
		for i := range changes[k].Items {
			it := &changes[k].Items[i]
			if it.Kind != ItemOSImage || it.Before != nil {
				continue
			}
			if booted == nil {
				booted = map[string]string{}
				if fleet != nil {
					for _, n := range fleet.Nodes {
						booted[n.Name] = n.OSImage
					}
				}
			}
			before := &Item{}
			count := map[string]int{}
			for _, name := range changes[k].Nodes {
				if img := booted[name]; img != "" {
					count[img]++
				} else {
					before.Unreported++
				}
			}
			for img, n := range count {
				before.Running = append(before.Running, ImageNodes{OSImage: img, Nodes: n})
			}
			if len(before.Running) == 0 {
				continue
			}
			// Most nodes first, then by name: the order is the plan's, on every run.
			slices.SortFunc(before.Running, func(a, b ImageNodes) int {
				return cmp.Or(b.Nodes-a.Nodes, strings.Compare(a.OSImage, b.OSImage))
			})
			before.OSImage = before.Running[0].OSImage
			it.Before, it.Action = before, ItemUpdate
		}
	}
}
