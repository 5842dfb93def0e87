package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/providers"
)

// stagingFake is the fake provider with stages that take a while: a hand-over of a stage
// alone ends on the config the node runs. It logs, in one order for all nodes, each
// stage's start and end and each cordon and uncordon, and counts stages at once.
type stagingFake struct {
	*fakeProvider
	stageTook time.Duration
	lmu       sync.Mutex
	log       []string
	staging   int
	maxStage  int
	failAhead map[string]int // node → stages to fail before one passes
	// holdDrain, when set, holds that node's drain until stages of all the other nodes
	// have begun (5 s at most): they begin while it is in its slot.
	holdDrain string
}

func (s *stagingFake) Drain(ctx context.Context, node string, o providers.DrainOptions) error {
	for end := time.Now().Add(5 * time.Second); node == s.holdDrain && time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		s.lmu.Lock()
		begun := 0
		for _, e := range s.log {
			if strings.HasSuffix(e, " stage") {
				begun++
			}
		}
		s.lmu.Unlock()
		if begun == len(s.fleet.Nodes) {
			break
		}
	}
	return s.fakeProvider.Drain(ctx, node, o)
}

func (s *stagingFake) note(e string) {
	s.lmu.Lock()
	s.log = append(s.log, e)
	s.lmu.Unlock()
}

func (s *stagingFake) Cordon(ctx context.Context, node string) error {
	s.note(node + " cordon")
	return s.fakeProvider.Cordon(ctx, node)
}

func (s *stagingFake) Uncordon(ctx context.Context, node string) error {
	s.note(node + " uncordon")
	return s.fakeProvider.Uncordon(ctx, node)
}

func (s *stagingFake) RunNodeSteps(ctx context.Context, node string, from, target *model.Rendered, steps []model.Step, done func(model.Step)) error {
	if !model.StageOnly(steps) {
		return s.fakeProvider.RunNodeSteps(ctx, node, from, target, steps, done)
	}
	// As an agent reports it: handed over (desired the target), working, then done, on
	// the config it runs.
	s.setNode(node, func(n *model.Node) { n.DesiredConfig, n.State, n.Staging = target.Name, model.StateWorking, true })
	defer s.setNode(node, func(n *model.Node) { n.State = model.StateDone })
	s.lmu.Lock()
	s.staging++
	s.maxStage = max(s.maxStage, s.staging)
	s.log = append(s.log, node+" stage")
	fail := s.failAhead[node] > 0
	if fail {
		s.failAhead[node]--
	}
	s.lmu.Unlock()
	time.Sleep(s.stageTook)
	s.lmu.Lock()
	s.staging--
	s.log = append(s.log, node+" staged")
	s.lmu.Unlock()
	if fail {
		return errors.New("pulling: connection reset")
	}
	if err := s.record(node, steps[0].Key()); err != nil {
		return err
	}
	done(steps[0])
	return nil
}

func (s *stagingFake) setNode(node string, f func(*model.Node)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.fleet.Nodes {
		if s.fleet.Nodes[i].Name == node {
			f(&s.fleet.Nodes[i])
		}
	}
}

// stagedPlan is a plan of an OS image update of every node of f's one pool: slots nodes at
// once, maxStaging staging ahead, from a config the plan knows.
func stagedPlan(f *fakeProvider, slots, maxStaging int) *planner.Rollout {
	steps := []model.Step{{Kind: model.StepStage}, {Kind: model.StepCordon}, {Kind: model.StepDrain},
		{Kind: model.StepPivot, Target: "quay.io/os@sha256:2"}, {Kind: model.StepReboot}, {Kind: model.StepVerify},
		{Kind: model.StepUncordon}}
	p := planFor(f, map[string]int{"worker": slots}, steps)
	old := &model.Rendered{Pool: "worker", OSImage: "quay.io/os@sha256:1"}
	old.Name = "rendered-worker-old"
	p.Rendered[old.Name] = old
	p.Pools[0].MaxStaging = maxStaging
	for i := range p.Nodes {
		p.Nodes[i].From = old.Name
	}
	for i := range f.fleet.Nodes {
		f.fleet.Nodes[i].CurrentConfig, f.fleet.Nodes[i].DesiredConfig, f.fleet.Nodes[i].State = old.Name, old.Name, model.StateDone
	}
	return p
}

