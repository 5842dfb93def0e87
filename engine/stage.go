package engine

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// Staging ahead (docs/decisions.md, "Stage before the slot"): a node whose steps begin
// with a stage (model.StepStage) has it handed to its executor before the node's slot,
// outside the pool's budget and without a claim — a stage changes nothing the node runs —,
// at most the pool's MaxStaging nodes at once, in plan order. While one node is in its
// slot the next ones pull and check out their update. The node's slot then starts at its
// cordon. A slot whose node the lane has not begun moves it to the front of the lane's
// queue and waits (max_staging holds for every stage while the lane runs); one whose
// stage failed ahead runs it again, before its cordon; so does a slot whose lane has
// closed (the pool stopped, apply interrupted). Two hand-overs to one node never overlap.
//
// The lane journals nothing: a stage ahead that an interruption cuts short leaves the node
// running what it ran, with its staged deployment behind the finalization lock, which the
// next stage of the same update finds and keeps (nodeexec), and a power cut or another
// tool's reboot drops.

// stageLane is one pool run's staging ahead.
type stageLane struct {
	r      *poolRun
	ctx    context.Context // the lane's: cancelled when the pool's run ends (stop)
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	nodes map[string]*aheadStage // the nodes the lane may stage, by name
	queue []string               // those not begun, in plan order; a slot's first
}

// aheadStage is one node's stage in the lane.
type aheadStage struct {
	state stageState
	done  chan struct{} // closed once the lane's stage ended, or the lane closed first
	step  model.Step
	took  time.Duration
	err   error
}

type stageState int

const (
	stageQueued  stageState = iota
	stageRunning            // handed to the node's executor by the lane
	stageEnded              // the lane's stage ended (err says how), or the lane closed before it
)

// errLaneClosed is the end of a stage the lane closed before beginning.
var errLaneClosed = errors.New("not staged ahead: the staging lane closed")

// stagesAhead reports whether node n's stage can run ahead of its slot: its steps begin
// with one, the node runs a config the state knows (the stage ends on it: a node whose
// config is unknown stages in its slot, steps.DeriveOn), and no interrupted update of it
// is resumed (its stage, if any is left, runs in its slot as the journal has it).
func (a *applier) stagesAhead(n planner.NodePlan) bool {
	return model.StagesFirst(n.Steps) && a.rendered(n.From) != nil &&
		a.inFlightOf(n.Name) == nil
}

// stageAhead starts the pool's staging lane for nodes, the nodes runPool is to start, in
// their order. Without the state lock (-lock=false) there is none: a stage ahead holds no
// claim, and only the lock keeps another apply off the node meanwhile.
func (r *poolRun) stageAhead(nodes []planner.NodePlan) *stageLane {
	l := &stageLane{r: r, nodes: map[string]*aheadStage{}}
	l.ctx, l.cancel = context.WithCancel(r.ctx)
	plans := map[string]planner.NodePlan{}
	for _, n := range nodes {
		if r.a.stagesAhead(n) {
			l.nodes[n.Name] = &aheadStage{done: make(chan struct{}), step: n.Steps[0]}
			l.queue = append(l.queue, n.Name)
			plans[n.Name] = n
		}
	}
	if r.pp.MaxStaging < 1 || r.a.opts.Lock.NoLock || len(l.queue) == 0 {
		l.nodes = nil
		return l
	}
	l.wg.Go(func() { l.run(plans) })
	return l
}

// stop ends the lane once the pool's nodes are done: a stage ahead still running is of a
// node whose slot will not come in this apply (its pool stopped). It is left to its
// executor (an agent carries on and leaves the deployment staged behind the finalization
// lock, which the next apply's stage of the same update finds) and not reported.
func (l *stageLane) stop() {
	l.cancel()
	l.wg.Wait()
}

// run stages the queue's nodes, at most MaxStaging at once, until each is begun, the pool
// stops or apply is interrupted; then it closes.
func (l *stageLane) run(plans map[string]planner.NodePlan) {
	defer l.close()
	slots := make(chan struct{}, l.r.pp.MaxStaging)
	for {
		select {
		case slots <- struct{}{}:
		case <-l.ctx.Done():
			return
		}
		name, ok := l.next()
		if !ok {
			return
		}
		l.wg.Go(func() {
			defer func() { <-slots }()
			l.stage(plans[name])
		})
	}
}

// next takes the first node of the queue and marks its stage running; none once the
// queue is empty or the pool's run has stopped (a slot waiting for its stage is let go by
// close).
func (l *stageLane) next() (string, bool) {
	stopped := l.r.halted()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) == 0 || stopped {
		return "", false
	}
	name := l.queue[0]
	l.queue = l.queue[1:]
	l.nodes[name].state = stageRunning
	return name, true
}

// close ends the stages the lane will not begin: a slot waiting for one stages its node
// itself.
func (l *stageLane) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, name := range l.queue {
		s := l.nodes[name]
		s.state, s.err = stageEnded, errLaneClosed
		close(s.done)
	}
	l.queue = nil
}

// stage hands node n's stage step alone to its executor: a hand-over that ends on the
// config the node runs.
func (l *stageLane) stage(n planner.NodePlan) {
	a := l.r.a
	s := l.nodes[n.Name]
	t0 := time.Now()
	a.emit(Event{Kind: EventStepStart, Node: n.Name, Pool: n.Pool, Step: s.step, Ahead: true})
	err := a.w.Provider.RunNodeSteps(l.ctx, n.Name, a.rendered(n.From), a.plan.Rendered[n.To], []model.Step{s.step}, func(model.Step) {})
	took := time.Since(t0)
	switch {
	case err != nil && l.ctx.Err() != nil:
		// Apply interrupted, or the pool's run ended without this node's slot (stop): the
		// node's slot, if it started, runs the stage again (adopting the hand-over).
	case err != nil:
		a.emit(Event{Kind: EventStepFailed, Node: n.Name, Pool: n.Pool, Step: s.step, Err: err, Elapsed: took, Ahead: true})
	default:
		a.emit(Event{Kind: EventStepDone, Node: n.Name, Pool: n.Pool, Step: s.step, Elapsed: took, Ahead: true})
	}
	l.mu.Lock()
	s.state, s.took, s.err = stageEnded, took, err
	l.mu.Unlock()
	close(s.done)
}

// take is node's slot asking for its stage: a node the lane has not begun goes to the
// front of its queue; the slot waits for the stage and gets it when it succeeded (nil: the
// slot stages the node itself, if its steps say so).
func (l *stageLane) take(ctx context.Context, node string) *aheadStage {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	s := l.nodes[node]
	if s == nil {
		l.mu.Unlock()
		return nil
	}
	if i := slices.Index(l.queue, node); i > 0 {
		l.queue = append(append([]string{node}, l.queue[:i]...), l.queue[i+1:]...)
	}
	l.mu.Unlock()
	select {
	case <-s.done:
	case <-ctx.Done():
		return nil
	}
	if s.err != nil {
		return nil
	}
	return s
}
