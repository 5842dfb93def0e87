package chaos

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/internal/atomicfile"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers/local"
)

// judge reads every node's event log and checks the promises: no node rebooted twice into
// one rendered config (a reboot the OS rolled back not counted: it ended its attempt), none
// left cordoned, and no pool ever had more nodes out of service
// at once than its max_unavailable.
func (h *harness) judge() error {
	logs, err := local.ReadEvents(h.fleet())
	if err != nil {
		return fmt.Errorf("reading the fleet's event logs: %w", err)
	}
	err = judgeLogs(h.rep, logs, h.kills)
	if rerr := h.judgeRoots(); rerr != nil {
		return rerr
	}
	if err == nil && len(h.rep.Problems) > 0 {
		err = fmt.Errorf("%d promises broken:\n%s", len(h.rep.Problems), strings.Join(h.rep.Problems, "\n"))
	}
	return err
}

// judgeRoots reads each node itself once the plan is empty: its root holds the last
// generation's file, and its node.json says it runs a config, Done, schedulable and Ready.
func (h *harness) judgeRoots() error {
	want := fmt.Sprintf("generation %d\n", h.gen)
	dirs, err := filepath.Glob(filepath.Join(h.fleet(), "nodes", "*"))
	if err != nil {
		return err
	}
	for _, dir := range dirs {
		name := filepath.Base(dir)
		b, err := os.ReadFile(filepath.Join(dir, "root", "etc", "chaos.conf"))
		if err != nil || string(b) != want {
			h.rep.Problems = append(h.rep.Problems, fmt.Sprintf("node %s: /etc/chaos.conf holds %q (%v), not %q", name, b, err, want))
		}
		var n model.Node
		b, err = os.ReadFile(filepath.Join(dir, "node.json"))
		if err == nil {
			err = json.Unmarshal(b, &n)
		}
		if err != nil || n.State != model.StateDone || n.Unschedulable || !n.Ready || n.CurrentConfig == "" {
			h.rep.Problems = append(h.rep.Problems, fmt.Sprintf("node %s: state %s %q, cordoned %v, ready %v, config %q (%v)",
				name, n.State, n.Reason, n.Unschedulable, n.Ready, n.CurrentConfig, err))
		}
		left, err := Leftovers(filepath.Join(dir, "root"))
		if err != nil {
			return err
		}
		for _, p := range left {
			h.rep.Problems = append(h.rep.Problems, fmt.Sprintf("node %s: %s is left, the temporary twin of a write cut short", name, p))
		}
	}
	h.rep.RootsChecked = len(dirs)
	return nil
}

// Leftovers are the temporary twins mcp's writes make (atomicfile.IsTemp) found anywhere
// in a node's root, as paths on the node: once the plan is empty, every one a killed
// write left has been swept by the node's next update.
func Leftovers(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && atomicfile.IsTemp(d.Name()) {
			rel, _ := filepath.Rel(root, p)
			out = append(out, "/"+filepath.ToSlash(rel))
		}
		return nil
	})
	return out, err
}

// Judge checks event logs (local.ReadEvents) against the promises, with budget giving
// each pool's max_unavailable (pools are the node names' prefixes, as mcp fleet init names
// them), for tests that drive a fleet themselves.
func Judge(logs map[string][]local.Event, budget map[string]int) *Report {
	r := &Report{Budget: budget}
	judgeLogs(r, logs, nil)
	return r
}

