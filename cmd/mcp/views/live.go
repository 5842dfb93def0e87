package views

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/planner"
)

// LiveProgress draws an apply on a terminal as a few lines redrawn in place (by mpb, which
// knows terminals): one per pool with a bar of its nodes done, and one per node in progress
// with its current step. What must outlast the redraw — a failure, a stopped pool — is
// printed above the lines; the summary follows once they are gone.
type LiveProgress struct {
	p   *mpb.Progress
	c   painter
	sum Progress // prints the summary, as the line view does
	now func() time.Time
	// size is the terminal's (nil: not a terminal, nothing is wrapped).
	size    func() (width, height int, err error)
	reboots marks
	mu      sync.Mutex
	pool    map[string]*livePool
	node    map[string]*liveNode
	done    bool
}

type livePool struct {
	name             string
	total, finished  int
	updating, failed int
	unconfirmed      int    // steps done, health gates not confirmed
	waiting          string // why its next node waits ("" when it does not)
	waitFor          string // the node it waits to start
	waitSince        time.Time
	started          map[string]bool // nodes that started: a wait for one of them is over
	// staging: nodes staging ahead of their slots (engine.Event.Ahead), outside the
	// budget; staged: those that staged ahead and wait for their slots.
	staging, staged map[string]bool
	stopped         bool
	bar             *mpb.Bar
	// below is the text of the lines under the bar's (what did not fit beside it, and the
	// wait), set with each frame's bar line; lines is it wrapped, set by the first line.
	below string
	lines []string

	// est is the plan's estimate of the pool (nil: none), slots and soak its pacing; begun
	// when each node running started, took how long each that finished took: the time left.
	est   *planner.Estimate
	slots int
	soak  time.Duration
	begun map[string]time.Time
	took  []time.Duration
}

// barWidth is the width of a pool's bar, brackets included: it keeps it, however long
// the text after it (which goes on the lines below instead).
const barWidth = 24

// poolLinesBelow and nodeLinesBelow are how many lines a pool's and a node's text may take
// under their first: the rest is left out at a word's end, with "…".
const (
	poolLinesBelow = 3
	nodeLinesBelow = 2
)

type liveNode struct {
	name, pool, doing string
	waits             string // what its executor keeps apply waiting on, until its next step
	since             time.Time
	bar               *mpb.Bar
	lines             []string // its text wrapped, set with each frame's first line
}

// NewLiveProgress draws the apply of plan on the terminal w. Use it only when w is a
// terminal and the output is not JSON: elsewhere the line view (NewHumanProgress) keeps
// its exact output.
func NewLiveProgress(w io.Writer, color bool, plan *planner.Rollout) *LiveProgress {
	plan = Shown(plan)
	sum := NewHumanProgress(w, color).(*humanProgress)
	l := &LiveProgress{c: painter(color), sum: sum, now: time.Now, reboots: marks{},
		pool: map[string]*livePool{}, node: map[string]*liveNode{}}
	opts := []mpb.ContainerOption{mpb.WithOutput(w), mpb.WithRefreshRate(200 * time.Millisecond)}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		l.size = func() (int, int, error) { return term.GetSize(int(f.Fd())) }
		sum.cols = l.cols
		opts = append(opts, mpb.WithConsoleWriter(&reflowConsole{out: w, size: l.size}))
	}
	l.p = mpb.New(opts...)
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
		lp := &livePool{name: name, total: total[name], started: map[string]bool{}, begun: map[string]time.Time{},
			staging: map[string]bool{}, staged: map[string]bool{}}
		for _, pp := range plan.Pools {
			if pp.Name == name {
				lp.est, lp.slots, lp.soak = pp.Estimate, pp.Slots, pp.Soak
			}
		}
		lp.bar = l.p.AddBar(int64(lp.total),
			mpb.PrependDecorators(decor.Name("pool."+name, decor.WC{W: width + 1, C: decor.DindentRight})),
			// The text gets what the terminal has left beside the bar and the spaces around
			// it: were it longer, mpb would take the room from the bar.
			mpb.AppendDecorators(decor.Any(func(s decor.Statistics) string { return l.poolStatus(lp, s.AvailableWidth-barWidth-2) })),
			mpb.BarWidth(barWidth),
			mpb.BarBtmExtender(l.poolBelow(lp)...))
		l.pool[name] = lp
	}
	return l
}

