package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/providers"
	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/steps"
)

// TestPropertyBudgetAndPlanFidelity plans and applies random fleets — pools of random
// sizes, zones, budgets and policies, nodes NotReady, cordoned, Degraded or mid-update
// before apply starts (some rolled back after an earlier failure, their journal saying
// their writes were done), paused pools, PodDisruptionBudgets, nodes whose write, restart,
// drain, reboot or health gate fails or whose reboot never comes back, nodes put on hold
// mid-apply — through the real planner and engine against a simulated fleet whose nodes
// have a disk. At every moment apply takes a node out of service, its pool must stay
// within max_unavailable; every changing node must be updated, failed, unconfirmed, not
// started or deferred, and the steps it went through must be the plan's (all of them, or
// a prefix up to a failure). Judged from the nodes: every node apply reports updated has
// the target's file on its disk and reports the target, Done; an apply that says it is
// complete is followed by a plan with no changes and no drift. MCP_PROPERTY_CASES
// overrides the number of cases (default 10,000).
func TestPropertyBudgetAndPlanFidelity(t *testing.T) {
	cases := 10000
	if v, err := strconv.Atoi(os.Getenv("MCP_PROPERTY_CASES")); err == nil {
		cases = v
	}
	if testing.Short() {
		cases = 500
	}
	stats := map[string]int{}
	start := time.Now()
	// Cases are independent; several run at once (each is mostly goroutines waiting).
	var mu sync.Mutex
	var failed []string
	seeds := make(chan uint64)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for seed := range seeds {
				sim, w, st := randomCase(seed)
				own := map[string]int{}
				err := runCase(sim, w, st, own)
				mu.Lock()
				for k, v := range own {
					stats[k] += v
				}
				if err != nil {
					failed = append(failed, fmt.Sprintf("seed %d: %v", seed, err))
				}
				mu.Unlock()
			}
		})
	}
	for seed := range cases {
		seeds <- uint64(seed)
	}
	close(seeds)
	wg.Wait()
	slices.Sort(failed)
	for i, f := range failed {
		if i == 5 {
			t.Fatalf("and %d more failing cases", len(failed)-5)
		}
		t.Error(f)
	}
	t.Logf("%d cases in %s: %v", cases, time.Since(start).Round(time.Millisecond), stats)
	for _, k := range []string{"updated", "failed", "skipped", "deferred", "own-slot", "resumed", "rolled-back",
		"gate-failed", "held-mid-apply", "complete"} {
		if stats[k] == 0 {
			t.Errorf("no case had a node %s: the generator does not reach it", k)
		}
	}
}

