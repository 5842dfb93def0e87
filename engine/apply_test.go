package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/providers"
	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/state/localstate"
)

// fakeProvider records every action per node and tracks how many nodes of each pool are
// out of service at once.
type fakeProvider struct {
	mu       sync.Mutex
	fleet    *model.Fleet
	pool     map[string]string // node -> pool
	trace    map[string][]string
	busy     map[string]int // pool -> nodes between cordon and uncordon (or in node steps)
	maxBusy  map[string]int
	failNode map[string]string // node -> step key that fails
	failErr  error             // what it fails with (default: "injected failure")
	delay    time.Duration
	drainTO  map[string]time.Duration // node -> the timeout its drain was given
}

func newFake(pools map[string]int) *fakeProvider {
	f := &fakeProvider{fleet: &model.Fleet{}, pool: map[string]string{}, trace: map[string][]string{},
		busy: map[string]int{}, maxBusy: map[string]int{}, failNode: map[string]string{},
		drainTO: map[string]time.Duration{}}
	var names []string
	for p := range pools {
		names = append(names, p)
	}
	slices.Sort(names)
	for _, p := range names {
		for i := 0; i < pools[p]; i++ {
			n := fmt.Sprintf("%s-%d", p, i)
			f.pool[n] = p
			f.fleet.Nodes = append(f.fleet.Nodes, model.Node{Name: n, Ready: true,
				Labels: map[string]string{"node-role.kubernetes.io/" + p: ""}})
		}
	}
	return f
}

func (f *fakeProvider) Refresh(context.Context) (*model.Fleet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := *f.fleet
	c.Nodes = slices.Clone(f.fleet.Nodes)
	return &c, nil
}

func (f *fakeProvider) record(node, key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.trace[node] = append(f.trace[node], key)
	if f.failNode[node] == key {
		if f.failErr != nil {
			return f.failErr
		}
		return errors.New("injected failure")
	}
	return nil
}

func (f *fakeProvider) enter(node string) {
	f.mu.Lock()
	p := f.pool[node]
	f.busy[p]++
	f.maxBusy[p] = max(f.maxBusy[p], f.busy[p])
	f.mu.Unlock()
}

func (f *fakeProvider) leave(node string) {
	f.mu.Lock()
	f.busy[f.pool[node]]--
	f.mu.Unlock()
}

func (f *fakeProvider) Cordon(_ context.Context, node string) error {
	f.enter(node)
	return f.record(node, "cordon")
}

func (f *fakeProvider) Uncordon(_ context.Context, node string) error {
	defer f.leave(node)
	return f.record(node, "uncordon")
}

func (f *fakeProvider) Drain(_ context.Context, node string, o providers.DrainOptions) error {
	f.mu.Lock()
	f.drainTO[node] = o.Timeout
	f.mu.Unlock()
	time.Sleep(f.delay)
	return f.record(node, "drain")
}

