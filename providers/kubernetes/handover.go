package kubernetes

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

// RunNodeSteps hands steps to the node's agent and waits for it. The hand-over is one JSON
// merge patch of the node's annotations (protocol.Handover: the target's name, the steps,
// a fresh update ID); the agent's reports for that update ID are then read from a watch on
// that one node (list, then watch from there; re-listed by client-go when the watch
// expires). done is called for each step the agent's Progress counts as finished, in
// order; on Done with the target as current config any step not yet counted is reported
// done too (the node runs target, so they all took effect). Degraded ends the wait with an
// error carrying the agent's reason. The wait is bounded by ctx and Options.NodeTimeout,
// and ends when every list and watch of the node has failed for Options.RequestTimeout:
// the API server is gone, and the agent's reports with it (the node is left as it is; a
// re-run adopts the hand-over).
// Empty steps still hand over: the agent then only records target as its config.
func (p *Provider) RunNodeSteps(ctx context.Context, node string, from, target *model.Rendered, steps []model.Step, done func(model.Step)) error {
	if target == nil {
		return fmt.Errorf("node %s: no target config to hand over", node)
	}
	for _, s := range steps {
		if !s.Kind.OnNode() {
			return fmt.Errorf("node %s: %s is not a node step", node, s)
		}
	}
	if steps == nil {
		steps = []model.Step{}
	}
	cur, err := p.readNode(ctx, node)
	if err != nil {
		return fmt.Errorf("node %s: reading it before the hand-over: %w", node, err)
	}
	version, err := protocol.ReadAgentProtocol(cur.Annotations)
	if err != nil {
		return fmt.Errorf("node %s: %w", node, err)
	}
	h, adopted := adoptable(cur, from, target.Name, steps)
	if adopted {
		// Nothing is written to the node: its claim is written alone.
		if err := p.writePending(ctx, node); err != nil {
			return err
		}
	} else {
		h = protocol.Handover{Desired: target.Name, Steps: steps, UpdateID: rand.Text()}
		if err = p.handOver(ctx, node, h); err != nil {
			return err
		}
	}
	handed := time.Now()
	w := &waiter{node: node, target: target.Name, id: h.UpdateID, steps: h.Steps, done: onlyOf(steps, done), ctx: ctx,
		stageOnly: model.StageOnly(steps)}
	if from != nil {
		w.from = from.Name
	}
	tctx, cancel := context.WithTimeout(ctx, p.o.NodeTimeout)
	defer cancel()
	hub, release := p.nodes(tctx, node)
	defer release()
	stopNote := w.noteUntakenUp(ctx, p.o.NodeTimeout)
	err = hub.wait(tctx, node, w.observe)
	stopNote()
	var lost *unreachableError
	var unknown error = providers.ErrOutcomeUnknown
	if !w.seen && !silentYet(version, time.Since(handed), errors.As(err, &lost)) {
		unknown = notTakenUp{}
	}
	switch {
	case err == nil:
		return nil
	case w.err != nil:
		return w.err
	case ctx.Err() != nil:
		return fmt.Errorf("node %s: waiting for the agent (update %s to %s; %s): %w (%w)", node, h.UpdateID, target.Name, w.last(), context.Cause(ctx), unknown)
	case errors.As(err, &lost):
		return fmt.Errorf("node %s: waiting for the agent (update %s to %s; %s): %w; the node is left as it is (%w)", node, h.UpdateID, target.Name, w.last(), lost, unknown)
	case tctx.Err() != nil:
		return fmt.Errorf("node %s: the agent did not finish update %s to %s within %s (%s; %w)", node, h.UpdateID, target.Name, p.o.NodeTimeout, w.last(), unknown)
	}
	return fmt.Errorf("node %s: waiting for the agent: %w (%w)", node, err, unknown)
}

// notTakenUp is ErrOutcomeUnknown for an agent that never took up its update (w.last()
// says so already): it is also ErrNotTakenUp.
type notTakenUp struct{}

func (notTakenUp) Error() string { return providers.ErrOutcomeUnknown.Error() }

func (notTakenUp) Is(target error) bool {
	return target == providers.ErrNotTakenUp || target == providers.ErrOutcomeUnknown
}

// silentYet reports whether an agent of protocol version that has written nothing on its
// update after waited may still be running it: from version 2 an agent writes nothing until
// protocol.WorkingAfter (and then only if the API server takes its write, which it does not
// when the wait ended because the server was lost). A version-1 agent reported Working before
// it started anything.
func silentYet(version int, waited time.Duration, lost bool) bool {
	return version >= 2 && (lost || waited < protocol.WorkingAfter+untakenUpGrace)
}

// untakenUpGrace is how long after protocol.WorkingAfter a Working report may take to
// reach apply's watch.
const untakenUpGrace = 2 * time.Second

// untakenUpNote is how long apply waits in silence for an agent to take up its update
// before saying so: a version-1 agent that runs takes it up within a second or two, a
// version-2 one by protocol.WorkingAfter unless it has finished (a reboot: sooner).
var untakenUpNote = protocol.WorkingAfter + 5*time.Second

// noteUntakenUp says, through the context's wait note, when the agent has not taken up
// the update untakenUpNote after the hand-over, and again once it does; stop ends it.
func (w *waiter) noteUntakenUp(ctx context.Context, timeout time.Duration) (stop func()) {
	handed := time.Now()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-done:
			return
		case <-time.After(untakenUpNote):
		}
		w.noteMu.Lock()
		defer w.noteMu.Unlock()
		if w.takenUp {
			return
		}
		providers.WaitNote(ctx, fmt.Sprintf("waiting for its agent to take up update %s to %s (handed over %s ago; node_timeout %s)",
			w.id, w.target, time.Since(handed).Round(time.Second), timeout))
		w.noted = true
	}()
	return func() { close(done); <-finished }
}