func runCase(sim *simFleet, w *Workspace, st *state.State, stats map[string]int) error {
	ctx := context.Background()
	pf, err := w.Plan(ctx, st, PlanOptions{})
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	next, res, applyErr := w.Apply(ctx, st, pf, ApplyOptions{Parallelism: 1 + int(sim.rng.IntN(6)),
		BudgetWait: 5 * time.Millisecond, BudgetPoll: time.Millisecond})
	if res == nil {
		return fmt.Errorf("apply: %w", applyErr)
	}
	if len(sim.violations) > 0 {
		return fmt.Errorf("budget exceeded: %s", strings.Join(sim.violations, "; "))
	}
	outcome := map[string]string{}
	for kind, names := range map[string][]string{"updated": res.Updated, "failed": res.Failed,
		"skipped": res.Skipped, "deferred": res.Deferred, "unconfirmed": res.Unconfirmed} {
		for _, n := range names {
			if o, dup := outcome[n]; dup {
				return fmt.Errorf("node %s both %s and %s", n, o, kind)
			}
			outcome[n] = kind
			stats[kind]++
		}
	}
	for _, np := range pf.File.Rollout.Nodes {
		var planned []string
		for _, s := range np.Steps {
			planned = append(planned, s.Key())
		}
		trace := sim.trace[np.Name]
		if np.Changed() && np.Condition != "" && !np.Deferred {
			stats["own-slot"]++
		}
		if np.Action == planner.NodeResume {
			stats["resumed"]++
		}
		switch o := outcome[np.Name]; {
		case !np.Changed():
			if o != "" || len(trace) > 0 {
				return fmt.Errorf("unchanged node %s: outcome %q, trace %v", np.Name, o, trace)
			}
		case o == "":
			return fmt.Errorf("changing node %s has no outcome (not updated, failed, skipped or deferred)", np.Name)
		case o == "updated":
			if !slices.Equal(trace, planned) {
				return fmt.Errorf("node %s updated with steps %v, the plan has %v", np.Name, trace, planned)
			}
		case o == "failed":
			if !isPrefix(strings.TrimSuffix(strings.Join(trace, ","), ",uncordon"), strings.Join(planned, ",")) {
				return fmt.Errorf("failed node %s ran %v, not a prefix of the plan's %v", np.Name, trace, planned)
			}
		default:
			if len(trace) > 0 {
				return fmt.Errorf("node %s %s but ran %v", np.Name, o, trace)
			}
		}
	}
	if len(res.Failed) > 0 && applyErr == nil {
		return errors.New("nodes failed, and apply returned no error")
	}
	if err := sim.judgeUpdated(res.Updated, pf.File.Rollout); err != nil {
		return err
	}
	stats["rolled-back"] += sim.rolledBack
	stats["gate-failed"] += sim.gateFailed
	stats["held-mid-apply"] += len(sim.heldMidApply())
	if Outcome(res, applyErr) != Complete {
		return nil
	}
	stats["complete"]++
	// Complete: the fleet is as the configuration asks, from its own word.
	again, err := w.Plan(ctx, next, PlanOptions{})
	if err != nil {
		return fmt.Errorf("plan after a complete apply: %w", err)
	}
	for _, np := range again.File.Rollout.Nodes {
		if np.Changed() || len(np.Drift) > 0 {
			return fmt.Errorf("apply said complete, and the next plan has node %s: %s %v, drift %v", np.Name, np.Action, keys(np.Steps), np.Drift)
		}
	}
	return nil
}

func keys(steps []model.Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Key())
	}
	return out
}

// judgeUpdated checks every node apply reports updated from the node itself: its disk has
// the target's file, and it reports the target and Done.
func (s *simFleet) judgeUpdated(updated []string, p *planner.Rollout) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range updated {
		n := s.nodes[name]
		tg := p.Rendered[s.targetOf(p, name)]
		if tg == nil {
			return fmt.Errorf("updated node %s has no target in the plan", name)
		}
		if got, want := s.disk[name], string(tg.Files[0].Contents); got != want {
			return fmt.Errorf("node %s reported updated, and its /etc/x holds %q, not the target's %q", name, got, want)
		}
		if n.CurrentConfig != tg.Name || n.State != model.StateDone {
			return fmt.Errorf("node %s reported updated, and it reports %s on %s", name, n.State, n.CurrentConfig)
		}
	}
	return nil
}

func (s *simFleet) targetOf(p *planner.Rollout, node string) string {
	for _, np := range p.Nodes {
		if np.Name == node {
			return np.To
		}
	}
	return ""
}

func (s *simFleet) heldMidApply() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for name, held := range s.holdAt {
		if held < 0 {
			out = append(out, name)
		}
	}
	return out
}

func isPrefix(got, planned string) bool {
	return got == "" || got == planned || strings.HasPrefix(planned, got+",")
}

