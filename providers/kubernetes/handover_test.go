package kubernetes

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

// watchedClient is a fake cluster with one node whose watches are registered before
// watching is closed (the fake loses events between a list and a watch otherwise).
func watchedClient(t *testing.T) (*fake.Clientset, <-chan struct{}) {
	c := fake.NewClientset(kNode("w-0", "a", true, map[string]string{
		// A report of an earlier update, which the wait must ignore.
		protocol.ObservedUpdateID: "old", protocol.State: model.StateDegraded, protocol.Reason: "old failure"}))
	watching := make(chan struct{})
	var once sync.Once
	c.PrependWatchReactor("nodes", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := c.Tracker().Watch(a.GetResource(), a.GetNamespace())
		once.Do(func() { close(watching) })
		return true, w, err
	})
	return c, watching
}

// agent plays the node agent: it waits for a hand-over, then writes each report in turn,
// its update ID filled in.
func agent(t *testing.T, c *fake.Clientset, watching <-chan struct{}, reports ...protocol.Report) <-chan protocol.Handover {
	got := make(chan protocol.Handover, 1)
	go func() {
		ctx := context.Background()
		<-watching
		var h protocol.Handover
		for {
			n, err := c.CoreV1().Nodes().Get(ctx, "w-0", metav1.GetOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			var ok bool
			if h, ok, err = protocol.ReadHandover(n.Annotations); err != nil {
				t.Error(err)
				return
			} else if ok {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		got <- h
		for _, r := range reports {
			n, err := c.CoreV1().Nodes().Get(ctx, "w-0", metav1.GetOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			n.Annotations[protocol.ObservedUpdateID] = h.UpdateID
			n.Annotations[protocol.State] = r.State
			n.Annotations[protocol.Reason] = r.Reason
			n.Annotations[protocol.Progress] = strconv.Itoa(r.Progress)
			if r.Current != "" {
				n.Annotations[protocol.CurrentConfig] = r.Current
			}
			if _, err := c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return got
}

var (
	target = &model.Rendered{Name: "rendered-worker-2", Pool: "worker"}
	steps  = []model.Step{{Kind: model.StepWrite, Target: "/etc/x", Reason: "changed"}, {Kind: model.StepRestart, Target: "x.service"}}
)

func TestRunNodeStepsDone(t *testing.T) {
	c, watching := watchedClient(t)
	handed := agent(t, c, watching,
		protocol.Report{State: model.StateWorking},
		protocol.Report{State: model.StateWorking, Progress: 1},
		protocol.Report{State: model.StateDone, Progress: 2, Current: target.Name})
	var done []model.Step
	p := NewForClient(c, Options{NodeTimeout: 30 * time.Second})
	err := p.RunNodeSteps(context.Background(), "w-0", nil, target, steps, func(s model.Step) {
		done = append(done, s)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(done, steps) {
		t.Errorf("done called with %v, want %v", done, steps)
	}
	h := <-handed
	if h.Desired != target.Name || !slices.Equal(h.Steps, steps) || h.UpdateID == "" {
		t.Errorf("hand-over %+v", h)
	}
}

func TestRunNodeStepsDegraded(t *testing.T) {
	c, watching := watchedClient(t)
	agent(t, c, watching,
		protocol.Report{State: model.StateWorking},
		protocol.Report{State: model.StateWorking, Progress: 1},
		protocol.Report{State: model.StateDegraded, Progress: 1, Reason: "restart x.service: unit not found (rolled back)"})
	var done []model.Step
	err := NewForClient(c, Options{NodeTimeout: 30 * time.Second}).RunNodeSteps(context.Background(), "w-0", nil, target, steps,
		func(s model.Step) { done = append(done, s) })
	if err == nil || err.Error() != "node w-0: Degraded: restart x.service: unit not found (rolled back)" {
		t.Errorf("error %v", err)
	}
	if !slices.Equal(done, steps[:1]) {
		t.Errorf("done called with %v, want the first step only", done)
	}
}

// Empty steps still hand over; an agent that reports Done at once ends the wait.
func TestRunNodeStepsNoSteps(t *testing.T) {
	c, watching := watchedClient(t)
	handed := agent(t, c, watching, protocol.Report{State: model.StateDone, Current: target.Name})
	if err := NewForClient(c, Options{}).RunNodeSteps(context.Background(), "w-0", nil, target, nil, nil); err != nil {
		t.Fatal(err)
	}
	if h := <-handed; len(h.Steps) != 0 || h.Desired != target.Name {
		t.Errorf("hand-over %+v", h)
	}
}

func TestRunNodeStepsTimeout(t *testing.T) {
	c, watching := watchedClient(t)
	agent(t, c, watching, protocol.Report{State: model.StateWorking, Progress: 1})
	err := NewForClient(c, Options{NodeTimeout: 300 * time.Millisecond}).RunNodeSteps(context.Background(), "w-0", nil, target, steps, func(model.Step) {})
	if err == nil || !strings.Contains(err.Error(), "did not finish") || !strings.Contains(err.Error(), "Working, 1 of 2 steps done") {
		t.Errorf("error %v", err)
	}
}

func TestRunNodeStepsRejectsEngineSteps(t *testing.T) {
	c, _ := watchedClient(t)
	err := NewForClient(c, Options{}).RunNodeSteps(context.Background(), "w-0", nil, target,
		[]model.Step{{Kind: model.StepDrain}}, nil)
	if err == nil || len(c.Actions()) != 0 {
		t.Errorf("a drain step was handed to the node: err %v, actions %v", err, c.Actions())
	}
}

// An agent that never takes up its update: apply is told so while it waits, and the error
// says nothing on the node started (providers.ErrNotTakenUp) as well as that its outcome
// is not known (the hand-over stays). One that takes it up late is said to have.
func TestRunNodeStepsAgentNeverTakesUp(t *testing.T) {
	defer func(d time.Duration) { untakenUpNote = d }(untakenUpNote)
	untakenUpNote = 50 * time.Millisecond
	c, _ := watchedClient(t)
	var mu sync.Mutex
	var notes []string
	ctx := providers.WithWaitNote(context.Background(), func(s string) { mu.Lock(); notes = append(notes, s); mu.Unlock() })
	err := NewForClient(c, Options{NodeTimeout: 500 * time.Millisecond}).RunNodeSteps(ctx, "w-0", nil, target, steps, func(model.Step) {})
	if !errors.Is(err, providers.ErrNotTakenUp) || !errors.Is(err, providers.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "has not taken up the update") {
		t.Errorf("error %v, want it not taken up and the outcome unknown", err)
	}
	mu.Lock()
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "waiting for its agent to take up update ") || !strings.Contains(notes[0], "node_timeout 500ms") {
		t.Errorf("notes %q, want one saying what apply waits for", notes)
	}
	notes = nil
	mu.Unlock()

	c, watching := watchedClient(t)
	var once sync.Once
	late := make(chan struct{})
	c.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		once.Do(func() { time.AfterFunc(200*time.Millisecond, func() { close(late) }) })
		return false, nil, nil
	})
	go func() {
		<-late
		<-agent(t, c, watching, protocol.Report{State: model.StateDone, Progress: 2, Current: target.Name})
	}()
	if err := NewForClient(c, Options{NodeTimeout: 30 * time.Second}).RunNodeSteps(ctx, "w-0", nil, target, steps, func(model.Step) {}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notes) != 2 || !strings.HasPrefix(notes[1], "its agent took up update ") {
		t.Errorf("notes %q, want the wait and then the agent taking the update up", notes)
	}
}

// A node whose agent speaks a later protocol than this engine is refused before anything is
// written to it, naming the version and the annotation; one that says nothing is version 1.
func TestRunNodeStepsRefusesALaterAgentProtocol(t *testing.T) {
	later := strconv.Itoa(protocol.Version + 1)
	c := fake.NewClientset(kNode("w-0", "a", true, map[string]string{protocol.AgentProtocol: later}))
	err := NewForClient(c, Options{}).RunNodeSteps(context.Background(), "w-0", nil, target, steps, nil)
	if err == nil || !strings.Contains(err.Error(), "protocol version "+later) || !strings.Contains(err.Error(), protocol.AgentProtocol) {
		t.Errorf("error %v, want the agent's protocol version refused", err)
	}
	for _, a := range c.Actions() {
		if a.GetVerb() == "patch" {
			t.Errorf("a node refused was written: %v", a)
		}
	}
}

// A version-2 agent writes nothing for protocol.WorkingAfter: silence before then, or a
// wait ended by a lost API server (which the agent's Working could not reach either), is
// not an agent that never took its update up. A version-1 agent said Working at once.
func TestSilentYet(t *testing.T) {
	for _, c := range []struct {
		version int
		waited  time.Duration
		lost    bool
		want    bool
	}{
		{1, time.Second, false, false},
		{1, time.Second, true, false},
		{2, time.Second, false, true},
		{2, time.Minute, true, true},
		{2, time.Minute, false, false},
		// The boundary follows protocol.WorkingAfter (10 s): silence just under it and its
		// grace is still an agent at work, silence past it is not.
		{2, protocol.WorkingAfter + untakenUpGrace - time.Millisecond, false, true},
		{2, protocol.WorkingAfter + untakenUpGrace, false, false},
	} {
		if got := silentYet(c.version, c.waited, c.lost); got != c.want {
			t.Errorf("silentYet(%d, %v, %v) = %v, want %v", c.version, c.waited, c.lost, got, c.want)
		}
	}
}