func (f *fakeProvider) RunNodeSteps(_ context.Context, node string, _, target *model.Rendered, steps []model.Step, done func(model.Step)) error {
	for _, s := range steps {
		time.Sleep(f.delay)
		if err := f.record(node, s.Key()); err != nil {
			return err
		}
		done(s)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.fleet.Nodes {
		if f.fleet.Nodes[i].Name == node {
			f.fleet.Nodes[i].CurrentConfig = target.Name
		}
	}
	return nil
}

func rebootSteps() []model.Step {
	return []model.Step{{Kind: model.StepCordon}, {Kind: model.StepDrain},
		{Kind: model.StepWrite, Target: "/etc/a"}, {Kind: model.StepReboot}, {Kind: model.StepVerify},
		{Kind: model.StepUncordon}}
}

// testRendered is the rendered config of pool the fake plans use, named by its content: the
// state backends refuse a config whose name is not its content's.
func testRendered(pool string) *model.Rendered {
	r := &model.Rendered{Pool: pool}
	r.Name = content.Name(r)
	return r
}

// planFor builds a plan that updates every node of the fake with steps, slots per pool.
func planFor(f *fakeProvider, slots map[string]int, steps []model.Step) *planner.Rollout {
	p := &planner.Rollout{Rendered: map[string]*model.Rendered{}}
	var pools []string
	for pool := range slots {
		pools = append(pools, pool)
	}
	slices.Sort(pools)
	for _, pool := range pools {
		name := testRendered(pool).Name
		p.Rendered[name] = testRendered(pool)
		p.Pools = append(p.Pools, planner.PoolPlan{Name: pool, Rendered: name, Slots: slots[pool],
			MaxUnavailable: slots[pool], ReRendered: true})
		for _, n := range f.fleet.Nodes {
			if f.pool[n.Name] == pool {
				p.Nodes = append(p.Nodes, planner.NodePlan{Name: n.Name, Pool: pool, Action: planner.NodeUpdate,
					To: name, Steps: steps})
			}
		}
	}
	return p
}

func newTestWorkspace(t *testing.T, f *fakeProvider) (*Workspace, *state.State) {
	t.Helper()
	b := &localstate.Local{Path: t.TempDir() + "/mcp.state"}
	st, err := b.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return &Workspace{Provider: f, Backend: b}, st
}

// carryOutPlanned carries out p as if this workspace had just made it from a refresh that
// saw no claims and no user_data Secrets; *st becomes the state that follows.
func (w *Workspace) carryOutPlanned(ctx context.Context, st *state.State, p *planner.Rollout, opts ApplyOptions) (*ApplyResult, error) {
	next, res, err := w.carryOut(ctx, st, &Plan{File: &planfile.File{Rollout: p}, Observed: &Observed{}}, opts)
	if next != nil {
		*st = *next
	}
	return res, err
}

func saved(t *testing.T, w *Workspace, st *state.State, p *planner.Rollout) *planfile.File {
	t.Helper()
	fl, _ := w.Provider.Refresh(context.Background())
	return &planfile.File{MCPVersion: Version, Lineage: st.Lineage, Serial: st.Serial, FleetFingerprint: Fingerprint(fl), Rollout: p}
}

func TestApplyTraceEqualsPlanAndBudgetHolds(t *testing.T) {
	f := newFake(map[string]int{"worker": 7, "infra": 3})
	f.delay = time.Millisecond
	w, st := newTestWorkspace(t, f)
	p := planFor(f, map[string]int{"worker": 2, "infra": 1}, rebootSteps())
	res, err := w.carryOutPlanned(context.Background(), st, p, ApplyOptions{Parallelism: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Updated) != 10 {
		t.Fatalf("updated %d nodes, want 10", len(res.Updated))
	}
	for _, n := range p.Nodes {
		var want []string
		for _, s := range n.Steps {
			want = append(want, s.Key())
		}
		if d := cmp.Diff(want, f.trace[n.Name]); d != "" {
			t.Errorf("node %s trace differs from plan (-plan +trace):\n%s", n.Name, d)
		}
	}
	if f.maxBusy["worker"] > 2 || f.maxBusy["infra"] > 1 {
		t.Errorf("budget exceeded: %v", f.maxBusy)
	}
	if f.maxBusy["worker"] < 2 {
		t.Errorf("worker pool never used its 2 slots (max %d): scheduling is not continuous", f.maxBusy["worker"])
	}
	// The journal is folded away and the pointers moved.
	st2, err := w.Backend.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st2.Journal) != 0 {
		t.Errorf("journal left after a complete apply: %v", st2.Journal)
	}
	if w := testRendered("worker").Name; st2.Pointers["worker"] != w || st2.Rendered[w] == nil {
		t.Errorf("pointer or rendered config not stored: %v", st2.Pointers)
	}
	if st2.Serial != 2 {
		t.Errorf("serial = %d, want 2 (one write before, one after)", st2.Serial)
	}
}

func TestApplyPoolDrainTimeout(t *testing.T) {
	f := newFake(map[string]int{"worker": 1, "infra": 1})
	w, st := newTestWorkspace(t, f)
	p := planFor(f, map[string]int{"worker": 1, "infra": 1}, rebootSteps())
	for i := range p.Pools {
		if p.Pools[i].Name == "infra" {
			p.Pools[i].DrainTimeout = 90 * time.Second
		}
	}
	if _, err := w.carryOutPlanned(context.Background(), st, p, ApplyOptions{DrainTimeout: 7 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{"infra-0": 90 * time.Second, "worker-0": 7 * time.Minute}
	if d := cmp.Diff(want, f.drainTO); d != "" {
		t.Errorf("drain timeouts (-want +got):\n%s", d)
	}
}

func TestApplyGlobalParallelism(t *testing.T) {
	f := newFake(map[string]int{"a": 4, "b": 4})
	f.delay = time.Millisecond
	w, st := newTestWorkspace(t, f)
	p := planFor(f, map[string]int{"a": 4, "b": 4}, rebootSteps())
	var mu sync.Mutex
	running, peak := 0, 0
	obs := func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case e.Kind == EventStepStart && e.Step.Kind == model.StepCordon:
			running++
			peak = max(peak, running)
		case e.Kind == EventNodeDone || e.Kind == EventNodeFailed:
			running--
		}
	}
	if _, err := w.carryOutPlanned(context.Background(), st, p, ApplyOptions{Parallelism: 3, Observer: obs}); err != nil {
		t.Fatal(err)
	}
	if peak > 3 {
		t.Errorf("%d nodes ran at once, -parallelism is 3", peak)
	}
}

func TestApplyFailureStopsPoolOthersContinue(t *testing.T) {
	f := newFake(map[string]int{"worker": 4, "infra": 2})
	w, st := newTestWorkspace(t, f)
	f.failNode["worker-0"] = "drain"
	p := planFor(f, map[string]int{"worker": 1, "infra": 1}, rebootSteps())
	res, err := w.carryOutPlanned(context.Background(), st, p, ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), "node worker-0: drain: injected failure") {
		t.Fatalf("error = %v, want the failed node and step named", err)
	}
	if d := cmp.Diff([]string{"worker-1", "worker-2", "worker-3"}, res.Skipped); d != "" {
		t.Errorf("skipped (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"infra-0", "infra-1"}, res.Updated); d != "" {
		t.Errorf("the other pool did not go on (-want +got):\n%s", d)
	}
	// A blocked drain changed nothing on the node: it is uncordoned again.
	if d := cmp.Diff([]string{"cordon", "drain", "uncordon"}, f.trace["worker-0"]); d != "" {
		t.Errorf("worker-0 trace (-want +got):\n%s", d)
	}
	st2, _ := w.Backend.Read(context.Background())
	if _, ok := st2.Journal["worker-0"]; ok {
		t.Errorf("journal kept for a node that was put back as it was")
	}
}

func TestApplyResumesFromJournal(t *testing.T) {
	f := newFake(map[string]int{"worker": 1})
	w, st := newTestWorkspace(t, f)
	f.failNode["worker-0"] = "verify"
	p := planFor(f, map[string]int{"worker": 1}, rebootSteps())
	_, err := w.carryOutPlanned(context.Background(), st, p, ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), "left cordoned") {
		t.Fatalf("error = %v, want a node left cordoned after a part-way change", err)
	}
	st2, _ := w.Backend.Read(context.Background())
	got := st2.Journal["worker-0"]
	// The entry names the apply run that began it (issue 43), whichever it was.
	want := model.JournalEntry{Apply: got.Apply, Target: testRendered("worker").Name, Done: []string{"cordon", "drain", "write /etc/a", "reboot"}}
	if d := cmp.Diff(want, got); d != "" || got.Apply == "" {
		t.Errorf("journal (-want +got):\n%s\napply %q", d, got.Apply)
	}
}

