package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/engine/health"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/providers"
	"github.com/mcpfleet/mcp/state"
)

// nodeRun carries out one node's planned steps: the engine's own (cordon, drain,
// uncordon) through the provider, and each run of node steps handed to the node's
// executor in one call. Its journal entry is opened before the first action (begin), the
// intent of each action that changes the node is recorded on its claim before it (intend),
// and every finished step is journaled before the next starts.
type nodeRun struct {
	a            *applier
	n            planner.NodePlan
	from, target *model.Rendered
	// cordoned: the node is cordoned by this apply (or by the interrupted one it resumes);
	// touched: a step ran on the node (it is not as it was).
	cordoned, touched bool
	// times: how long each step that finished took, and the health gates (noteTimes).
	times model.NodeTimes
}

// runNode carries out node n's steps (nodeRun); its stage, when lane ran it ahead of the
// slot, is journaled done and not run again.
func (a *applier) runNode(ctx context.Context, n planner.NodePlan, lane *stageLane) error {
	r := &nodeRun{a: a, n: n, from: a.rendered(n.From), target: a.plan.Rendered[n.To]}
	if r.target == nil {
		return fmt.Errorf("node %s: the plan lacks rendered config %s", n.Name, n.To)
	}
	if err := r.begin(); err != nil {
		return err
	}
	if s := lane.take(ctx, n.Name); s != nil {
		r.record(s.step, false)
		r.took(model.StepStage, s.took)
		r.n.Steps = r.n.Steps[1:]
	}
	// What an interrupted apply left: cordoned by it (this apply uncordons it when it
	// gives up before changing anything), changed part-way by it (it stays cordoned).
	if f := a.inFlightOf(n.Name); f != nil {
		r.cordoned = f.Cordoned
		r.touched = slices.ContainsFunc(f.Done, func(k string) bool {
			st, err := model.ParseStepKey(k)
			return err == nil && st.Kind.OnNode() && st.Kind != model.StepStage // a stage changes nothing the node runs
		})
	}
	return r.run(ctx)
}

// run walks the node's steps, has it record its config when no node step does, and runs
// its health gates.
func (r *nodeRun) run(ctx context.Context) error {
	n := r.n
	recordConfig := !n.Changed() || !hasNodeStep(n.Steps)
	if r.from == nil {
		// A node that runs no known config cannot end a hand-over of stage steps alone on
		// the config it runs: its stage runs in the slot, with the switch (as the steps
		// derivation has it already, steps.DeriveOn).
		n.Steps = model.StageInSlot(n.Steps)
	}
	for i := 0; i < len(n.Steps); {
		s := n.Steps[i]
		if recordConfig && s.Kind == model.StepUncordon {
			// Recorded before the uncordon, while the node is out of service anyway: once
			// back in service nothing takes it out again (an agent at work on it is out).
			if err := r.recordConfig(ctx); err != nil {
				return err
			}
			recordConfig = false
		}
		if s.Kind.OnNode() {
			j := i
			for j < len(n.Steps) && n.Steps[j].Kind.OnNode() {
				j++
			}
			batch := n.Steps[i:j]
			if k, err := r.handOver(ctx, batch); err != nil {
				return r.failed(ctx, batch[min(k, len(batch)-1)], err)
			}
			i = j
			continue
		}
		t0 := time.Now()
		r.a.emit(Event{Kind: EventStepStart, Node: n.Name, Pool: n.Pool, Step: s})
		if err := r.step(ctx, s); err != nil {
			return r.failed(ctx, s, err)
		}
		r.record(s, false)
		r.took(s.Kind, time.Since(t0))
		r.a.emit(Event{Kind: EventStepDone, Node: n.Name, Pool: n.Pool, Step: s, Elapsed: time.Since(t0)})
		i++
	}
	if recordConfig {
		if err := r.recordConfig(ctx); err != nil {
			return err
		}
	}
	t0 := time.Now()
	if err := r.gate(ctx); err != nil {
		return err
	}
	r.times.Health = time.Since(t0)
	r.a.noteTimes(n, r.times)
	r.record(model.Step{}, true)
	r.a.emit(Event{Kind: EventNodeDone, Node: n.Name, Pool: n.Pool})
	return nil
}