// Event updates the lines' state under l.mu and calls mpb after letting go of it: mpb's
// goroutines call the decorators, which take l.mu, while they hold a bar.
func (l *LiveProgress) Event(e engine.Event) {
	e = Shown(e)
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
	switch {
	case e.Ahead:
		// A stage ahead of the node's slot: counted on the pool's line, the node not in
		// its slot (no line of its own).
		delete(lp.staging, e.Node)
		switch e.Kind {
		case engine.EventStepStart:
			lp.staging[e.Node] = true
		case engine.EventStepDone:
			lp.staged[e.Node] = true
		case engine.EventStepFailed:
			msg := fmt.Sprintf("node.%s: %s: %s; its slot stages it again\n", e.Node, l.c.yellow("stage ahead failed"),
				strings.TrimPrefix(errorText(e.Err), "node "+e.Node+": "))
			after = append(after, func() { l.above(msg) })
		}
		l.mu.Unlock()
		for _, f := range after {
			f()
		}
		return
	case e.Kind == engine.EventStepStart || e.Kind == engine.EventChecking:
		delete(lp.staged, e.Node)
	}
	switch e.Kind {
	case engine.EventStepStart, engine.EventChecking:
		n := l.node[e.Node]
		if n == nil {
			n = &liveNode{name: e.Node, pool: e.Pool}
			l.node[e.Node] = n
			lp.updating++
			lp.started[e.Node] = true
			lp.begun[e.Node] = e.Time
			if lp.waitFor == e.Node {
				lp.waiting, lp.waitFor = "", "" // the node it waited for started
			}
			after = append(after, func() {
				n.bar = l.p.New(0, mpb.NopStyle(), mpb.PrependDecorators(decor.Any(func(s decor.Statistics) string { return l.nodeFirst(n, s.AvailableWidth) })),
					mpb.BarBtmExtender(l.nodeBelow(n)...))
			})
		}
		n.doing, n.since, n.waits = e.Step.String(), e.Time, ""
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
		lp.started[e.Node] = true
		if t, ok := lp.begun[e.Node]; ok && e.Kind == engine.EventNodeDone {
			lp.took = append(lp.took, e.Time.Sub(t))
		}
		delete(lp.begun, e.Node)
		if lp.waitFor == e.Node || lp.finished >= lp.total {
			lp.waiting, lp.waitFor = "", ""
		}
		after = append(after, func() { lp.bar.IncrBy(1) })
		switch e.Kind {
		case engine.EventNodeFailed:
			lp.failed++
			msg := fmt.Sprintf("node.%s: %s: %s\n", e.Node, l.c.red("failed"), strings.TrimPrefix(errorText(e.Err), "node "+e.Node+": "))
			after = append(after, func() { l.above(msg) })
		case engine.EventUnconfirmed:
			lp.unconfirmed++
			msg := fmt.Sprintf("node.%s: %s\n", e.Node, l.c.yellow("steps done, health gates not confirmed"))
			after = append(after, func() { l.above(msg) })
		}
	case engine.EventNodeWaiting:
		if n := l.node[e.Node]; n != nil {
			n.waits = e.Reason
		}
	case engine.EventStepDone:
		l.reboots.see(e)
		if n := l.node[e.Node]; n != nil {
			n.waits = ""
		}
	case engine.EventWaiting:
		if lp.started[e.Node] {
			break // late: the node it was about has started since
		}
		if lp.waiting == "" {
			lp.waitSince = e.Time
		}
		lp.waiting, lp.waitFor = fmt.Sprintf("node.%s: %s", e.Node, e.Reason), e.Node
	case engine.EventAlertsFiring:
		msg := fmt.Sprintf("pool.%s: %s: %s\n", e.Pool, l.c.red("stopping"), e.Reason)
		after = append(after, func() { l.above(msg) })
	case engine.EventReverting:
		msg := fmt.Sprintf("pool.%s: %s: %s\n", e.Pool, l.c.red("reverting"), e.Reason)
		after = append(after, func() { l.above(msg) })
	case engine.EventClaimed, engine.EventSincePlan:
		msg := fmt.Sprintf("node.%s: %s\n", e.Node, l.c.yellow(e.Reason))
		after = append(after, func() { l.above(msg) })
	case engine.EventPoolStopped:
		lp.stopped, lp.waiting, lp.waitFor = true, "", ""
		msg := fmt.Sprintf("pool.%s: %s: no more nodes of this pool start\n", e.Pool, l.c.red("stopped"))
		after = append(after, func() { l.above(msg) })
	}
	l.mu.Unlock()
	for _, f := range after {
		f()
	}
}