func runStaged(t *testing.T, s *stagingFake, p *planner.Rollout) (*ApplyResult, []Event) {
	t.Helper()
	w, st := newTestWorkspace(t, s.fakeProvider)
	w.Provider = s
	var mu sync.Mutex
	var events []Event
	res, err := w.carryOutPlanned(context.Background(), st, p, ApplyOptions{Parallelism: 10, Observer: func(e Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	return res, events
}

// TestStageAheadOutsideTheBudget: the next nodes stage while one is in its slot (the
// first node's drain is held until they began), at most max_staging at once, each stage
// once and before its node's cordon; the budget holds.
func TestStageAheadOutsideTheBudget(t *testing.T) {
	f := newFake(map[string]int{"worker": 5})
	f.delay = 10 * time.Millisecond
	s := &stagingFake{fakeProvider: f, stageTook: 80 * time.Millisecond, holdDrain: "worker-0"}
	p := stagedPlan(f, 1, 2)
	res, events := runStaged(t, s, p)
	if len(res.Updated) != 5 {
		t.Fatalf("updated %v, want 5 nodes", res.Updated)
	}
	for _, n := range p.Nodes {
		var want []string
		for _, st := range n.Steps {
			want = append(want, st.Key())
		}
		if d := cmp.Diff(want, f.trace[n.Name]); d != "" {
			t.Errorf("node %s: steps differ from the plan (-plan +ran):\n%s", n.Name, d)
		}
	}
	if f.maxBusy["worker"] > 1 {
		t.Errorf("budget of 1 exceeded: %d nodes out of service at once", f.maxBusy["worker"])
	}
	if s.maxStage != 2 {
		t.Errorf("%d nodes staged at once, want max_staging's 2", s.maxStage)
	}
	// Outside the budget: some node staged while another was cordoned.
	cordoned, overlapped := map[string]bool{}, false
	for _, e := range s.log {
		node, what, _ := strings.Cut(e, " ")
		switch what {
		case "cordon":
			cordoned[node] = true
		case "uncordon":
			delete(cordoned, node)
		case "stage":
			overlapped = overlapped || len(cordoned) > 0
		}
	}
	if !overlapped {
		t.Errorf("no node staged while another was in its slot:\n%s", strings.Join(s.log, "\n"))
	}
	ahead := 0
	for _, e := range events {
		if e.Ahead {
			ahead++
			if e.Step.Kind != model.StepStage {
				t.Errorf("a %s step reported ahead of its slot", e.Step.Kind)
			}
		}
	}
	if ahead != 10 {
		t.Errorf("%d events of stages ahead, want a start and a done for each of 5 nodes", ahead)
	}
}

// TestStageAheadOff: with max_staging 0 each node stages in its slot: no stage while
// another node is cordoned.
func TestStageAheadOff(t *testing.T) {
	f := newFake(map[string]int{"worker": 3})
	s := &stagingFake{fakeProvider: f, stageTook: 20 * time.Millisecond}
	res, _ := runStaged(t, s, stagedPlan(f, 1, 0))
	if len(res.Updated) != 3 {
		t.Fatalf("updated %v, want 3 nodes", res.Updated)
	}
	cordoned := 0
	for _, e := range s.log {
		switch {
		case strings.HasSuffix(e, " uncordon"):
			cordoned--
		case strings.HasSuffix(e, " cordon"):
			cordoned++
		case strings.HasSuffix(e, " stage") && cordoned > 0:
			t.Errorf("%s while a node was in its slot, with max_staging 0:\n%s", e, strings.Join(s.log, "\n"))
		}
	}
}

// TestStageAheadFailedIsStagedInTheSlot: a stage that fails ahead is no failure of its
// node: its slot stages it again, before its cordon.
func TestStageAheadFailedIsStagedInTheSlot(t *testing.T) {
	f := newFake(map[string]int{"worker": 3})
	s := &stagingFake{fakeProvider: f, stageTook: 20 * time.Millisecond, failAhead: map[string]int{"worker-2": 1}}
	res, events := runStaged(t, s, stagedPlan(f, 1, 3))
	if len(res.Updated) != 3 || len(res.Failed) != 0 {
		t.Fatalf("updated %v, failed %v: want all 3 updated", res.Updated, res.Failed)
	}
	i := slices.Index(s.log, "worker-2 staged")
	j := slices.Index(s.log, "worker-2 cordon")
	if k := slices.Index(s.log[i+1:], "worker-2 stage"); k < 0 || i+1+k > j {
		t.Errorf("worker-2's stage not run again before its cordon:\n%s", strings.Join(s.log, "\n"))
	}
	failedAhead := slices.ContainsFunc(events, func(e Event) bool {
		return e.Ahead && e.Kind == EventStepFailed && e.Node == "worker-2"
	})
	if !failedAhead {
		t.Error("the failed stage ahead was not reported")
	}
}