// took notes how long a step of the node took. A node executor that reports several steps
// at once (an agent's one report at the end of a short update) gives the time since its
// last report to the first of them, and none to the others: the node's total is kept.
func (r *nodeRun) took(k model.StepKind, d time.Duration) {
	r.times.Steps = append(r.times.Steps, model.StepTime{Kind: k, Took: d})
}

// recordConfig has the node record its new config when no node step runs on it (a change
// of policies only, or a resumed node whose node steps were all done): a hand-over of no
// steps.
func (r *nodeRun) recordConfig(ctx context.Context) error {
	err := r.intend(ctx, model.PhaseHandOver, r.cordoned)
	if err == nil {
		err = r.a.w.Provider.RunNodeSteps(ctx, r.n.Name, r.from, r.target, nil, func(model.Step) {})
	}
	if err != nil {
		return r.failed(ctx, model.Step{Kind: model.StepVerify}, err)
	}
	return nil
}

// failed is the end of a step that failed: the node left to another apply that took it
// (claimedAway), else fail.
func (r *nodeRun) failed(ctx context.Context, s model.Step, err error) error {
	if away := claimedAway(r.n.Name, err); away != nil {
		return away
	}
	return r.fail(ctx, s, err)
}

// handOver hands batch, a run of node steps, to the node's executor, its intent recorded
// first; each step it reports done is journaled. It returns how many steps finished.
func (r *nodeRun) handOver(ctx context.Context, batch []model.Step) (int, error) {
	n, a := r.n, r.a
	k := 0
	t0 := time.Now()
	a.emit(Event{Kind: EventStepStart, Node: n.Name, Pool: n.Pool, Step: batch[0]})
	if err := r.intend(ctx, model.PhaseHandOver, r.cordoned); err != nil {
		return 0, err
	}
	wctx := providers.WithWaitNote(ctx, func(why string) {
		a.emit(Event{Kind: EventNodeWaiting, Node: n.Name, Pool: n.Pool, Reason: why})
	})
	err := a.w.Provider.RunNodeSteps(wctx, n.Name, r.from, r.target, batch, func(done model.Step) {
		// A stage changes nothing the node runs (model.StepStage): the node is as it was.
		r.touched = r.touched || done.Kind != model.StepStage
		r.record(done, false)
		r.took(done.Kind, time.Since(t0))
		a.emit(Event{Kind: EventStepDone, Node: n.Name, Pool: n.Pool, Step: done, Elapsed: time.Since(t0)})
		k++
		t0 = time.Now()
		if k < len(batch) {
			a.emit(Event{Kind: EventStepStart, Node: n.Name, Pool: n.Pool, Step: batch[k]})
		}
	})
	return k, err
}

// step runs one of the engine's own steps, the intent of a cordon or an uncordon recorded
// first.
func (r *nodeRun) step(ctx context.Context, s model.Step) error {
	n, a := r.n, r.a
	switch s.Kind {
	case model.StepCordon:
		if err := r.intend(ctx, model.PhaseCordon, true); err != nil {
			return err
		}
		if err := a.w.Provider.Cordon(ctx, n.Name); err != nil {
			return err
		}
		r.cordoned = true
		return nil
	case model.StepDrain:
		a.waitPlannedDrains(n)
		return a.w.Provider.Drain(ctx, n.Name, providers.DrainOptions{
			Timeout: a.drainTimeout(n.Pool), RetryDelay: a.opts.DrainRetryDelay})
	case model.StepUncordon:
		return r.uncordon(ctx)
	}
	return fmt.Errorf("the engine does not run %s steps", s.Kind)
}

// uncordon uncordons the node, its intent recorded first.
func (r *nodeRun) uncordon(ctx context.Context) error {
	if err := r.intend(ctx, model.PhaseUncordon, false); err != nil {
		return err
	}
	if err := r.a.w.Provider.Uncordon(ctx, r.n.Name); err != nil {
		return err
	}
	r.cordoned = false
	return nil
}

