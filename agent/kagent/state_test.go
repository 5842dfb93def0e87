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
	"k8s.io/client-go/kubernetes/fake"

	"github.com/mcpfleet/mcp/kubeapi/nodeclient"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
)

// Progress reports (once Working is reported) go out off the steps' path, but in order:
// with every patch slow, no progress report lands after the Working, Done or Degraded that
// follows it, none of one update is sent under the next update's id, and Flush returns only
// once the report has landed.
func TestProgressReportsStayInOrder(t *testing.T) {
	client, p := cluster(t, nil)
	// Slow patches, the first progress report slowest, delayed before the fake clientset
	// (which takes its patches one at a time): a report sent off the path is still in
	// flight when the next is made, and would land after it if nothing kept the order.
	hold := make(chan struct{})
	nodes := slowNodes{Nodes: client.CoreV1().Nodes(), hold: hold}
	s := &NodeState{Nodes: nodes, Node: nodeName, WorkingAfter: time.Millisecond,
		ReportError: func(err error) { t.Errorf("progress report: %v", err) }}

	s.Begin("u1", 0)
	if err := s.Working("rendered-a"); err != nil {
		t.Fatal(err)
	}
	waitWorking(t, s)
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
	waitWorking(t, s)
	s.StepDone(model.Step{Kind: model.StepWrite})
	time.Sleep(10 * time.Millisecond) // u2's progress 1 is in flight, and slow
	s.Begin("u3", 0)
	if err := s.Working("rendered-c"); err != nil {
		t.Fatal(err)
	}
	waitWorking(t, s)
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
	waitWorking(t, s)
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

// waitWorking waits until s has reported Working on its update.
func waitWorking(t *testing.T, s *NodeState) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		w := s.working
		s.mu.Unlock()
		if w {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("Working was not reported within a minute")
		}
	}
}

// reportsOf is the patches that report on update id.
func reportsOf(p *patches, id string) []map[string]string {
	var out []map[string]string
	for _, pa := range p.get() {
		if pa[protocol.ObservedUpdateID] == id {
			out = append(out, pa)
		}
	}
	return out
}

// An update that ends before WorkingAfter is reported once: its Done, with its progress.
// One that fails likewise: its Degraded.
func TestShortUpdateReportsItsEndAlone(t *testing.T) {
	client, p := cluster(t, nil)
	s := &NodeState{Nodes: client.CoreV1().Nodes(), Node: nodeName, WorkingAfter: time.Hour}
	s.Begin("u1", 0)
	if err := s.Working("rendered-a"); err != nil {
		t.Fatal(err)
	}
	s.StepDone(model.Step{Kind: model.StepWrite})
	s.StepDone(model.Step{Kind: model.StepRestart, Target: "chronyd.service"})
	if err := s.Done("rendered-a"); err != nil {
		t.Fatal(err)
	}
	s.Begin("u2", 0)
	if err := s.Working("rendered-b"); err != nil {
		t.Fatal(err)
	}
	s.StepDone(model.Step{Kind: model.StepWrite})
	if err := s.Degraded("boom"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // anything sent off the path would land now
	if got := p.get(); len(got) != 2 {
		t.Fatalf("patches %v: want the Done of u1 and the Degraded of u2 alone", got)
	}
	want := map[string]string{protocol.State: model.StateDone, protocol.Progress: "2", protocol.CurrentConfig: "rendered-a",
		protocol.AgentProtocol: strconv.Itoa(protocol.Version)}
	for k, v := range want {
		if got := reportsOf(p, "u1")[0][k]; got != v {
			t.Errorf("u1's report: %s = %q, want %q", k, got, v)
		}
	}
	if d := reportsOf(p, "u2"); len(d) != 1 || d[0][protocol.State] != model.StateDegraded || d[0][protocol.Reason] != "boom" || d[0][protocol.Progress] != "1" {
		t.Errorf("u2's reports %v, want Degraded (boom) with progress 1", d)
	}
}

// An update still running WorkingAfter after it began reports Working with its progress
// then, and each later step's progress, then Done; the Working timer of an update that has
// ended sends nothing.
func TestLongUpdateReportsWorkingAfterAWhile(t *testing.T) {
	client, p := cluster(t, nil)
	s := &NodeState{Nodes: client.CoreV1().Nodes(), Node: nodeName, WorkingAfter: 20 * time.Millisecond}
	s.Begin("u1", 0)
	if err := s.Working("rendered-a"); err != nil {
		t.Fatal(err)
	}
	s.StepDone(model.Step{Kind: model.StepWrite})
	waitWorking(t, s)
	s.StepDone(model.Step{Kind: model.StepRestart, Target: "chronyd.service"})
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Done("rendered-a"); err != nil {
		t.Fatal(err)
	}
	r := reportsOf(p, "u1")
	if len(r) != 3 {
		t.Fatalf("reports %v: want Working, progress, Done", r)
	}
	if r[0][protocol.State] != model.StateWorking || r[0][protocol.Progress] != "1" || r[0][protocol.AgentProtocol] != strconv.Itoa(protocol.Version) {
		t.Errorf("first report %v, want Working with progress 1", r[0])
	}
	if r[1][protocol.State] != "" || r[1][protocol.Progress] != "2" {
		t.Errorf("second report %v, want progress 2", r[1])
	}
	if r[2][protocol.State] != model.StateDone {
		t.Errorf("last report %v, want Done", r[2])
	}
	// Ended before its timer fires: nothing more. The timer is as good as never due (a
	// short one may fire first on a loaded machine), and is then fired by hand, late, as
	// a timer that lost the race with Done would.
	s.WorkingAfter = time.Hour
	s.Begin("u2", 0)
	if err := s.Working("rendered-b"); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	gen := s.gen
	s.mu.Unlock()
	if err := s.Done("rendered-b"); err != nil {
		t.Fatal(err)
	}
	if s.timer != nil {
		t.Error("the Working timer still runs after Done")
	}
	if err := s.reportWorking(gen); err != nil {
		t.Fatal(err)
	}
	if r := reportsOf(p, "u2"); len(r) != 1 || r[0][protocol.State] != model.StateDone {
		t.Errorf("u2's reports %v, want its Done alone", r)
	}
}

// Rebooting reports Working with the progress before it returns, however soon in the
// update, and an error when the report cannot be made.
func TestRebootingIsReportedBeforeItReturns(t *testing.T) {
	client, p := cluster(t, nil)
	s := &NodeState{Nodes: client.CoreV1().Nodes(), Node: nodeName, WorkingAfter: time.Hour}
	s.Begin("u1", 0)
	if err := s.Working("rendered-a"); err != nil {
		t.Fatal(err)
	}
	s.StepDone(model.Step{Kind: model.StepWrite})
	if err := s.Rebooting(); err != nil {
		t.Fatal(err)
	}
	if r := reportsOf(p, "u1"); len(r) != 1 || r[0][protocol.State] != model.StateWorking || r[0][protocol.Progress] != "1" {
		t.Errorf("reports %v, want Working with progress 1", r)
	}
	// A refusal is not retried (a 404 here): the error comes back at once.
	gone := &NodeState{Nodes: fake.NewClientset().CoreV1().Nodes(), Node: nodeName}
	gone.Begin("u1", 0)
	if err := gone.Rebooting(); err == nil {
		t.Error("Rebooting on a node the API server does not have: no error")
	}
}