// handOvers is the fake provider with each hand-over of no steps (a node recording its
// config) in the trace.
type handOvers struct{ *fakeProvider }

func (h handOvers) RunNodeSteps(ctx context.Context, node string, from, target *model.Rendered, steps []model.Step, done func(model.Step)) error {
	if len(steps) == 0 {
		if err := h.record(node, "record config"); err != nil {
			return err
		}
	}
	return h.fakeProvider.RunNodeSteps(ctx, node, from, target, steps, done)
}

// A resumed node whose node steps the interrupted apply all did (it reports its target,
// cordoned by that apply) records its config while still cordoned, then is uncordoned:
// once back in service nothing takes it out again. The crash harness found it handed over
// after its uncordon, out of service beside a node its pool's budget had let start.
func TestResumedNodeRecordsItsConfigBeforeItsUncordon(t *testing.T) {
	f := newFake(map[string]int{"worker": 1})
	w, st := newTestWorkspace(t, f)
	w.Provider = handOvers{f}
	p := planFor(f, map[string]int{"worker": 1}, []model.Step{{Kind: model.StepUncordon}})
	n := &p.Nodes[0]
	n.Action, n.From = planner.NodeResume, n.To
	f.fleet.Nodes[0].CurrentConfig, f.fleet.Nodes[0].Unschedulable = n.To, true
	if _, err := w.carryOutPlanned(context.Background(), st, p, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"record config", "uncordon"}, f.trace["worker-0"]); d != "" {
		t.Errorf("worker-0's calls (-want +got):\n%s", d)
	}
}

