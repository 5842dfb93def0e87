package views

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/planner"
)

// LiveProgress draws an apply on a terminal as a few lines redrawn in place (by mpb, which
// knows terminals): one per pool with a bar of its nodes done, and one per node in progress
// with its current step. What must outlast the redraw — a failure, a stopped pool — is
// printed above the lines; the summary follows once they are gone.
type LiveProgress struct {
	p    *mpb.Progress
	c    painter
	sum  Progress // prints the summary, as the line view does
	now  func() time.Time
	mu   sync.Mutex
	pool map[string]*livePool
	node map[string]*liveNode
	done bool
}

type livePool struct {
	name             string
	total, finished  int
	updating, failed int
	unconfirmed      int    // steps done, health gates not confirmed
	waiting          string // why its next node waits ("" when it does not)
	waitSince        time.Time
	stopped          bool
	bar              *mpb.Bar
}

type liveNode struct {
	name, pool, doing string
	since             time.Time
	bar               *mpb.Bar
}

// NewLiveProgress draws the apply of plan on the terminal w. Use it only when w is a
// terminal and the output is not JSON: elsewhere the line view (NewHumanProgress) keeps
// its exact output.
func NewLiveProgress(w io.Writer, color bool, plan *planner.Plan) *LiveProgress {
	l := &LiveProgress{c: painter(color), sum: NewHumanProgress(w, color), now: time.Now,
		pool: map[string]*livePool{}, node: map[string]*liveNode{}}
	l.p = mpb.New(mpb.WithOutput(w), mpb.WithRefreshRate(200*time.Millisecond))
	total := map[string]int{}
	for _, n := range plan.Nodes {
		if n.Changed() && !n.Deferred {
			total[n.Pool]++
		}
	}
	names := make([]string, 0, len(total))
	for name := range total {
		names = append(names, name)
	}
	sort.Strings(names)
	width := 0
	for _, name := range names {
		width = max(width, len("pool."+name))
	}
	for _, name := range names {
		lp := &livePool{name: name, total: total[name]}
		lp.bar = l.p.AddBar(int64(lp.total),
			mpb.PrependDecorators(decor.Name("pool."+name, decor.WC{W: width + 1, C: decor.DindentRight})),
			mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return l.poolStatus(lp) })),
			mpb.BarWidth(24))
		l.pool[name] = lp
	}
	return l
}

// Event updates the lines' state under l.mu and calls mpb after letting go of it: mpb's
// goroutines call the decorators, which take l.mu, while they hold a bar.
func (l *LiveProgress) Event(e engine.Event) {
	var after []func()
	if e.Kind == engine.EventTemplate { // before the pools' lines: publish sets templates first
		io.WriteString(l.p, templateLine(l.c, e))
		return
	}
	l.mu.Lock()
	lp := l.pool[e.Pool]
	if l.done || lp == nil { // lp nil: a pool the plan changes nothing in
		l.mu.Unlock()
		return
	}
	switch e.Kind {
	case engine.EventStepStart, engine.EventChecking:
		n := l.node[e.Node]
		if n == nil {
			n = &liveNode{name: e.Node, pool: e.Pool}
			l.node[e.Node] = n
			lp.updating++
			lp.waiting = "" // the node it waited for started
			after = append(after, func() {
				n.bar = l.p.New(0, mpb.NopStyle(), mpb.PrependDecorators(decor.Any(func(decor.Statistics) string { return l.nodeStatus(n) })))
			})
		}
		n.doing, n.since = e.Step.String(), e.Time
		if e.Kind == engine.EventChecking {
			n.doing = "health gates"
		}
	case engine.EventNodeDone, engine.EventNodeFailed, engine.EventUnconfirmed:
		if n := l.node[e.Node]; n != nil {
			delete(l.node, e.Node)
			lp.updating--
			// n.bar was set by this node's earlier event: a node's events come one after
			// the other from the goroutine that runs it.
			after = append(after, func() { n.bar.Abort(true) })
		}
		lp.finished++
		after = append(after, func() { lp.bar.IncrBy(1) })
		switch e.Kind {
		case engine.EventNodeFailed:
			lp.failed++
			msg := fmt.Sprintf("node.%s: %s: %v\n", e.Node, l.c.red("failed"), e.Err)
			after = append(after, func() { io.WriteString(l.p, msg) })
		case engine.EventUnconfirmed:
			lp.unconfirmed++
			msg := fmt.Sprintf("node.%s: %s\n", e.Node, l.c.yellow("steps done, health gates not confirmed"))
			after = append(after, func() { io.WriteString(l.p, msg) })
		}
	case engine.EventWaiting:
		if lp.waiting == "" {
			lp.waitSince = e.Time
		}
		lp.waiting = fmt.Sprintf("node.%s: %s", e.Node, e.Reason)
	case engine.EventClaimed:
		msg := fmt.Sprintf("node.%s: %s\n", e.Node, l.c.yellow(e.Reason))
		after = append(after, func() { io.WriteString(l.p, msg) })
	case engine.EventPoolStopped:
		lp.stopped, lp.waiting = true, ""
		msg := fmt.Sprintf("pool.%s: %s: no more nodes of this pool start\n", e.Pool, l.c.red("stopped"))
		after = append(after, func() { io.WriteString(l.p, msg) })
	}
	l.mu.Unlock()
	for _, f := range after {
		f()
	}
}

// poolStatus is the text after a pool's bar: counts, and what its next node waits for.
func (l *LiveProgress) poolStatus(lp *livePool) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	parts := []string{fmt.Sprintf("%d/%d done", lp.finished-lp.failed-lp.unconfirmed, lp.total)}
	if lp.updating > 0 {
		parts = append(parts, fmt.Sprintf("%d updating", lp.updating))
	}
	if lp.failed > 0 {
		parts = append(parts, l.c.red(fmt.Sprintf("%d failed", lp.failed)))
	}
	if lp.unconfirmed > 0 {
		parts = append(parts, l.c.yellow(fmt.Sprintf("%d not confirmed", lp.unconfirmed)))
	}
	if lp.stopped {
		parts = append(parts, l.c.red("stopped"))
	}
	if lp.waiting != "" {
		parts = append(parts, l.c.yellow(fmt.Sprintf("waiting %s", l.now().Sub(lp.waitSince).Round(time.Second)))+" before "+lp.waiting)
	}
	return strings.Join(parts, ", ")
}

// nodeStatus is a node's line: its current step and for how long.
func (l *LiveProgress) nodeStatus(n *liveNode) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("  node.%s: %s (%s)", n.name, n.doing, l.now().Sub(n.since).Round(time.Second))
}

// Stop ends the redrawing, leaving the pools' last lines on the screen. Apply has returned
// by then: every node's events are in.
func (l *LiveProgress) Stop() {
	l.mu.Lock()
	if l.done {
		l.mu.Unlock()
		return
	}
	l.done = true
	var nodes []*liveNode
	for _, n := range l.node {
		nodes = append(nodes, n)
	}
	l.mu.Unlock()
	for _, n := range nodes {
		n.bar.Abort(true)
	}
	for _, lp := range l.pool {
		lp.bar.Abort(false)
	}
	l.p.Wait()
}

// Summary stops the redrawing and prints the summary below the pools' lines.
func (l *LiveProgress) Summary(s ApplySummary) {
	l.Stop()
	l.sum.Summary(s)
}
