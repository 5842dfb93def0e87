package planner

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

// driftFleet is one pool's config (a file restored in place, kernel arguments, an OS image)
// and nodes on it: one clean, one with each kind of drift, as refresh reports them.
func driftFleet() (*model.Rendered, []model.Node) {
	tg := target("worker", file("/etc/a", "x", "restart:a.service"))
	tg.KernelArgs, tg.OSImage = []string{"nosmt"}, "os:2"
	mk := func(name string, kargs []string, image string, drift ...model.Drift) model.Node {
		n := node(name, "worker", "a", 0)
		n.CurrentConfig, n.KernelArgs, n.OSImage = tg.Name, kargs, image
		n.Drift = append(drift, model.HostDrift(&n, tg)...)
		return n
	}
	return tg, []model.Node{
		mk("clean", []string{"quiet", "nosmt"}, "os:2"), // arguments mcp does not manage are not drift
		mk("file", []string{"nosmt"}, "os:2", model.Drift{Path: "/etc/a", Kind: model.DriftContent}),
		mk("kargs", []string{}, "os:2"),
		mk("image", []string{"nosmt"}, "os:1"),
		mk("unreported", nil, ""), // an agent that reports neither: unknown, not drift
	}
}

// TestDriftOfKernelArgsAndOSImageIsRestored: each kind of drift is planned through the one
// step derivation (a file in place with its policy; kernel arguments → kargs and reboot;
// the OS image → pivot and reboot), and none of it is a configuration change.
func TestDriftOfKernelArgsAndOSImageIsRestored(t *testing.T) {
	tg, nodes := driftFleet()
	plan := func(onDrift model.OnDrift) *Rollout {
		p, err := MakePlan(Input{Desired: desired(model.Pool{Name: "worker", OnDrift: onDrift, MaxUnavailable: model.IntOrPercent{Value: 5}}),
			Rendered: map[string]*model.Rendered{"worker": tg}, Known: map[string]*model.Rendered{tg.Name: tg},
			Pointers: map[string]string{"worker": tg.Name}, Fleet: &model.Fleet{Nodes: nodes}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := plan("")
	got := map[string][]string{}
	for _, n := range p.Nodes {
		got[n.Name] = keys(n.Steps)
		if n.Changed() != n.DriftOnly {
			t.Errorf("%s: changed %v, drift only %v", n.Name, n.Changed(), n.DriftOnly)
		}
	}
	want := map[string][]string{
		"clean": nil, "unreported": nil,
		"file":  {"write /etc/a", "restart a.service"},
		"kargs": {"cordon", "drain", "kargs", "reboot", "verify", "uncordon"},
		"image": {"stage", "cordon", "drain", "pivot", "reboot", "verify", "uncordon"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("steps (-want +got):\n%s", d)
	}
	if !p.HasChanges() || p.HasConfigChanges() {
		t.Errorf("drift alone: HasChanges %v (want true), HasConfigChanges %v (want false)", p.HasChanges(), p.HasConfigChanges())
	}
	if n := len(p.Drifted()); n != 3 {
		t.Errorf("%d drifted nodes, want 3", n)
	}

	// on_drift = "report": shown, not planned.
	p = plan(model.OnDriftReport)
	if p.HasChanges() || len(p.Drifted()) != 3 || p.Pools[0].OnDrift != model.OnDriftReport {
		t.Errorf("report: changes %v, %d drifted, pool on_drift %q", p.HasChanges(), len(p.Drifted()), p.Pools[0].OnDrift)
	}
}

// TestDriftReportStatuses: every node is sorted into clean, drifted, unconfigured,
// unmanaged or on a config the state lacks, and pools count what is a finding.
func TestDriftReportStatuses(t *testing.T) {
	tg, nodes := driftFleet()
	fresh := node("fresh", "worker", "a", 0)
	lost := node("lost", "worker", "a", 0)
	lost.CurrentConfig = "rendered-worker-pruned"
	nodes = append(nodes, fresh, lost, node("stray", "gpu", "a", 0))
	r, err := MakeDriftReport(desired(model.Pool{Name: "worker"}), map[string]*model.Rendered{tg.Name: tg}, &model.Fleet{Nodes: nodes})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]DriftStatus{}
	for _, n := range r.Nodes {
		got[n.Name] = n.Status
	}
	want := map[string]DriftStatus{"clean": DriftClean, "unreported": DriftClean, "file": DriftDrifted, "kargs": DriftDrifted,
		"image": DriftDrifted, "fresh": DriftUnconfigured, "lost": DriftUnknownConfig, "stray": DriftUnmanaged}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("statuses (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]DriftPool{{Name: "worker", OnDrift: model.OnDriftRestore, Size: 7, Drifted: 4, Paths: 3}}, r.Pools); d != "" {
		t.Errorf("pools (-want +got):\n%s", d)
	}
	if !r.HasDrift() {
		t.Error("HasDrift false")
	}
}