// randomCase builds a fleet of 1–3 pools and its configuration.
func randomCase(seed uint64) (*simFleet, *Workspace, *state.State) {
	rng := rand.New(rand.NewPCG(seed, 99))
	sim := &simFleet{rng: rng, nodes: map[string]*model.Node{}, pool: map[string]string{}, max: map[string]int{},
		fail: map[string]string{}, trace: map[string][]string{}, evicted: map[string]bool{}, disk: map[string]string{},
		holdAt: map[string]int{}, known: map[string]*model.Rendered{}}
	d := &model.Desired{}
	st := state.New()
	rendered := map[string]*model.Rendered{}
	policies := []string{"", "none", "restart:x.service", "drain", "reboot"}
	// One pool in ten is paused, all or for disruptive changes.
	pauses := append(make([]model.Pause, 18), model.PauseAll, model.PauseDisruptive)
	for p := range 1 + rng.IntN(3) {
		name := fmt.Sprintf("p%d", p)
		pool := model.Pool{Name: name, NodeSelector: map[string]string{"role": name},
			MaxUnavailable: model.IntOrPercent{Value: 1 + rng.IntN(3)}, Paused: pauses[rng.IntN(len(pauses))]}
		if rng.IntN(3) == 0 {
			pool.MaxUnavailable = model.IntOrPercent{Value: 10 + rng.IntN(60), Percent: true}
		}
		d.Pools = append(d.Pools, pool)
		old := &model.Rendered{Name: "rendered-" + name + "-old", Pool: name,
			Files: []model.File{{Entry: model.Entry{Path: "/etc/x"}, Mode: 0o644, Contents: []byte("old")}}}
		tg := &model.Rendered{Pool: name, Files: []model.File{{Entry: model.Entry{Path: "/etc/x"}, Mode: 0o644, Contents: []byte("new")}}}
		for range 1 + rng.IntN(2) {
			if pol := policies[rng.IntN(len(policies))]; pol != "" {
				mp, _ := model.ParsePolicy(pol)
				tg.Files[0].OnChange = append(tg.Files[0].OnChange, mp)
			}
		}
		tg.Name = content.Name(tg)
		rendered[name] = tg
		st.Rendered[old.Name] = old
		sim.known[old.Name], sim.known[tg.Name] = old, tg
		size := rng.IntN(13)
		for i := range size {
			n := &model.Node{Name: fmt.Sprintf("%s-%02d", name, i), Labels: map[string]string{"role": name, "app": "web"},
				Zone: string(rune('a' + rng.IntN(3))), Ready: rng.IntN(8) != 0, Unschedulable: rng.IntN(10) == 0,
				Created: time.Unix(int64(rng.IntN(1000)), 0).UTC(), CurrentConfig: old.Name, State: model.StateDone}
			sim.disk[n.Name] = "old"
			switch rng.IntN(13) {
			case 0:
				n.CurrentConfig = tg.Name
				sim.disk[n.Name] = "new"
			case 1:
				n.State, n.Reason = model.StateDegraded, "earlier failure"
			case 2:
				n.State, n.DesiredConfig = model.StateWorking, tg.Name
			case 3:
				// An apply killed after it cordoned the node: the journal says so.
				if todo := steps.Derive(old, tg); todo[0].Kind == model.StepCordon {
					n.Unschedulable = true
					st.Journal[n.Name] = model.JournalEntry{From: old.Name, Target: tg.Name, Done: []string{"cordon"}}
				}
			case 4:
				// An earlier apply wrote the file, then a later step failed and the node's
				// agent rolled it back: the journal still lists the write as done.
				var done []string
				for _, s := range steps.Derive(old, tg) {
					if s.Kind == model.StepReboot {
						break
					}
					done = append(done, s.Key())
				}
				n.State, n.Reason = model.StateDegraded, "restart x.service: failed (rolled back to "+old.Name+")"
				n.Unschedulable = slices.Contains(done, "cordon")
				st.Journal[n.Name] = model.JournalEntry{From: old.Name, Target: tg.Name, Done: done}
				sim.rolledBack++
			}
			sim.nodes[n.Name] = n
			sim.order = append(sim.order, n.Name)
			sim.pool[n.Name] = name
			if rng.IntN(6) == 0 {
				sim.fail[n.Name] = []string{"write /etc/x", "restart x.service", "drain", "reboot", "reboot-hang", "gate"}[rng.IntN(6)]
			}
			if rng.IntN(15) == 0 {
				sim.holdAt[n.Name] = 1 + rng.IntN(3) // put on hold at its pool's Nth look
			}
		}
		sim.max[name] = pool.MaxUnavailable.Resolve(size)
	}
	if rng.IntN(3) == 0 {
		sim.pdb = &model.PDB{Namespace: "demo", Name: "web-pdb", Selector: map[string]string{"app": "web"},
			MinAvailable: len(sim.order) - 1 - rng.IntN(3)}
	}
	slices.Sort(sim.order)
	w := &Workspace{Desired: d, Rendered: rendered, Provider: sim, Backend: &memBackend{st: st.Clone()}}
	return sim, w, st
}

