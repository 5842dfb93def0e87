package kagent

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mcpfleet/mcp/providers/kubernetes/nodeclient"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers/kubernetes/protocol"
)

// Progress reports go out off the steps' path, but in order: with every patch slow, no
// progress report lands after the Working, Done or Degraded that follows it, none of one update is
// sent under the next update's id, and Flush returns only once the report has landed.
func TestProgressReportsStayInOrder(t *testing.T) {
	client, p := cluster(t, nil)
	// Slow patches, the first progress report slowest, delayed before the fake clientset
	// (which takes its patches one at a time): a report sent off the path is still in
	// flight when the next is made, and would land after it if nothing kept the order.
	hold := make(chan struct{})
	nodes := slowNodes{Nodes: client.CoreV1().Nodes(), hold: hold}
	s := &NodeState{Nodes: nodes, Node: nodeName,
		ReportError: func(err error) { t.Errorf("progress report: %v", err) }}

	s.Begin("u1", 0)
	if err := s.Working("rendered-a"); err != nil {
		t.Fatal(err)
	}
	s.StepDone(model.Step{Kind: model.StepWrite})
	time.Sleep(10 * time.Millisecond) // its report is in flight, held at the API server
	returned := make(chan struct{})
	go func() {
		s.StepDone(model.Step{Kind: model.StepWrite})
		s.StepDone(model.Step{Kind: model.StepWrite})
		close(returned)
	}()
	// The API server answers nothing until hold is closed: StepDones that waited for it
	// would never return.
	select {
	case <-returned:
	case <-time.After(time.Minute):
		t.Fatal("StepDone waited for the API server")
	}
	close(hold)
	if err := s.Done("rendered-a"); err != nil {
		t.Fatal(err)
	}
	// The next update: a step reported, then the update after it begins at once.
	s.Begin("u2", 0)
	if err := s.Working("rendered-b"); err != nil {
		t.Fatal(err)
	}
	s.StepDone(model.Step{Kind: model.StepWrite})
	time.Sleep(10 * time.Millisecond) // u2's progress 1 is in flight, and slow
	s.Begin("u3", 0)
	if err := s.Working("rendered-c"); err != nil {
		t.Fatal(err)
	}
	s.StepDone(model.Step{Kind: model.StepWrite})
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	got := getNode(t, client).Annotations
	if got[protocol.ObservedUpdateID] != "u3" || got[protocol.Progress] != "1" || got[protocol.State] != model.StateWorking {
		t.Errorf("after Flush the node says %v, want u3 Working with progress 1", got)
	}
	// A failed update: its last progress report in flight when Degraded is reported.
	s.Begin("u4", 0)
	if err := s.Working("rendered-d"); err != nil {
		t.Fatal(err)
	}
	s.StepDone(model.Step{Kind: model.StepWrite})
	time.Sleep(10 * time.Millisecond)
	if err := s.Degraded("boom"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // anything still in flight would land now

	// Judge the patches in the order they reached the API server.
	id, progress, state := "", 0, ""
	for i, pa := range p.get() {
		if pa[protocol.ObservedUpdateID] == "" {
			continue
		}
		n, _ := strconv.Atoi(pa[protocol.Progress])
		switch {
		case pa[protocol.ObservedUpdateID] != id:
			if pa[protocol.State] != model.StateWorking || n != 0 {
				t.Errorf("patch %d: %v: an update's first report is not Working with progress 0", i, pa)
			}
			id, state = pa[protocol.ObservedUpdateID], model.StateWorking
		case state == model.StateDone || state == model.StateDegraded:
			t.Errorf("patch %d: %v: a report of %s after its %s", i, pa, id, state)
		case n < progress:
			t.Errorf("patch %d: %v: progress went back from %d", i, pa, progress)
		}
		progress = n
		if st := pa[protocol.State]; st != "" {
			state = st
		}
		if id == "u1" && state == model.StateDone && n != 3 {
			t.Errorf("patch %d: %v: Done on u1 without its 3 steps counted", i, pa)
		}
	}
	if id != "u4" || state != model.StateDegraded {
		t.Errorf("the last report is %s on %q, want Degraded on u4", state, id)
	}
}

// slowNodes delays each patch, the progress reports of progress 1 most; those wait for
// hold (when set) to be closed first.
type slowNodes struct {
	nodeclient.Nodes
	hold <-chan struct{}
}

func (n slowNodes) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*corev1.Node, error) {
	delay := 5 * time.Millisecond
	if strings.Contains(string(data), `"`+protocol.Progress+`":"1"`) && !strings.Contains(string(data), `"`+protocol.State+`"`) {
		delay = 60 * time.Millisecond
		if n.hold != nil {
			<-n.hold
		}
	}
	time.Sleep(delay)
	return n.Nodes.Patch(ctx, name, pt, data, opts, sub...)
}
