package acceptance

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/mcpfleet/mcp/agent/kagent"
	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
)

// benchAgents plays every node's agent in this process. Each agent watches only its own
// Node — a list and watch with the field selector metadata.name=NODE, as mcp-agent's
// informer does (kagent.Agent.Run) — so the API server carries one watch per node, as it
// would with a real agent on every node. On a hand-over it has not answered, it runs the
// update's steps spread over step and reports through kagent.NodeState (the agent's own
// reporting code, protocol version 2): Done alone, with Working and each step's progress
// before it when step is longer than protocol.WorkingAfter. A hand-over with a reboot step
// takes its reboot as mcp-agent does up to the machine going down — the steps before it,
// then NodeState.Rebooting, the Working report the reboot waits for — and then, as far as
// a kwok node allows, goes down: its watch of its Node ends, and step later the agent
// "after boot" (a new NodeState, from the update id and progress the real agent records
// before the reboot) runs the steps left, reports Done and lists and watches its Node again.
// The Node stays Ready meanwhile and its boot id does not change (kwok plays its kubelet).
type benchAgents struct {
	client    kubernetes.Interface
	step      atomic.Int64 // time.Duration per update
	handovers atomic.Int64 // updates answered
	reboots   atomic.Int64 // reboots taken

	ctx context.Context

	mu    sync.Mutex
	busy  map[string]string    // node → update id being answered
	spans map[string]agentSpan // node → its last update, as its agent saw it
	stop  map[string]func()    // node → the end of its agent's watch
}

// agentSpan is when an agent saw its hand-over, and when its Done was written.
type agentSpan struct{ seen, done time.Time }

// takeSpans returns the agents' spans since the last call.
func (a *benchAgents) takeSpans() map[string]agentSpan {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.spans
	a.spans = map[string]agentSpan{}
	return s
}

// run starts one agent per node and waits until each has its first list.
func (a *benchAgents) run(ctx context.Context, b *testing.B, nodes []string) {
	a.busy, a.spans, a.stop, a.ctx = map[string]string{}, map[string]agentSpan{}, map[string]func(){}, ctx
	synced := make([]cache.InformerSynced, 0, len(nodes))
	for _, node := range nodes {
		synced = append(synced, a.watch(b, node))
	}
	for _, s := range synced {
		if !cache.WaitForCacheSync(ctx.Done(), s) {
			b.Fatal("the agents' watches of their nodes did not sync")
		}
	}
}

// watch starts the agent of node: its own list and watch of its Node, until a.ctx ends or
// the agent goes down for a reboot.
func (a *benchAgents) watch(b *testing.B, node string) cache.InformerSynced {
	ctx, cancel := context.WithCancel(a.ctx)
	a.mu.Lock()
	a.stop[node] = cancel
	a.mu.Unlock()
	handle := func(obj any) {
		n, ok := obj.(*corev1.Node)
		if !ok {
			return
		}
		h, ok, err := protocol.ReadHandover(n.Annotations)
		if !ok || err != nil || protocol.ReadReport(n.Annotations).ObservedUpdateID == h.UpdateID {
			return
		}
		a.mu.Lock()
		if a.busy[n.Name] == h.UpdateID {
			a.mu.Unlock()
			return
		}
		a.busy[n.Name] = h.UpdateID
		a.spans[n.Name] = agentSpan{seen: time.Now()}
		a.mu.Unlock()
		go a.answer(a.ctx, b, n.Name, h)
	}
	sel := fields.OneTermEqualSelector("metadata.name", node).String()
	nodes := a.client.CoreV1().Nodes()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return nodes.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return nodes.Watch(ctx, o)
		},
	}
	_, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{ListerWatcher: lw, ObjectType: &corev1.Node{},
		Handler: cache.ResourceEventHandlerFuncs{AddFunc: handle, UpdateFunc: func(_, o any) { handle(o) }}})
	go ctrl.RunWithContext(ctx)
	return ctrl.HasSynced
}

func (a *benchAgents) answer(ctx context.Context, b *testing.B, node string, h protocol.Handover) {
	s := &kagent.NodeState{Nodes: a.client.CoreV1().Nodes(), Node: node,
		ReportError: func(err error) { b.Errorf("agent of %s: %v", node, err) }}
	s.Begin(h.UpdateID, 0)
	if err := s.Working(h.Desired); err != nil {
		b.Errorf("agent of %s: %v", node, err)
		return
	}
	if boot := slices.IndexFunc(h.Steps, func(st model.Step) bool { return st.Kind == model.StepReboot }); boot >= 0 {
		a.reboot(ctx, b, s, h, boot)
		return
	}
	per := time.Duration(a.step.Load()) / time.Duration(max(len(h.Steps), 1))
	for _, st := range h.Steps {
		select {
		case <-ctx.Done():
			return
		case <-time.After(per):
		}
		s.StepDone(st)
	}
	if len(h.Steps) == 0 {
		time.Sleep(per)
	}
	a.done(b, s, node, h)
}

// done reports Done and notes it.
func (a *benchAgents) done(b *testing.B, s *kagent.NodeState, node string, h protocol.Handover) {
	if err := s.Done(h.Desired); err != nil {
		b.Errorf("agent of %s: %v", node, err)
		return
	}
	a.mu.Lock()
	sp := a.spans[node]
	sp.done = time.Now()
	a.spans[node] = sp
	a.mu.Unlock()
	a.handovers.Add(1)
}

// reboot runs the hand-over's steps up to its reboot (steps[boot]) at once, reports
// Rebooting as the agent does before asking for the reboot, ends the agent's watch (the
// machine goes down), and a.step later runs the rest as the agent starting after boot does
// (kagent.Agent.Resume): a new NodeState from the recorded update id and progress, the
// steps left, Done; then its watch of its Node again.
func (a *benchAgents) reboot(ctx context.Context, b *testing.B, s *kagent.NodeState, h protocol.Handover, boot int) {
	for _, st := range h.Steps[:boot] {
		s.StepDone(st)
	}
	if err := s.Rebooting(); err != nil {
		b.Errorf("agent of %s: %v", s.Node, err)
		return
	}
	a.mu.Lock()
	a.stop[s.Node]()
	a.mu.Unlock()
	select {
	case <-ctx.Done():
		return
	case <-time.After(time.Duration(a.step.Load())):
	}
	a.reboots.Add(1)
	after := &kagent.NodeState{Nodes: a.client.CoreV1().Nodes(), Node: s.Node,
		ReportError: func(err error) { b.Errorf("agent of %s after boot: %v", s.Node, err) }}
	after.Begin(h.UpdateID, boot+1)
	for _, st := range h.Steps[boot+1:] {
		after.StepDone(st)
	}
	a.done(b, after, s.Node, h)
	a.watch(b, s.Node)
}
