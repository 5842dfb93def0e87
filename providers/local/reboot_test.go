package local

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers/providertest"
)

// newFleet makes a fleet of n workers (with the demo workloads) and its provider.
func newFleet(t *testing.T, n int, o Options) (*Provider, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fleet")
	if err := Init(dir, InitSpec{Pools: []PoolSize{{"worker", n}}, Workloads: true}); err != nil {
		t.Fatal(err)
	}
	o.Dir = dir
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return p, dir
}

func observe1(t *testing.T, p *Provider, name string) model.Node {
	t.Helper()
	ns, err := p.ObserveNodes(context.Background(), []string{name})
	if err != nil {
		t.Fatal(err)
	}
	return ns[0]
}

func kinds(evs []Event) string {
	var ks []string
	for _, e := range evs {
		ks = append(ks, string(e.Kind))
	}
	return strings.Join(ks, " ")
}

func events(t *testing.T, dir, node string) []Event {
	t.Helper()
	all, err := ReadEvents(dir)
	if err != nil {
		t.Fatal(err)
	}
	return all[node]
}

// A reboot whose waiter is gone (the apply was killed: here its context ends at once)
// still ends on time, seen by the next readers, and its ready is logged once, at the time
// the machine came back.
func TestRebootCompletesWithoutTheProcessThatAskedForIt(t *testing.T) {
	p, dir := newFleet(t, 1, Options{RebootDuration: 300 * time.Millisecond})
	old := observe1(t, p, "worker-0").BootID
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (&host{p: p, node: "worker-0"}).Reboot(ctx); err == nil {
		t.Fatal("Reboot with an ended context waited for the reboot")
	}
	r, _ := readRecord(dir, "worker-0")
	back, next := r.RebootingUntil, r.NextBootID
	// (Checked only if the test was quick enough to look during the reboot.)
	if n := observe1(t, p, "worker-0"); time.Now().Before(back) && (n.Ready || n.BootID != old) {
		t.Fatalf("during the reboot: ready=%v boot id %s (was %s)", n.Ready, n.BootID, old)
	}
	time.Sleep(time.Until(back))
	var wg sync.WaitGroup
	for range 8 { // readers race to record the completion; one does
		wg.Go(func() {
			if _, err := p.Refresh(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := observe1(t, p, "worker-0"); !n.Ready || n.BootID != next {
		t.Errorf("after the reboot: ready=%v boot id %s, want the announced %s", n.Ready, n.BootID, next)
	}
	if r, _ := readRecord(dir, "worker-0"); r.rebooting() || !r.Ready {
		t.Errorf("the completion is not recorded in node.json: %+v", r)
	}
	evs := events(t, dir, "worker-0")
	if kinds(evs) != "reboot not-ready ready" {
		t.Fatalf("events %s, want reboot not-ready ready", kinds(evs))
	}
	if e := evs[0]; e.BootID != old || e.NextBootID != next || !e.Until.Equal(back) {
		t.Errorf("reboot event %+v", e)
	}
	if !evs[2].Time.Equal(back) {
		t.Errorf("ready at %s, want the time the machine came back, %s", evs[2].Time, back)
	}
}

// The same with a real SIGKILL: a child process (this test binary) runs the node's steps
// and is killed while the node reboots.
func TestRebootSurvivesSIGKILL(t *testing.T) {
	if dir := os.Getenv("MCP_LOCAL_TEST_CHILD"); dir != "" {
		p, _ := New(Options{Dir: dir, RebootDuration: time.Second})
		target := &model.Rendered{Name: "rendered-worker-1"}
		p.RunNodeSteps(context.Background(), "worker-0", nil, target, []model.Step{{Kind: model.StepReboot}}, func(model.Step) {})
		os.Exit(3) // not reached: killed during the reboot
	}
	p, dir := newFleet(t, 1, Options{})
	cmd := exec.Command(os.Args[0], "-test.run=^TestRebootSurvivesSIGKILL$")
	cmd.Env = append(os.Environ(), "MCP_LOCAL_TEST_CHILD="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if r, err := readRecord(dir, "worker-0"); err == nil && r.rebooting() {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the child did not reboot the node")
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	r, _ := readRecord(dir, "worker-0")
	if n := observe1(t, p, "worker-0"); time.Now().Before(r.RebootingUntil) && n.Ready {
		t.Fatal("the node is Ready while rebooting")
	}
	time.Sleep(time.Until(r.RebootingUntil))
	if n := observe1(t, p, "worker-0"); !n.Ready || n.BootID != r.NextBootID {
		t.Errorf("after the killed apply's reboot: ready=%v boot id %s, want %s", n.Ready, n.BootID, r.NextBootID)
	}
	if k := kinds(events(t, dir, "worker-0")); k != "working reboot not-ready ready" {
		t.Errorf("events %s", k)
	}
}

// RunNodeSteps starts the agent only once a rebooting node is back.
func TestRunNodeStepsWaitsForTheReboot(t *testing.T) {
	p, dir := newFleet(t, 1, Options{RebootDuration: 300 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	(&host{p: p, node: "worker-0"}).Reboot(ctx)
	r, _ := readRecord(dir, "worker-0")
	target := &model.Rendered{Name: "rendered-worker-1", Files: []model.File{{Entry: model.Entry{Path: "/etc/a"}, Mode: 0o644, Contents: []byte("a")}}}
	err := p.RunNodeSteps(context.Background(), "worker-0", nil, target, []model.Step{{Kind: model.StepWrite, Target: "/etc/a"}}, func(model.Step) {})
	if err != nil {
		t.Fatal(err)
	}
	if time.Now().Before(r.RebootingUntil) {
		t.Error("the agent ran before the node was back")
	}
	if k := kinds(events(t, dir, "worker-0")); k != "reboot not-ready ready working done" {
		t.Errorf("events %s", k)
	}
}

func TestNodeTimeout(t *testing.T) {
	p, _ := newFleet(t, 1, Options{RebootDuration: 5 * time.Second, NodeTimeout: 200 * time.Millisecond})
	target := &model.Rendered{Name: "rendered-worker-1", Files: []model.File{{Entry: model.Entry{Path: "/etc/a"}, Mode: 0o644, Contents: []byte("a")}}}
	err := p.RunNodeSteps(context.Background(), "worker-0", nil, target, []model.Step{{Kind: model.StepReboot}}, func(model.Step) {})
	if want := "node worker-0: reboot: the node did not come back within 200ms"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("reboot past node_timeout: %v, want %q", err, want)
	}
	// The node is still down: the next agent cannot start either.
	err = p.RunNodeSteps(context.Background(), "worker-0", nil, target, []model.Step{{Kind: model.StepWrite, Target: "/etc/a"}}, func(model.Step) {})
	if want := "node worker-0: write /etc/a: the agent cannot start: the node did not come back within 200ms"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("start on a rebooting node: %v, want %q", err, want)
	}
}

func TestObserveNodes(t *testing.T) {
	p, _ := newFleet(t, 3, Options{})
	Set(p.o.Dir, "worker-2", []string{"ready=false"})
	ns, err := p.ObserveNodes(context.Background(), []string{"worker-2", "worker-0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ns) != 2 || ns[0].Name != "worker-2" || ns[0].Ready || ns[1].Name != "worker-0" || !ns[1].Ready {
		t.Errorf("observed %+v", ns)
	}
	if _, err := p.ObserveNodes(context.Background(), []string{"worker-0", "nope"}); err == nil || !strings.Contains(err.Error(), `no node "nope"`) {
		t.Errorf("unknown node: %v", err)
	}
}

// The provider's spec: its node_timeout setting, by default DefaultNodeTimeout, and a
// fleet that is none refused at the fleet setting.
func TestSpecNodeTimeout(t *testing.T) {
	if err := Spec.Check(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "fleet")
	Init(dir, InitSpec{Pools: []PoolSize{{"worker", 1}}})
	build := func(given map[string]any) (*Provider, error) { return providertest.FromSpec[*Provider](Spec, given) }
	p, err := build(map[string]any{"fleet": dir})
	if err != nil || p.o.NodeTimeout != DefaultNodeTimeout || p.o.Dir != dir {
		t.Errorf("default node_timeout: %v %v", p, err)
	}
	if p, err := build(map[string]any{"fleet": dir, "node_timeout": "30s"}); err != nil || p.o.NodeTimeout != 30*time.Second {
		t.Errorf("node_timeout 30s: %v", err)
	}
	for _, bad := range []string{"0s", "-1m", "soon"} {
		if _, err := build(map[string]any{"fleet": dir, "node_timeout": bad}); err == nil || !strings.Contains(err.Error(), "node_timeout") {
			t.Errorf("node_timeout %q: %v", bad, err)
		}
	}
	if _, err := build(nil); err == nil || !strings.Contains(err.Error(), "needs fleet") {
		t.Errorf("no fleet: %v", err)
	}
	_, err = build(map[string]any{"fleet": t.TempDir()})
	var se *model.SettingError
	if !errors.As(err, &se) || se.Setting != "fleet" || !strings.Contains(err.Error(), "not a local fleet") {
		t.Errorf("a directory that is no fleet: %v, want a SettingError of fleet", err)
	}
}
