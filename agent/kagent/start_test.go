package kagent

import (
	"context"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mcpfleet/mcp/kubeapi/nodeclient"
	"github.com/mcpfleet/mcp/kubeapi/protocol"
)

// unreachableNodes fails its first `down` requests as a machine whose link is not up yet
// does (the connection cannot be made: no answer from the API server), then answers with
// status (when set) or passes them on; it records when each request came.
type unreachableNodes struct {
	nodeclient.Nodes
	down   int
	status error
	mu     sync.Mutex
	calls  []time.Time
}

func (n *unreachableNodes) fail() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, time.Now())
	if len(n.calls) <= n.down {
		return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ENETUNREACH)}
	}
	return n.status
}

func (n *unreachableNodes) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*corev1.Node, error) {
	if err := n.fail(); err != nil {
		return nil, err
	}
	return n.Nodes.Patch(ctx, name, pt, data, opts, sub...)
}

func (n *unreachableNodes) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Node, error) {
	if err := n.fail(); err != nil {
		return nil, err
	}
	return n.Nodes.Get(ctx, name, opts)
}

// An agent started with its machine reports Done as soon as the API server can be
// reached: while the server has never answered, a patch is tried again every StartRetry,
// not after a doubling backoff (8 failures: 8 × 20 ms, against 200 ms … 5 s, ~20 s).
func TestDoneAtStartIsTriedAgainFast(t *testing.T) {
	client, _ := cluster(t, nil)
	nodes := &unreachableNodes{Nodes: client.CoreV1().Nodes(), down: 8}
	s := &NodeState{Nodes: nodes, Node: nodeName, StartRetry: 20 * time.Millisecond}
	began := time.Now()
	if err := s.Done("rendered-a"); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 10*time.Second { // a doubling backoff takes ~21 s; 10 s leaves a loaded machine room
		t.Errorf("Done took %v after 8 unreachable tries at 20 ms: the start's retries backed off", took)
	}
	n, err := client.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Annotations[protocol.State]; got != "Done" || n.Annotations[protocol.CurrentConfig] != "rendered-a" {
		t.Errorf("node reports state %q on %q, want Done on rendered-a", got, n.Annotations[protocol.CurrentConfig])
	}
}

// A server that answers, even with an error, is not asked fast: its status ends the
// start's fast tries and the backoff doubles (a busy API server at a cluster's restart is
// not hammered by every node's agent). Over 1.5 s a fast retry would make ~75 tries.
func TestAnsweringServerIsNotAskedFast(t *testing.T) {
	client, _ := cluster(t, nil)
	busy := apierrors.NewServiceUnavailable("starting")
	nodes := &unreachableNodes{Nodes: client.CoreV1().Nodes(), status: busy}
	s := &NodeState{Nodes: nodes, Node: nodeName, StartRetry: 20 * time.Millisecond, StartTimeout: 1500 * time.Millisecond}
	if err := s.Done("rendered-a"); !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("Done against a busy server: %v, want its 503 after the timeout", err)
	}
	nodes.mu.Lock()
	defer nodes.mu.Unlock()
	if len(nodes.calls) > 6 {
		t.Errorf("%d tries in 1.5 s against a server that answers 503: want a doubling backoff (about 4)", len(nodes.calls))
	}
}

// GetNode at start waits for the API server to become reachable, and gives a node it
// cannot find (an answer) at once.
func TestGetNodeAtStartWaitsForTheServer(t *testing.T) {
	client, _ := cluster(t, nil)
	nodes := &unreachableNodes{Nodes: client.CoreV1().Nodes(), down: 5}
	s := &NodeState{Nodes: nodes, Node: nodeName, StartRetry: 10 * time.Millisecond}
	n, err := s.GetNode(context.Background())
	if err != nil || n.Name != nodeName {
		t.Fatalf("GetNode: %v, %v", n, err)
	}
	if len(nodes.calls) != 6 {
		t.Errorf("%d tries, want 6 (5 unreachable, then the answer)", len(nodes.calls))
	}
	gone := &NodeState{Nodes: &unreachableNodes{Nodes: client.CoreV1().Nodes(), down: 2,
		status: apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, "w-9")}, Node: "w-9", StartRetry: 10 * time.Millisecond}
	if _, err := gone.GetNode(context.Background()); !apierrors.IsNotFound(err) {
		t.Errorf("GetNode of a missing node: %v, want its 404", err)
	}
	unreachable := &NodeState{Nodes: &unreachableNodes{Nodes: client.CoreV1().Nodes(), down: 1 << 30}, Node: nodeName,
		StartRetry: 10 * time.Millisecond, StartTimeout: 100 * time.Millisecond}
	if _, err := unreachable.GetNode(context.Background()); err == nil {
		t.Error("GetNode with the server never reachable: no error")
	}
}