// simFleet is a fleet in memory. It plays nodes as a cluster would (cordon, drains that
// honour one PodDisruptionBudget over one pod per node, node steps with reboots, injected
// failures) and checks, at every change that takes a node out of service, that its pool
// stays within max_unavailable.
type simFleet struct {
	mu         sync.Mutex
	rng        *rand.Rand // used by the generator and runCase only (one goroutine)
	nodes      map[string]*model.Node
	order      []string
	pool       map[string]string
	max        map[string]int
	fail       map[string]string // node -> the step that fails ("reboot-hang": it never comes back)
	trace      map[string][]string
	pdb        *model.PDB
	evicted    map[string]bool // node -> its pod is evicted
	violations []string
	// disk is each node's /etc/x ("" when absent): the node's own word on what it runs.
	disk  map[string]string
	known map[string]*model.Rendered // rendered configs by name, for the nodes' rollbacks
	// holdAt puts a node on hold at the Nth look at it (-1 once done).
	holdAt     map[string]int
	rolledBack int
	gateFailed int
}

var _ providers.NodeObserver = (*simFleet)(nil)

func out(n *model.Node) bool {
	return !n.Ready || n.Unschedulable || n.State == model.StateDegraded || n.State == model.StateWorking
}

// change applies f to node under the lock and checks the budget when f took it out.
func (s *simFleet) change(node string, f func(n *model.Node)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes[node]
	was := out(n)
	f(n)
	if was || !out(n) {
		return
	}
	count := 0
	for _, m := range s.nodes {
		if s.pool[m.Name] == s.pool[node] && out(m) {
			count++
		}
	}
	if count > s.max[s.pool[node]] {
		s.violations = append(s.violations, fmt.Sprintf("pool %s: %d nodes out of service (max_unavailable %d) when %s went out",
			s.pool[node], count, s.max[s.pool[node]], node))
	}
}

func (s *simFleet) record(node, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trace[node] = append(s.trace[node], key)
	if f := s.fail[node]; f == key || f == "reboot-hang" && key == "reboot" {
		return fmt.Errorf("injected failure of %s", key)
	}
	return nil
}

func (s *simFleet) Refresh(context.Context) (*model.Fleet, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := &model.Fleet{}
	healthy := 0
	for _, name := range s.order {
		n := *s.nodes[name]
		n.Labels = maps.Clone(n.Labels)
		f.Nodes = append(f.Nodes, n)
		if !s.evicted[name] {
			f.Pods = append(f.Pods, model.Pod{Namespace: "demo", Name: "web-" + name, Node: name,
				Labels: map[string]string{"app": "web"}, Ready: n.Ready})
			if n.Ready {
				healthy++
			}
		}
	}
	if s.pdb != nil {
		b := *s.pdb
		b.CurrentHealthy, b.DesiredHealthy = healthy, b.MinAvailable
		b.DisruptionsAllowed = max(0, healthy-b.MinAvailable)
		f.PDBs = []model.PDB{b}
	}
	return f, nil
}

func (s *simFleet) ObserveNodes(_ context.Context, names []string) ([]model.Node, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := make([]model.Node, 0, len(names))
	for _, name := range names {
		if k := s.holdAt[name]; k > 0 {
			if s.holdAt[name] = k - 1; k == 1 {
				s.nodes[name].Hold, s.holdAt[name] = "put on hold mid-apply", -1
			}
		}
		o = append(o, *s.nodes[name])
	}
	return o, nil
}

// Drift compares the node's disk with current, as a node's agent would.
func (s *simFleet) Drift(_ context.Context, node string, current *model.Rendered) ([]model.Drift, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if want := string(current.Files[0].Contents); s.disk[node] != want {
		return []model.Drift{{Path: "/etc/x", Kind: model.DriftContent, Expected: want, Found: s.disk[node]}}, nil
	}
	return nil, nil
}