// The plan apply itself made and showed (no plan file), gone stale before its first node
// so that it would do more than shown — a node went NotReady meanwhile (another apply took
// it out), and apply would skip its built-in health gates —: nothing acts, and the apply
// is incomplete (run again, exit 2), not failed, names the node and speaks of no saved plan.
func TestApplyOwnPlanGoneStaleStartsNothing(t *testing.T) {
	dir := quickstart(t)
	w := load(t, dir)
	st, fresh := planned(t, w, PlanOptions{})
	editNode(t, dir, "worker-1", func(m map[string]any) { m["ready"] = false })
	_, res, err := w.Apply(context.Background(), st, fresh, ApplyOptions{BudgetPoll: 20 * time.Millisecond})
	if Outcome(res, err) != Incomplete || err == nil || strings.Contains(err.Error(), "saved plan") ||
		!strings.Contains(err.Error(), "node.worker-1: not_ready is false in the plan, true here") ||
		!strings.Contains(err.Error(), "no node was started; run mcp apply again") {
		t.Fatalf("outcome %v, error %v: want incomplete, nothing started, worker-1 named", Outcome(res, err), err)
	}
	if len(res.Skipped) != 6 {
		t.Errorf("not started: %v, want the plan's 6 nodes", res.Skipped)
	}
	if got := worked(t, dir); len(got) != 0 {
		t.Errorf("a stale plan acted on %v", got)
	}
}

func TestApplyRefusesStalePlan(t *testing.T) {
	f := newFake(map[string]int{"worker": 2})
	w, st := newTestWorkspace(t, f)
	p := planFor(f, map[string]int{"worker": 1}, rebootSteps())
	pf := saved(t, w, st, p)
	f.fleet.Nodes[1].Ready = false // the world moved on
	_, _, err := w.Apply(context.Background(), st, Saved(pf), ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), "fleet changed") {
		t.Fatalf("error = %v, want a stale-plan refusal", err)
	}
	if len(f.trace) != 0 {
		t.Errorf("a stale plan acted: %v", f.trace)
	}
	pf = saved(t, w, st, p)
	pf.Serial = 7
	if _, _, err := w.Apply(context.Background(), st, Saved(pf), ApplyOptions{}); err == nil || !strings.Contains(err.Error(), "serial") {
		t.Fatalf("error = %v, want a serial mismatch", err)
	}
}

