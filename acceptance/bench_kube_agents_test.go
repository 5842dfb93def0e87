package acceptance

import (
	"context"
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
)

// benchAgents plays every node's agent in this process. Each agent watches only its own
// Node — a list and watch with the field selector metadata.name=NODE, as mcp-agent's
// informer does (kagent.Agent.Run) — so the API server carries one watch per node, as it
// would with a real agent on every node. On a hand-over it has not answered, it runs the
// update's steps spread over step and reports through kagent.NodeState (the agent's own
// reporting code, protocol version 2): Done alone, with Working and each step's progress
// before it when step is longer than protocol.WorkingAfter.
type benchAgents struct {
	client    kubernetes.Interface
	step      atomic.Int64 // time.Duration per update
	handovers atomic.Int64 // updates answered

	mu    sync.Mutex
	busy  map[string]string    // node → update id being answered
	spans map[string]agentSpan // node → its last update, as its agent saw it
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
	a.busy, a.spans = map[string]string{}, map[string]agentSpan{}
	synced := make([]cache.InformerSynced, 0, len(nodes))
	for _, node := range nodes {
		synced = append(synced, a.watch(ctx, b, node))
	}
	for _, s := range synced {
		if !cache.WaitForCacheSync(ctx.Done(), s) {
			b.Fatal("the agents' watches of their nodes did not sync")
		}
	}
}

// watch starts the agent of node: its own list and watch of its Node.
func (a *benchAgents) watch(ctx context.Context, b *testing.B, node string) cache.InformerSynced {
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
		go a.answer(ctx, b, n.Name, h)
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
