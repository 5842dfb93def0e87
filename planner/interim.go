package planner

import (
	"cmp"
	"slices"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/steps"
)

// A pool paused for disruptive changes lets a node take the part of its move that disrupts
// nothing now: a node whose move mixes both kinds moves to an interim config — the config
// it runs with the target's files, directories, links and units whose change needs no
// drain or reboot — and the rest waits (a certificate beside a held kernel argument: the
// MCO's paused pool blocked its certificate rotation). The interim is a rendered config
// like any: content-named, stored and served by name; once unpaused the node moves from it
// to the target with the rest.

// Interim says that a node's To is an interim config (the pool is paused for disruptive
// changes): Target is the config its move is to, and Waiting the steps of the rest of that
// move, which wait for the pause to end. For people: apply derives the rest again then.
type Interim struct {
	Target  string       `json:"target"`
	Waiting []model.Step `json:"waiting"`
}

// passInterim is np, a changing node of a pool paused for disruptive changes, moved to its
// interim config when its move to target mixes changes that disrupt nothing with changes
// that do; np as it is otherwise: a move wholly one or the other, a node planned from what
// it carries, resumed or with an update under way, one whose current config is unknown,
// or whose interim move would still drain or reboot it (drift to restore) waits or passes
// whole.
func passInterim(in Input, n *model.Node, pool *model.Pool, target *model.Rendered, np NodePlan) NodePlan {
	if np.Action != NodeUpdate || np.DriftOnly || np.Observation != nil || np.Happened != "" || !np.Disruptive() ||
		n.State == model.StateWorking || n.PendingReboot != nil {
		return np // not a settled node's whole move (an update of it is under way)
	}
	cur := known(in, n.CurrentConfig, target)
	if cur == nil {
		return np
	}
	im := in.interimOf(cur, target)
	if im == nil {
		return np
	}
	ip := planNode(in, n, pool, im)
	if !ip.Changed() || ip.Disruptive() || ip.Action != NodeUpdate {
		return np
	}
	rest, _ := stepsFrom(in, im.Name, target, steps.HostOf(n))
	ip.Interim = &Interim{Target: target.Name, Waiting: rest}
	return ip
}

// interims are the interim configs a plan makes: by the move they split (nil: that move
// has none), and by name.
type interims struct {
	byMove map[[2]string]*model.Rendered
	byName map[string]*model.Rendered
}

func newInterims() *interims {
	return &interims{byMove: map[[2]string]*model.Rendered{}, byName: map[string]*model.Rendered{}}
}

// named is the interim config named name; nil: none (or no plan is being made).
func (m *interims) named(name string) *model.Rendered {
	if m == nil {
		return nil
	}
	return m.byName[name]
}

// interimOf is cur with the items of target whose change alone derives no step that
// drains or reboots (steps.Derive of that item, the one derivation), once per (cur,
// target); nil when no item or every item passes (nothing to split), or the split is not
// a config render would make (a file under a directory that waits turned into a link, say).
func (in *Input) interimOf(cur, target *model.Rendered) *model.Rendered {
	key := [2]string{cur.Name, target.Name}
	if r, ok := in.interims.byMove[key]; ok {
		return r
	}
	r := splitMove(cur, target)
	if r != nil && (r.Name == target.Name || len(steps.Derive(cur, r)) == 0) {
		r = nil // every change passes, or none
	}
	in.interims.byMove[key] = r
	if r != nil {
		in.interims.byName[r.Name] = r
	}
	return r
}

// splitMove builds and names the interim config of the move from cur to target (nil: no
// interim can be made).
func splitMove(cur, target *model.Rendered) *model.Rendered {
	if cur.Pool != target.Pool || cur.IgnitionVersion != target.IgnitionVersion {
		return nil // each item was checked by Ignition's parser in its config's spec
	}
	r := &model.Rendered{Pool: cur.Pool, IgnitionVersion: cur.IgnitionVersion, OSImage: cur.OSImage,
		KernelArgs: cur.KernelArgs, FirstBoot: cur.FirstBoot, Sources: cur.Sources}
	var es []model.TreeEntry
	for _, p := range unionSorted(cur.Entries(), target.Entries(), entryPath) {
		from, to := cur.Entry(p), target.Entry(p)
		if e := pick(from, to, passes(single(from, nil), single(to, nil))); e != nil {
			es = append(es, e)
		}
	}
	slices.SortStableFunc(es, func(a, b model.TreeEntry) int { return cmp.Compare(a.Common().Path, b.Common().Path) })
	r.SetEntries(es)
	for _, name := range unionSorted(cur.Units, target.Units, func(u model.Unit) string { return u.Name }) {
		from, to := cur.Unit(name), target.Unit(name)
		if u := pick(from, to, passes(single(nil, from), single(nil, to))); u != nil {
			r.Units = append(r.Units, *u)
		}
	}
	identity := func(o model.Origin) model.Origin { return o }
	if len(recordsDiags(r, identity))+len(parentsDiags(r, identity)) > 0 {
		return nil
	}
	r.Name = content.Name(r)
	return r
}

// pick is to when the change passes, from otherwise.
func pick[T any](from, to T, passes bool) T {
	if passes {
		return to
	}
	return from
}

// passes reports whether the move from old to new (one item each) drains or reboots nothing.
func passes(old, new *model.Rendered) bool {
	return !slices.ContainsFunc(steps.Derive(old, new), func(s model.Step) bool { return s.Kind.Disruptive() })
}

// single is a config of the entry e or the unit u alone (either may be nil).
func single(e model.TreeEntry, u *model.Unit) *model.Rendered {
	r := &model.Rendered{}
	if e != nil {
		r.SetEntries([]model.TreeEntry{e})
	}
	if u != nil {
		r.Units = []model.Unit{*u}
	}
	return r
}

func entryPath(e model.TreeEntry) string { return e.Common().Path }