// poolStatus is the text after a pool's bar: the parts of it — its counts, what its next
// node waits for — that fit in room columns, whole; the rest go on the lines below.
func (l *LiveProgress) poolStatus(lp *livePool, room int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	parts, wait := l.poolParts(lp, l.c)
	if wait != "" {
		parts = append(parts, wait)
	}
	line, rest := fitParts(parts, room)
	lp.below = strings.Join(rest, ", ")
	return line
}

// poolParts are a pool's counts, and what its next node waits for ("" when none).
func (l *LiveProgress) poolParts(lp *livePool, c painter) (counts []string, wait string) {
	parts := []string{fmt.Sprintf("%d/%d done", lp.finished-lp.failed-lp.unconfirmed, lp.total)}
	if lp.updating > 0 {
		parts = append(parts, fmt.Sprintf("%d updating", lp.updating))
	}
	if len(lp.staging) > 0 {
		parts = append(parts, fmt.Sprintf("%d staging ahead", len(lp.staging)))
	}
	if len(lp.staged) > 0 {
		parts = append(parts, fmt.Sprintf("%d staged", len(lp.staged)))
	}
	if lp.failed > 0 {
		parts = append(parts, c.red(fmt.Sprintf("%d failed", lp.failed)))
	}
	if lp.unconfirmed > 0 {
		parts = append(parts, c.yellow(fmt.Sprintf("%d not confirmed", lp.unconfirmed)))
	}
	if lp.stopped {
		parts = append(parts, c.red("stopped"))
	}
	if left, ok := l.timeLeft(lp); ok {
		parts = append(parts, "~"+rough(left)+" left")
	}
	if lp.waiting != "" {
		wait = c.yellow(fmt.Sprintf("waiting %s", l.now().Sub(lp.waitSince).Round(time.Second))) + " before " + lp.waiting
	}
	return parts, wait
}

// timeLeft is the pool's time left (planner.Estimate.Left), from the plan's estimate and
// this run's finished nodes; false once the pool ended or stopped, or without an estimate.
func (l *LiveProgress) timeLeft(lp *livePool) (time.Duration, bool) {
	if lp.est == nil || lp.stopped || lp.finished >= lp.total {
		return 0, false
	}
	now := l.now()
	var running []time.Duration
	for _, t := range lp.begun {
		running = append(running, now.Sub(t))
	}
	notStarted := lp.total - lp.finished - len(lp.begun)
	return lp.est.Left(lp.slots, notStarted, lp.soak, running, lp.took), true
}

// nodeStatus is a node's line: its current step and for how long.
func (l *LiveProgress) nodeStatus(n *liveNode) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	took := l.now().Sub(n.since).Round(time.Second)
	if n.waits != "" {
		return fmt.Sprintf("  node.%s: %s (%s): %s", n.name, n.doing, took, n.waits)
	}
	return fmt.Sprintf("  node.%s: %s (%s)", n.name, n.doing, took)
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
	for _, lp := range l.pool {
		lp.waiting, lp.waitFor = "", "" // the final frame: no node waits any more
	}
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

// Summary stops the redrawing and prints the summary below the pools' lines, with the
// nodes that rebooted.
func (l *LiveProgress) Summary(s ApplySummary) {
	l.Stop()
	s = Shown(s) // the node names the reboots were seen under
	l.mu.Lock()
	l.reboots.fill(&s)
	l.mu.Unlock()
	l.sum.Summary(s)
}
