package local

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

func set(t *testing.T, dir, node string, a ...string) {
	t.Helper()
	if err := Set(dir, node, a); err != nil {
		t.Fatal(err)
	}
}

var chrony = &model.Rendered{Name: "rendered-worker-1",
	Files: []model.File{{
		Entry:    model.Entry{Path: "/etc/chrony.conf", OnChange: []model.Policy{{Kind: model.PolicyRestart, Unit: "chronyd.service"}}},
		Mode:     0o644,
		Contents: []byte("server ntp\n"),
	}}}

var chronySteps = []model.Step{{Kind: model.StepWrite, Target: "/etc/chrony.conf"}, {Kind: model.StepRestart, Target: "chronyd.service"}}

func TestFaultWrite(t *testing.T) {
	p, dir := newFleet(t, 3, Options{})
	ctx := context.Background()
	set(t, dir, "worker-2", "fault.write=/etc/chrony.conf")
	err := p.RunNodeSteps(ctx, "worker-2", nil, chrony, chronySteps, func(model.Step) {})
	want := "node worker-2: write /etc/chrony.conf: injected fault (fault.write in nodes/worker-2/node.json)"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
	if _, err := os.Stat(rootDir(dir, "worker-2") + "/etc/chrony.conf"); !os.IsNotExist(err) {
		t.Error("the faulty write wrote")
	}
	if n := observe1(t, p, "worker-2"); n.State != model.StateDegraded || !strings.Contains(n.Reason, "injected fault") {
		t.Errorf("node %s %q", n.State, n.Reason)
	}
	set(t, dir, "worker-2", "fault.write=*")
	if err := p.RunNodeSteps(ctx, "worker-2", nil, chrony, chronySteps, func(model.Step) {}); err == nil {
		t.Error("fault.write=* let a write through")
	}
	set(t, dir, "worker-2", "fault.write-")
	if err := p.RunNodeSteps(ctx, "worker-2", nil, chrony, chronySteps, func(model.Step) {}); err != nil {
		t.Errorf("after removing the fault: %v", err)
	}
}

func TestFaultRestart(t *testing.T) {
	p, dir := newFleet(t, 3, Options{})
	ctx := context.Background()
	set(t, dir, "worker-2", "fault.restart=other.service")
	if err := p.RunNodeSteps(ctx, "worker-2", nil, chrony, chronySteps, func(model.Step) {}); err != nil {
		t.Fatalf("a fault on another unit failed the restart: %v", err)
	}
	set(t, dir, "worker-2", "fault.restart=chronyd.service")
	err := p.RunNodeSteps(ctx, "worker-2", chrony, chrony, chronySteps[1:], func(model.Step) {})
	want := "node worker-2: restart chronyd.service: injected fault (fault.restart in nodes/worker-2/node.json)"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
}

func TestFaultRebootHang(t *testing.T) {
	p, dir := newFleet(t, 3, Options{NodeTimeout: 200 * time.Millisecond})
	set(t, dir, "worker-2", "fault.reboot=hang")
	err := p.RunNodeSteps(context.Background(), "worker-2", nil, chrony, []model.Step{{Kind: model.StepReboot}}, func(model.Step) {})
	want := "node worker-2: reboot: the node did not come back within 200ms (its reboot hangs: fault.reboot=hang in nodes/worker-2/node.json"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
	time.Sleep(100 * time.Millisecond)
	if n := observe1(t, p, "worker-2"); n.Ready {
		t.Error("a hung node came back")
	}
	evs := events(t, dir, "worker-2")
	if k := kinds(evs); k != "working reboot not-ready degraded" || !evs[1].Until.IsZero() {
		t.Errorf("events %s, reboot %+v", k, evs[1])
	}
	// A power cycle brings it back, with the boot id the reboot announced.
	set(t, dir, "worker-2", "fault.reboot-", "ready=true")
	if n := observe1(t, p, "worker-2"); !n.Ready || n.BootID != evs[1].NextBootID {
		t.Errorf("after ready=true: ready=%v boot id %s, want %s", n.Ready, n.BootID, evs[1].NextBootID)
	}
}

func TestFaultDrainPDB(t *testing.T) {
	p, dir := newFleet(t, 3, Options{})
	ctx := context.Background()
	set(t, dir, "worker-1", "fault.drain=pdb")
	err := p.Drain(ctx, "worker-1", providers.DrainOptions{Timeout: 300 * time.Millisecond, RetryDelay: 50 * time.Millisecond})
	want := "drain node worker-1: evictions refused as by a PodDisruptionBudget: injected fault (fault.drain in nodes/worker-1/node.json) after "
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
	if pods, _ := readPods(dir, "worker-1"); pods[1].Evicted {
		t.Error("a refused drain evicted a pod")
	}
	set(t, dir, "worker-1", "fault.drain-")
	if err := p.Drain(ctx, "worker-1", providers.DrainOptions{Timeout: time.Second}); err != nil {
		t.Errorf("after removing the fault: %v", err)
	}
}