// WaitHealthy fails the node's gate when it was given that fault.
func (s *simFleet) WaitHealthy(_ context.Context, node string, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail[node] == "gate" {
		return &providers.GateError{Gate: providers.GateReady, Output: "injected gate failure"}
	}
	return nil
}

func (s *simFleet) NodeAddress(context.Context, string) (string, error) { return "127.0.0.1", nil }

// MarkDegraded records a failed gate on the node. It is not a change that takes the node
// out of service (no budget check): the gate found it unhealthy while apply still held
// its slot, and the pool stops after it.
func (s *simFleet) MarkDegraded(_ context.Context, node, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes[node].State, s.nodes[node].Reason = model.StateDegraded, reason
	s.gateFailed++
	return nil
}

func (s *simFleet) Cordon(_ context.Context, node string) error {
	s.change(node, func(n *model.Node) { n.Unschedulable = true })
	runtime.Gosched()
	return s.record(node, "cordon")
}

func (s *simFleet) Uncordon(_ context.Context, node string) error {
	s.change(node, func(n *model.Node) { n.Unschedulable = false })
	s.mu.Lock()
	delete(s.evicted, node)
	s.mu.Unlock()
	return s.record(node, "uncordon")
}

func (s *simFleet) Drain(ctx context.Context, node string, _ providers.DrainOptions) error {
	if err := s.record(node, "drain"); err != nil {
		return err
	}
	f, _ := s.Refresh(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.evicted[node] {
		return nil
	}
	if len(f.PDBs) == 1 && f.PDBs[0].DisruptionsAllowed <= 0 {
		return fmt.Errorf("eviction of demo/web-%s refused by PodDisruptionBudget demo/web-pdb", node)
	}
	s.evicted[node] = true
	return nil
}

// RunNodeSteps plays the node's agent: writes change its disk; a step failing before the
// reboot rolls the disk back to what it held and reports Degraded; verify compares the
// disk with target.
func (s *simFleet) RunNodeSteps(_ context.Context, node string, _, target *model.Rendered, steps []model.Step, done func(model.Step)) error {
	s.change(node, func(n *model.Node) { n.State, n.DesiredConfig = model.StateWorking, target.Name })
	s.mu.Lock()
	before := s.disk[node]
	s.mu.Unlock()
	rebooted := false
	for _, st := range steps {
		runtime.Gosched()
		if st.Kind == model.StepReboot {
			s.change(node, func(n *model.Node) { n.Ready = false })
			runtime.Gosched()
		}
		err := s.record(node, st.Key())
		if err == nil && st.Kind == model.StepVerify {
			if d, _ := s.Drift(context.Background(), node, target); len(d) > 0 {
				err = fmt.Errorf("verify: %v", d)
			}
		}
		if err != nil {
			s.mu.Lock()
			if !rebooted && st.Kind != model.StepReboot {
				s.disk[node] = before // the agent's rollback
			}
			s.mu.Unlock()
			s.change(node, func(n *model.Node) { n.State, n.Reason = model.StateDegraded, err.Error() })
			return err
		}
		switch st.Kind {
		case model.StepWrite:
			s.mu.Lock()
			s.disk[node] = string(target.Files[0].Contents)
			s.mu.Unlock()
		case model.StepReboot:
			rebooted = true
			s.change(node, func(n *model.Node) { n.Ready = true })
		}
		done(st)
	}
	s.change(node, func(n *model.Node) { n.State, n.CurrentConfig, n.Reason = model.StateDone, target.Name, "" })
	return nil
}

// memBackend keeps the state in memory.
type memBackend struct {
	mu sync.Mutex
	st *state.State
}

func (m *memBackend) Read(context.Context) (*state.State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st.Clone(), nil
}

func (m *memBackend) Write(_ context.Context, s *state.State) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.st = s.Clone()
	return nil
}

func (m *memBackend) AppendJournal(_ context.Context, r state.JournalRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.st.ApplyRecord(r)
	return nil
}

func (m *memBackend) Lock(context.Context, state.LockInfo) (state.Unlocker, error) { return nil, nil }
func (m *memBackend) ForceUnlock(context.Context, string) error                    { return nil }
func (m *memBackend) DeleteRendered(context.Context, []string) error               { return nil }