// unreachableError: the API server has failed every list and watch of a wait for a while.
type unreachableError struct {
	since time.Duration
	last  error
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("the API server has failed every request for %s, the last with: %v", e.since.Round(time.Second), e.last)
}

func (e *unreachableError) Unwrap() error { return e.last }

// handOver writes h on the node.
func (p *Provider) handOver(ctx context.Context, node string, h protocol.Handover) error {
	ann, err := h.Annotations()
	if err != nil {
		return fmt.Errorf("node %s: encoding the hand-over: %w", node, err)
	}
	if c := p.takePending(node); c != nil {
		// The apply's claim rides on the hand-over (claim.go).
		if err := p.writeClaim(ctx, node, c, annotationOps(ann)); err != nil {
			return fmt.Errorf("node %s: handing over %s: %w", node, h.Desired, err)
		}
		return nil
	}
	patch, err := protocol.AnnotationsPatch(ann)
	if err != nil {
		return fmt.Errorf("node %s: encoding the hand-over: %w", node, err)
	}
	if _, err := p.client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("node %s: handing over %s: %w", node, h.Desired, err)
	}
	return nil
}

// adoptable finds a hand-over to the same target that an earlier apply made and did not see
// end (it was stopped): when it holds every step left and its agent has not finished it
// (not taken up yet, or Working — the node may be rebooting into it), or finished it since
// apply observed the node on from (Done on target, from being another config), apply waits
// for it instead of handing over again, so that no step, above all no reboot, runs twice.
// A Degraded one is handed over anew: that is a retry.
func adoptable(n *corev1.Node, from *model.Rendered, target string, steps []model.Step) (protocol.Handover, bool) {
	h, ok, err := protocol.ReadHandover(n.Annotations)
	if !ok || err != nil || h.Desired != target {
		return h, false
	}
	r := protocol.ReadReport(n.Annotations)
	finishedSince := r.State == model.StateDone && r.Current == target && (from == nil || from.Name != target)
	if r.ObservedUpdateID == h.UpdateID && r.State != model.StateWorking && !finishedSince {
		return h, false
	}
	for _, s := range steps {
		if !holds(h.Steps, s) {
			return h, false
		}
	}
	return h, true
}

// onlyOf passes to done only the steps of steps (an adopted hand-over also holds steps an
// earlier apply saw finish).
func onlyOf(steps []model.Step, done func(model.Step)) func(model.Step) {
	return func(s model.Step) {
		if done != nil && holds(steps, s) {
			done(s)
		}
	}
}

// holds reports whether steps has s (by key: reasons are for people only).
func holds(steps []model.Step, s model.Step) bool {
	return slices.ContainsFunc(steps, func(o model.Step) bool { return o.Key() == s.Key() })
}

// waiter follows the agent's reports on one hand-over.
type waiter struct {
	node, target, id string
	// from and stageOnly: a hand-over of stage steps alone ends Done on from, the config
	// the node still runs (model.StageOnly).
	from      string
	stageOnly bool
	steps     []model.Step
	done      func(model.Step)
	finished  int             // steps reported to done
	report    protocol.Report // the latest report for id
	seen      bool            // report is set
	err       error           // why the wait failed, when the agent said so
	ctx       context.Context // carries the wait note
	// takenUp is seen, for noteUntakenUp's goroutine; noted: it said the agent had not.
	noteMu         sync.Mutex
	takenUp, noted bool
}

// observe is the wait's condition: true once the agent reports Done on the target for id.
// n is the node's latest version, nil when it was deleted.
func (w *waiter) observe(n *corev1.Node) (bool, error) {
	if n == nil {
		w.err = fmt.Errorf("node %s was deleted while its agent was working on %s", w.node, w.target)
		return false, w.err
	}
	r := protocol.ReadReport(n.Annotations)
	if r.ObservedUpdateID != w.id {
		return false, nil
	}
	w.report, w.seen = r, true
	w.noteMu.Lock()
	if !w.takenUp && w.noted {
		providers.WaitNote(w.ctx, fmt.Sprintf("its agent took up update %s", w.id))
	}
	w.takenUp = true
	w.noteMu.Unlock()
	w.advance(min(r.Progress, len(w.steps)))
	switch r.State {
	case model.StateDegraded:
		reason := r.Reason
		if reason == "" {
			reason = "(the agent gave no reason)"
		}
		w.err = fmt.Errorf("node %s: Degraded: %s", w.node, reason)
		return false, w.err
	case model.StateDone:
		if w.stageOnly && w.from != "" && r.Current == w.from && r.Reason == "" {
			w.advance(len(w.steps))
			return true, nil
		}
		if r.Current != w.target && r.Reason != "" { // refused, nothing changed (a stale adoption)
			w.err = fmt.Errorf("node %s: %s", w.node, r.Reason)
			return false, w.err
		}
		if r.Current != w.target {
			w.err = fmt.Errorf("node %s: the agent reports Done on %s for update %s, not %s", w.node, r.Current, w.id, w.target)
			return false, w.err
		}
		w.advance(len(w.steps))
		return true, nil
	}
	return false, nil
}

func (w *waiter) advance(to int) {
	for ; w.finished < to; w.finished++ {
		if w.done != nil {
			w.done(w.steps[w.finished])
		}
	}
}

// last describes the latest report, for errors.
func (w *waiter) last() string {
	if !w.seen {
		return "the agent has not taken up the update"
	}
	return fmt.Sprintf("last report: %s, %d of %d steps done", w.report.State, w.report.Progress, len(w.steps))
}