func TestSetFaultsChecksEveryKeyFirst(t *testing.T) {
	_, dir := newFleet(t, 1, Options{})
	for _, bad := range [][]string{
		{"fault.write=/etc/a", "fault.reboot=soon"},
		{"fault.write=/etc/a", "fault.drain=always"},
		{"fault.write=/etc/a", "fault.colour=red"},
		{"fault.write=/etc/a", "fault.restart="},
		{"fault.write=/etc/a", "fault.restart"},
	} {
		if err := Set(dir, "worker-0", bad); err == nil || !strings.Contains(err.Error(), "node worker-0 not changed") {
			t.Errorf("%v: %v", bad, err)
		}
	}
	if r, _ := readRecord(dir, "worker-0"); r.Faults != (faults{}) {
		t.Errorf("a refused set changed the faults: %+v", r.Faults)
	}
	set(t, dir, "worker-0", "fault.write=*", "fault.restart=a.service", "fault.reboot=hang", "fault.drain=pdb")
	if r, _ := readRecord(dir, "worker-0"); r.Faults != (faults{"*", "a.service", "hang", "pdb"}) {
		t.Errorf("faults %+v", r.Faults)
	}
	set(t, dir, "worker-0", "fault.write-", "fault.restart-", "fault.reboot-", "fault.drain-")
	b, _ := os.ReadFile(nodeFile(dir, "worker-0"))
	if strings.Contains(string(b), "faults") {
		t.Errorf("node.json keeps an empty faults object:\n%s", b)
	}
}

// A kargs step stages the arguments and a pivot the image: node.json's kernel_args and
// os_image, what the machine runs, change at the reboot, and verify after it reads them.
func TestKargsAndPivotTakeEffectAtTheReboot(t *testing.T) {
	p, dir := newFleet(t, 1, Options{})
	ctx := context.Background()
	target := &model.Rendered{Name: "rendered-worker-k", KernelArgs: []string{"nosmt"}, OSImage: "quay.io/fedora/fedora-coreos:42"}
	if err := p.RunNodeSteps(ctx, "worker-0", nil, target, []model.Step{{Kind: model.StepKargs}, {Kind: model.StepPivot}}, func(model.Step) {}); err != nil {
		t.Fatal(err)
	}
	r, _ := readRecord(dir, "worker-0")
	if len(r.KernelArgs) != 0 || r.OSImage != DefaultOSImage || r.StagedKernelArgs == nil || !slices.Equal(*r.StagedKernelArgs, []string{"nosmt"}) {
		t.Errorf("before the reboot: runs %q on %s, staged %v; want the staged ones not yet run", r.KernelArgs, r.OSImage, r.StagedKernelArgs)
	}
	if err := p.RunNodeSteps(ctx, "worker-0", nil, target, []model.Step{{Kind: model.StepReboot}, {Kind: model.StepVerify}}, func(model.Step) {}); err != nil {
		t.Fatal(err)
	}
	r, _ = readRecord(dir, "worker-0")
	if !slices.Equal(r.KernelArgs, []string{"nosmt"}) || r.OSImage != target.OSImage || r.StagedKernelArgs != nil || r.StagedOSImage != "" || r.State != model.StateDone {
		t.Errorf("after the reboot: runs %q on %s (staged %v %q), %s; want the staged ones, Done", r.KernelArgs, r.OSImage, r.StagedKernelArgs, r.StagedOSImage, r.State)
	}
}

// fault.reboot=rollback: the reboot comes back on the image and kernel arguments the node
// ran before, and verify marks the node Degraded, with what it expected and what it found.
func TestFaultRebootRollback(t *testing.T) {
	p, dir := newFleet(t, 2, Options{})
	set(t, dir, "worker-1", "kernel_args=quiet")
	set(t, dir, "worker-1", "fault.reboot=rollback")
	from := &model.Rendered{Name: "rendered-worker-q", KernelArgs: []string{"quiet"}, OSImage: DefaultOSImage}
	target := &model.Rendered{Name: "rendered-worker-k", KernelArgs: []string{"nosmt"}, OSImage: "quay.io/fedora/fedora-coreos:42"}
	steps := []model.Step{{Kind: model.StepKargs}, {Kind: model.StepPivot}, {Kind: model.StepReboot}, {Kind: model.StepVerify}}
	err := p.RunNodeSteps(context.Background(), "worker-1", from, target, steps, func(model.Step) {})
	if err == nil {
		t.Fatal("a reboot into the old deployment verified")
	}
	r, _ := readRecord(dir, "worker-1")
	if !slices.Equal(r.KernelArgs, []string{"quiet"}) || r.OSImage != DefaultOSImage || r.StagedKernelArgs != nil || r.StagedOSImage != "" {
		t.Errorf("after the rolled back reboot: runs %q on %s (staged %v %q); want what it ran before, nothing staged",
			r.KernelArgs, r.OSImage, r.StagedKernelArgs, r.StagedOSImage)
	}
	for _, want := range []string{"after reboot: verify", "kernel_args: kernel-args (expected nosmt (without quiet), found quiet)",
		"os_image: os-image (expected quay.io/fedora/fedora-coreos:42, found " + DefaultOSImage + ")"} {
		if r.State != model.StateDegraded || !strings.Contains(r.Reason, want) {
			t.Errorf("node %s: %q; want Degraded saying %q", r.State, r.Reason, want)
		}
	}
	if k := kinds(events(t, dir, "worker-1")); k != "working pivot reboot not-ready ready degraded" {
		t.Errorf("events: %s", k)
	}
	if r.CurrentConfig == target.Name {
		t.Error("the node reports the config it failed to boot into")
	}
}