// gate runs the node's health gates (engine/health) after its last step. A gate that does
// not pass fails the node, and the node is marked Degraded on itself with the gate's word
// (providers.DegradedMarker), so that status and the next plan read the failure from the
// node: the next plan verifies it and checks its gates again. A gate apply stopped waiting
// for (interrupted, or the lock lost) neither passes nor fails: the node is unconfirmed,
// its journal entry stays open, and the next apply checks its gates again.
func (r *nodeRun) gate(ctx context.Context) error {
	n, a := r.n, r.a
	a.emit(Event{Kind: EventChecking, Node: n.Name, Pool: n.Pool})
	// A node NotReady before its update is held to no more than it had: requiring it Ready
	// would stop its pool behind a node that was broken before (it updates in its own slot,
	// docs/decisions.md). Its pool's health checks still run.
	g := health.Gates{Provider: a.w.provider(), ReadyTimeout: a.opts.HealthTimeout, SkipBuiltIn: n.NotReady, Pool: n.Pool}
	gctx := ctx
	if a.stop != nil {
		var cancel context.CancelFunc
		gctx, cancel = context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(a.stop, cancel)
		defer stop()
	}
	err := g.Check(gctx, n.Name, a.healthChecks(n.Pool))
	switch {
	case err == nil:
		return nil
	case gctx.Err() != nil && ctx.Err() == nil:
		err = &unconfirmedError{node: n.Name, why: context.Cause(a.stop), last: err}
		a.emit(Event{Kind: EventUnconfirmed, Node: n.Name, Pool: n.Pool, Err: err})
		return err
	}
	err = fmt.Errorf("node %s: %w", n.Name, err)
	a.noteFailed(n, "failed its health gates: "+err.Error())
	if merr := a.w.provider().MarkDegraded(context.WithoutCancel(ctx), n.Name, err.Error()); merr != nil {
		err = fmt.Errorf("%w; and marking it Degraded failed: %v", err, merr)
	}
	a.emit(Event{Kind: EventNodeFailed, Node: n.Name, Pool: n.Pool, Err: err})
	return err
}

// unconfirmedError: a node's steps are all done, and apply stopped waiting for its health
// gates before they passed or failed.
type unconfirmedError struct {
	node string
	why  error // why apply stopped
	last error // what the gate saw last
}

func (e *unconfirmedError) Error() string {
	return fmt.Sprintf("node %s: every step done and the node reports its target, but its health gates were not confirmed: "+
		"apply stopped waiting (%v); last seen: %v; the next apply checks them again", e.node, e.why, e.last)
}

func (a *applier) healthChecks(pool string) []model.HealthCheck {
	for _, pp := range a.plan.Pools {
		if pp.Name == pool {
			return pp.HealthChecks
		}
	}
	return nil
}

// drainTimeout is the pool's drain_timeout, else apply's -drain-timeout.
func (a *applier) drainTimeout(pool string) time.Duration {
	for _, pp := range a.plan.Pools {
		if pp.Name == pool && pp.DrainTimeout > 0 {
			return pp.DrainTimeout
		}
	}
	return a.opts.DrainTimeout
}

func hasNodeStep(steps []model.Step) bool {
	return slices.ContainsFunc(steps, func(s model.Step) bool { return s.Kind.OnNode() })
}

// NamesNode reports whether msg, an error of step s on node, starts by naming the node
// ("node w-1: …", "drain node w-1: …"): a prefix naming them again would say it twice.
func NamesNode(msg, node string, s model.Step) bool {
	return strings.HasPrefix(msg, "node "+node+": ") || strings.HasPrefix(msg, s.Kind.String()+" node "+node+": ")
}