// judgeLogs judges the event logs of every node into r; kills are the times killed
// applies were gone.
func judgeLogs(r *Report, logs map[string][]local.Event, kills []time.Time) error {
	var all []local.Event
	for _, evs := range logs {
		prev := time.Time{}
		for _, e := range evs {
			e.Time = trueBound(e, prev, kills)
			prev = e.Time
			all = append(all, e)
		}
	}
	slices.SortStableFunc(all, func(a, b local.Event) int {
		return cmp.Or(a.Time.Compare(b.Time), strings.Compare(a.Node, b.Node), cmp.Compare(a.Seq, b.Seq))
	})
	r.MaxOut = map[string]int{}
	nodes := map[string]*nodeState{}
	outNow := map[string]int{}
	reboots := map[[2]string]int{}
	for _, e := range all {
		n := nodes[e.Node]
		if n == nil {
			n = &nodeState{}
			nodes[e.Node] = n
		}
		pool := poolOf(e.Node)
		was := n.out()
		n.apply(e)
		switch now := n.out(); {
		case now && !was:
			outNow[pool]++
		case was && !now:
			outNow[pool]--
		}
		// The budget binds mcp where it takes a node in service out of it — a cordon, or
		// an agent starting an update in place — counting every node out of service then,
		// whoever took it out. A node going NotReady or Degraded by itself (or by hand)
		// is counted, not judged.
		if !was && (e.Kind == local.EventCordon || e.Kind == local.EventWorking) && outNow[pool] > r.MaxOut[pool] {
			r.MaxOut[pool] = outNow[pool]
			if outNow[pool] > r.Budget[pool] {
				r.Problems = append(r.Problems, fmt.Sprintf("pool %s: %d nodes out of service at %s (max_unavailable %d), when %s: %s; out: %s",
					pool, outNow[pool], e.Time.Format(time.RFC3339Nano), r.Budget[pool], e.Node, e.Kind, outOf(nodes, pool)))
			}
		}
		if e.Kind == local.EventReboot {
			r.Reboots++
			if e.RolledBack {
				// The OS rolled the update back at this boot: the attempt ended, and the
				// update's one reboot is still owed (FaultRollback).
				r.RolledBack++
				continue
			}
			key := [2]string{e.Node, e.DesiredConfig}
			if reboots[key]++; reboots[key] == 2 {
				r.DoubleReboots++
				r.Problems = append(r.Problems, fmt.Sprintf("node %s rebooted twice into %s", e.Node, e.DesiredConfig))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(nodes)) {
		if nodes[name].cordoned {
			r.LeftCordoned = append(r.LeftCordoned, name)
			r.Problems = append(r.Problems, "node "+name+" left cordoned")
		}
	}
	if len(r.Problems) > 0 {
		return fmt.Errorf("%d promises broken:\n%s", len(r.Problems), strings.Join(r.Problems, "\n"))
	}
	return nil
}

// trueBound is the latest time an event can have happened. An event recovered with a late
// stamp (an uncordon or ready whose writer was killed before it could stamp it) was logged
// by a later writer: its change took effect before the kill of the writer that made it,
// so it is dated no later than the last kill before it was logged — and no earlier than the
// node's previous event (prev), which it follows. Every other event keeps its stamp.
func trueBound(e local.Event, prev time.Time, kills []time.Time) time.Time {
	if !e.LateStamp {
		return e.Time
	}
	t := e.Time
	for _, k := range kills { // in order: t ends as the last kill before e was logged
		if !k.After(e.Time) {
			t = k
		}
	}
	if t.Before(prev) {
		t = prev
	}
	return t
}

// nodeState is a node's availability as its events tell it.
type nodeState struct {
	cordoned, notReady, working, degraded bool
}

func (n *nodeState) out() bool { return n.cordoned || n.notReady || n.working || n.degraded }

func (n *nodeState) apply(e local.Event) {
	switch e.Kind {
	case local.EventCordon:
		n.cordoned = true
	case local.EventUncordon:
		n.cordoned = false
	case local.EventNotReady:
		n.notReady = true
	case local.EventReady:
		n.notReady = false
	case local.EventWorking:
		n.working, n.degraded = true, false
	case local.EventDone:
		n.working, n.degraded = false, false
	case local.EventDegraded:
		n.working, n.degraded = false, true
	}
}

// outOf describes the pool's nodes out of service.
func outOf(nodes map[string]*nodeState, pool string) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(nodes)) {
		if n := nodes[name]; poolOf(name) == pool && n.out() {
			out = append(out, fmt.Sprintf("%s%+v", name, *n))
		}
	}
	return strings.Join(out, ", ")
}

// poolOf is the pool of a node `mcp fleet init` named <pool>-<i>.
func poolOf(node string) string {
	i := strings.LastIndexByte(node, '-')
	if i < 0 {
		return node
	}
	return node[:i]
}

func sortedKeys(m map[string]int) []string { return slices.Sorted(maps.Keys(m)) }