// An apply whose lock is taken away starts no more nodes and does not write the state over
// the run that may hold it now.
func TestApplyWithLostLockStopsAndDoesNotWrite(t *testing.T) {
	f := newFake(map[string]int{"worker": 4})
	w, st := newTestWorkspace(t, f)
	p := planFor(f, map[string]int{"worker": 1}, rebootSteps())
	ctx, cancel := context.WithCancelCause(context.Background())
	obs := func(e Event) {
		if e.Kind == EventNodeDone {
			cancel(fmt.Errorf("%w: removed", state.ErrLockLost))
		}
	}
	res, err := w.carryOutPlanned(ctx, st, p, ApplyOptions{Observer: obs})
	if err == nil || !strings.Contains(err.Error(), "the state was not saved") {
		t.Fatalf("error %v, want the state not saved", err)
	}
	if len(res.Updated) != 1 || len(res.Skipped) != 3 {
		t.Errorf("updated %v, skipped %v: want one node, then nothing new", res.Updated, res.Skipped)
	}
	st2, err := w.Backend.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st2.Serial != 1 {
		t.Errorf("serial %d after a lost lock, want 1 (only the write before the rollout)", st2.Serial)
	}
}

// A node whose executor stopped answering before it reported any step may be mid-reboot:
// it stays cordoned, and the error says so.
func TestApplyLeavesAnUnansweringNodeCordoned(t *testing.T) {
	f := newFake(map[string]int{"worker": 1})
	f.failNode["worker-0"] = "write /etc/a"
	f.failErr = fmt.Errorf("the agent did not finish within 30m (%w)", providers.ErrOutcomeUnknown)
	w, st := newTestWorkspace(t, f)
	_, err := w.carryOutPlanned(context.Background(), st, planFor(f, map[string]int{"worker": 1}, rebootSteps()), ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), "left cordoned") {
		t.Fatalf("error %v, want the node left cordoned", err)
	}
	if d := cmp.Diff([]string{"cordon", "drain", "write /etc/a"}, f.trace["worker-0"]); d != "" {
		t.Errorf("worker-0 was uncordoned (-want +got):\n%s", d)
	}
}

// A pool outside -target keeps its boot pointer: nodes that boot meanwhile get the config
// they got before, while the targeted nodes move (their rendered config is stored).
func TestApplyKeepsTheBootPointerOfAnUntargetedPool(t *testing.T) {
	f := newFake(map[string]int{"worker": 2, "infra": 1})
	w, st := newTestWorkspace(t, f)
	p := planFor(f, map[string]int{"worker": 1, "infra": 1}, rebootSteps())
	p.Pools[1].PointerKept = true // worker: -target=node.worker-0
	st.Pointers["worker"] = "rendered-worker-before"
	if _, err := w.carryOutPlanned(context.Background(), st, p, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if st.Pointers["worker"] != "rendered-worker-before" || st.Pointers["infra"] != p.Pools[0].Rendered {
		t.Errorf("pointers %v: worker's must stay, infra's move to %s", st.Pointers, p.Pools[0].Rendered)
	}
	if st.Rendered[p.Pools[1].Rendered] == nil {
		t.Error("the untargeted pool's new rendered config was not stored: its targeted nodes need it")
	}
}

// A node put on hold after the plan was made is not started: the look at the pool before
// its start sees the hold. The pool goes on with its other nodes, and apply does not fail.
func TestApplyHonoursAHoldSetAfterThePlan(t *testing.T) {
	f := newFake(map[string]int{"worker": 3})
	w, st := newTestWorkspace(t, f)
	p := planFor(f, map[string]int{"worker": 1}, rebootSteps())
	f.fleet.Nodes[1].Labels[model.HoldKey] = "kernel-debug"
	res, err := w.carryOutPlanned(context.Background(), st, p, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.trace["worker-1"]) > 0 {
		t.Errorf("the held node was touched: %v", f.trace["worker-1"])
	}
	if d := cmp.Diff([]string{"worker-1"}, res.Skipped); d != "" || len(res.Updated) != 2 {
		t.Errorf("updated %v, skipped (-want +got):\n%s", res.Updated, d)
	}
}