// fail reports a failed step. A node the apply cordoned and did not change is uncordoned
// again (a blocked drain must not leave it out of service); a node changed half-way — or
// whose executor stopped answering, so that what it did is not known — stays cordoned,
// and its journal lets the next apply continue where this one stopped.
func (r *nodeRun) fail(ctx context.Context, s model.Step, err error) error {
	n, a := r.n, r.a
	a.emit(Event{Kind: EventStepFailed, Node: n.Name, Pool: n.Pool, Step: s, Err: err})
	// An executor that never took the update up started nothing on the node; its
	// hand-over stays, so the node stays cordoned all the same.
	notTakenUp := !r.touched && errors.Is(err, providers.ErrNotTakenUp)
	touched := r.touched || errors.Is(err, providers.ErrOutcomeUnknown)
	// The node's own error (its agent's, its provider's) may name it and its step
	// already: said once, not twice ("node w-1: write /etc/a: node w-1: write /etc/a: …").
	if !NamesNode(err.Error(), n.Name, s) {
		err = fmt.Errorf("node %s: %s: %w", n.Name, s, err)
	}
	switch cordoned := r.cordoned; {
	case cordoned && !touched:
		if uerr := r.uncordon(ctx); uerr != nil {
			err = fmt.Errorf("%w; and uncordoning it again failed: %v", err, uerr)
		} else {
			r.record(model.Step{}, true) // back as it was: nothing to resume
		}
	case cordoned && notTakenUp:
		err = fmt.Errorf("%w (left cordoned: nothing on it started, but the update stays handed over and starts when its agent takes it up; run mcp apply again once the agent runs)", err)
	case cordoned:
		err = fmt.Errorf("%w (left cordoned: it was changed part-way; run mcp apply again to continue)", err)
	}
	a.emit(Event{Kind: EventNodeFailed, Node: n.Name, Pool: n.Pool, Err: err})
	return err
}

// record journals a finished step (or, with finished, the end of the node's work) durably
// in the backend and in the in-memory state. An append that fails is reported; the state
// apply writes at its end has the record all the same.
func (r *nodeRun) record(s model.Step, finished bool) {
	n, a := r.n, r.a
	rec := state.JournalRecord{Node: n.Name, Apply: a.id, From: a.journalFrom(n), Target: n.To, Step: s.Key(), Finished: finished}
	if finished {
		rec.Step = ""
	}
	if err := a.appendJournal(rec); err != nil {
		a.emit(Event{Kind: EventStepFailed, Node: n.Name, Pool: n.Pool, Step: s, Err: fmt.Errorf("journaling step: %w", err)})
	}
	a.foldJournal(rec)
}

// appendJournal appends rec to the backend's journal, outside the applier's lock: the
// nodes' appends go to the backend together (the local one commits them in one fsync). A
// node's own records stay in order: it appends them one after the other.
func (a *applier) appendJournal(rec state.JournalRecord) error {
	return a.w.Backend.AppendJournal(context.Background(), rec)
}

// foldJournal folds rec into the state apply writes.
func (a *applier) foldJournal(rec state.JournalRecord) {
	a.mu.Lock()
	a.st.ApplyRecord(rec)
	a.mu.Unlock()
}

// journalFrom is the config node n's journal records name it came from: the one it runs,
// or, resumed, the one the interrupted update started from.
func (a *applier) journalFrom(n planner.NodePlan) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e, ok := a.st.Journal[n.Name]; ok && e.Target == n.To {
		return e.From
	}
	return n.From
}

func (a *applier) rendered(name string) *model.Rendered {
	if name == "" {
		return nil
	}
	if r := a.plan.Rendered[name]; r != nil {
		return r
	}
	return a.st.Rendered[name]
}

// started records that node runs; the channel returned is closed when it ends.
func (a *applier) started(node string) chan struct{} {
	a.runMu.Lock()
	defer a.runMu.Unlock()
	if a.running == nil {
		a.running = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	a.running[node] = ch
	return ch
}

// waitPlannedDrains keeps the order the plan predicted for drains that one
// PodDisruptionBudget serialises (planner.BlockPDBWait): the node drains after the nodes it
// waits for end, rather than racing them for the budget's one disruption (the drains would
// be safe either way — each eviction asks the budget — but not in the planned order). Only
// nodes already running are waited for: they hold their slots and end, so no wait can
// close a cycle; one not started yet is not waited for.
func (a *applier) waitPlannedDrains(n planner.NodePlan) {
	for _, b := range n.Blockers {
		if b.Kind != planner.BlockPDBWait {
			continue
		}
		for _, after := range b.After {
			a.runMu.Lock()
			ch := a.running[after]
			a.runMu.Unlock()
			if ch == nil {
				continue
			}
			select {
			case <-ch:
				continue
			default:
			}
			what := "PodDisruptionBudget " + b.PDB
			if b.Pod != "" {
				what += " to evict pod " + b.Pod
			}
			a.emit(Event{Kind: EventWaiting, Pool: n.Pool, Node: n.Name,
				Reason: fmt.Sprintf("drain waits for %s: node %s first, as planned", what, after)})
			<-ch
		}
	}
}
