package planner

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/testkit/modeltest"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func node(name, pool, zone string, age int) model.Node {
	return model.Node{Name: name, Zone: zone, Ready: true, Created: t0.Add(time.Duration(age) * time.Minute),
		Labels: map[string]string{"node-role.kubernetes.io/" + pool: ""}}
}

func desired(pools ...model.Pool) *model.Desired {
	for i := range pools {
		if pools[i].NodeSelector == nil {
			pools[i].NodeSelector = map[string]string{"node-role.kubernetes.io/" + pools[i].Name: ""}
		}
	}
	return &model.Desired{Pools: pools}
}

func target(pool string, files ...model.File) *model.Rendered {
	return &model.Rendered{Name: "rendered-" + pool + "-new", Pool: pool, Files: files}
}

func TestMakePlanWavesOrderAndBlockers(t *testing.T) {
	fleet := &model.Fleet{Nodes: []model.Node{
		node("w-a-young", "worker", "a", 9), node("w-b-old", "worker", "b", 1), node("w-a-old", "worker", "a", 2),
		node("w-c", "worker", "c", 3), node("i-0", "infra", "a", 0), node("stray", "none", "a", 0),
	}}
	fleet.Pods = []model.Pod{{Namespace: "demo", Name: "web-1", Node: "w-a-old", Labels: map[string]string{"app": "web"}, Ready: true},
		{Namespace: "demo", Name: "ds-1", Node: "w-a-old", Labels: map[string]string{"app": "web"}, DaemonSet: true}}
	fleet.PDBs = []model.PDB{{Namespace: "demo", Name: "web-pdb", Selector: map[string]string{"app": "web"},
		DesiredHealthy: 2, CurrentHealthy: 2, DisruptionsAllowed: 0}}
	in := Input{
		Desired: desired(model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: 50, Percent: true}},
			model.Pool{Name: "infra", MaxUnavailable: model.IntOrPercent{Value: 1}, Paused: model.PauseAll}),
		Rendered: map[string]*model.Rendered{
			"worker": target("worker", file("/etc/a", "x")), // no policy: reboot, so a drain
			"infra":  target("infra", file("/etc/a", "x", "none")),
		},
		Fleet: fleet,
	}
	p, err := MakePlan(in)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	waves := map[string]int{}
	for _, n := range p.Nodes {
		order = append(order, n.Name)
		waves[n.Name] = n.Wave
	}
	if d := cmp.Diff([]string{"w-a-old", "w-a-young", "w-b-old", "w-c", "i-0"}, order); d != "" {
		t.Errorf("rollout order (zone, then oldest) (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]int{"w-a-old": 1, "w-a-young": 1, "w-b-old": 2, "w-c": 2, "i-0": 0}, waves); d != "" {
		t.Errorf("waves (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"stray"}, p.Unmanaged); d != "" {
		t.Errorf("unmanaged: %s", d)
	}
	blocked := p.Nodes[0].Blockers
	if len(blocked) != 1 || blocked[0].PDB != "demo/web-pdb" || blocked[0].Pod != "demo/web-1" {
		t.Errorf("PDB blocker on w-a-old = %+v, want demo/web-pdb for demo/web-1 only (DaemonSet pods ignored)", blocked)
	}
	infra := p.Pools[1]
	if !p.Nodes[4].Deferred || len(infra.Blockers) != 1 || infra.Blockers[0].Kind != BlockPaused {
		t.Errorf("paused pool: node deferred=%v, blockers %+v", p.Nodes[4].Deferred, infra.Blockers)
	}
}

func TestMakePlanBudgetUsedUp(t *testing.T) {
	n := []model.Node{node("w-0", "worker", "a", 0), node("w-1", "worker", "a", 1), node("w-2", "worker", "a", 2)}
	n[2].Ready = false
	n[2].CurrentConfig = "rendered-worker-new" // not changing, but NotReady
	in := Input{Desired: desired(model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: 1}}),
		Rendered: map[string]*model.Rendered{"worker": target("worker", file("/etc/a", "x", "none"))},
		Fleet:    &model.Fleet{Nodes: n}}
	p, err := MakePlan(in)
	if err != nil {
		t.Fatal(err)
	}
	pp := p.Pools[0]
	if pp.Slots != 0 || len(pp.Blockers) != 1 || pp.Blockers[0].Kind != BlockBudget ||
		!strings.Contains(pp.Blockers[0].Message, "w-2 (NotReady)") {
		t.Fatalf("pool plan %+v, want a budget blocker naming w-2", pp)
	}
	for _, np := range p.Nodes[:2] {
		if !np.Deferred {
			t.Errorf("%s not deferred", np.Name)
		}
	}
}

func TestMakePlanTwoPoolsSelectNode(t *testing.T) {
	n := node("x", "worker", "a", 0)
	n.Labels["node-role.kubernetes.io/infra"] = ""
	_, err := MakePlan(Input{Desired: desired(model.Pool{Name: "worker"}, model.Pool{Name: "infra"}),
		Rendered: map[string]*model.Rendered{"worker": target("worker"), "infra": target("infra")},
		Fleet:    &model.Fleet{Nodes: []model.Node{n}}})
	if err == nil || !strings.Contains(err.Error(), `node x is selected by both pool "infra" and pool "worker"`) &&
		!strings.Contains(err.Error(), `node x is selected by both pool "worker" and pool "infra"`) {
		t.Fatalf("error %v, want both pools named", err)
	}
}

// A resumed node's steps come from what it reports, never from the journal: the journal
// says an update was in flight (the node resumes; an uncordon is owed), not which steps
// may be skipped.
func TestMakePlanResumesFromTheNode(t *testing.T) {
	old := &model.Rendered{Name: "rendered-worker-old", Pool: "worker"}
	tg := target("worker", file("/etc/a", "x"))
	all := []string{"cordon", "drain", "write /etc/a", "reboot", "verify", "uncordon"}
	plan := func(n model.Node, done ...string) NodePlan {
		t.Helper()
		p, err := MakePlan(Input{Desired: desired(model.Pool{Name: "worker"}),
			Rendered: map[string]*model.Rendered{"worker": tg}, Known: map[string]*model.Rendered{old.Name: old},
			Fleet:    &model.Fleet{Nodes: []model.Node{n}},
			InFlight: journaled("w-0", old.Name, tg.Name, done...)})
		if err != nil {
			t.Fatal(err)
		}
		return p.Nodes[0]
	}
	base := node("w-0", "worker", "a", 0)
	base.CurrentConfig, base.Unschedulable, base.BootID = old.Name, true, "boot-1"

	// Still on its old config, its writes journaled: the whole update again (writes are
	// idempotent; a file lost since, or rolled back, is written).
	np := plan(base, "cordon", "drain", "write /etc/a")
	if d := cmp.Diff(all, keys(np.Steps)); d != "" || np.Action != NodeResume || np.Happened != "" {
		t.Errorf("resume on the old config %s (-want +got):\n%s", np.Action, d)
	}
	// Rolled back after a failed step, Degraded on its old config: the same.
	rolled := base
	rolled.State, rolled.Reason = model.StateDegraded, "restart x: failed (rolled back to rendered-worker-old)"
	if np := plan(rolled, "cordon", "drain", "write /etc/a"); !cmp.Equal(all, keys(np.Steps)) {
		t.Errorf("rolled back node's steps %v, want the whole update", keys(np.Steps))
	}
	// Its agent recorded a reboot into the target, and its boot id changed since: the steps
	// up to the reboot are done — the node says so — and the plan says what happened.
	rebooted := base
	rebooted.State, rebooted.BootID = model.StateWorking, "boot-2"
	rebooted.PendingReboot = &model.PendingReboot{Config: tg.Name, BootID: "boot-1"}
	np = plan(rebooted, "cordon", "drain", "write /etc/a")
	if d := cmp.Diff([]string{"verify", "uncordon"}, keys(np.Steps)); d != "" || np.Reboot ||
		!strings.Contains(np.Happened, "rebooted into "+tg.Name+" already (boot id boot-1 → boot-2)") {
		t.Errorf("rebooted node: steps (-want +got):\n%s\nhappened %q", d, np.Happened)
	}
	// The same record with the boot id unchanged: the reboot did not happen; it is planned.
	rebooted.BootID = "boot-1"
	if np := plan(rebooted); !cmp.Equal(all, keys(np.Steps)) || np.Happened != "" {
		t.Errorf("unhappened reboot: steps %v, happened %q", keys(np.Steps), np.Happened)
	}
	// A record for another config says nothing about this update.
	rebooted.BootID, rebooted.PendingReboot.Config = "boot-2", "rendered-worker-other"
	if np := plan(rebooted); !cmp.Equal(all, keys(np.Steps)) {
		t.Errorf("another config's record: steps %v", keys(np.Steps))
	}
	// It reports the target (rebooted, verified, Done) but was not uncordoned: uncordon,
	// owed because the journal says this update cordoned it.
	finished := base
	finished.CurrentConfig = tg.Name
	if np := plan(finished, all[:5]...); !cmp.Equal([]string{"uncordon"}, keys(np.Steps)) || np.Action != NodeResume {
		t.Errorf("left-over uncordon: %s %v", np.Action, keys(np.Steps))
	}
	// Cordoned by someone else (the journal has no cordon): not uncordoned; its gates are
	// checked again (a resume with no steps).
	if np := plan(finished, "write /etc/a"); len(np.Steps) != 0 || np.Action != NodeResume {
		t.Errorf("node cordoned by another: %s %v", np.Action, keys(np.Steps))
	}
}

// A node Degraded on the config it runs (a health gate it failed) is not left there: it is
// verified and gated again.
func TestMakePlanDegradedOnTargetIsVerified(t *testing.T) {
	tg := target("worker", file("/etc/a", "x"))
	n := node("w-0", "worker", "a", 0)
	n.CurrentConfig, n.State, n.Reason = tg.Name, model.StateDegraded, `health gate "http" did not pass`
	p, err := MakePlan(Input{Desired: desired(model.Pool{Name: "worker"}),
		Rendered: map[string]*model.Rendered{"worker": tg}, Fleet: &model.Fleet{Nodes: []model.Node{n}}})
	if err != nil {
		t.Fatal(err)
	}
	np := p.Nodes[0]
	if !cmp.Equal([]string{"verify"}, keys(np.Steps)) || np.Action != NodeUpdate || np.DriftOnly || !p.HasConfigChanges() {
		t.Errorf("Degraded on its target: %s %v drift-only %v", np.Action, keys(np.Steps), np.DriftOnly)
	}
}

// A node that already runs the target's OS image gets no pivot, and one that has its
// kernel arguments no kargs step: nor the reboot they would bring (the MCO compares with
// the booted image too). A node that reports neither gets both.
func TestMakePlanNoDisruptionTheNodeDoesNotNeed(t *testing.T) {
	old := &model.Rendered{Name: "rendered-worker-old", Pool: "worker", KernelArgs: []string{"a"}}
	tg := target("worker", file("/etc/a", "x", "none"))
	tg.OSImage, tg.KernelArgs = "quay.io/os:2", []string{"a", "nosmt"}
	plan := func(n model.Node) NodePlan {
		t.Helper()
		n.CurrentConfig = old.Name
		p, err := MakePlan(Input{Desired: desired(model.Pool{Name: "worker"}),
			Rendered: map[string]*model.Rendered{"worker": tg}, Known: map[string]*model.Rendered{old.Name: old},
			Fleet: &model.Fleet{Nodes: []model.Node{n}}})
		if err != nil {
			t.Fatal(err)
		}
		return p.Nodes[0]
	}
	n := node("w-0", "worker", "a", 0)
	if np := plan(n); !np.Reboot || !slices.Contains(keys(np.Steps), "pivot") || !slices.Contains(keys(np.Steps), "kargs") {
		t.Errorf("a node reporting nothing: %v", keys(np.Steps))
	}
	n.OSImage, n.KernelArgs = "quay.io/os:2", []string{"a", "nosmt", "quiet"}
	if np := plan(n); !cmp.Equal([]string{"write /etc/a"}, keys(np.Steps)) || np.Reboot {
		t.Errorf("a node running the image with the arguments: %v", keys(np.Steps))
	}
	n.OSImage = "quay.io/os:1"
	if np := plan(n); !cmp.Equal([]string{"stage", "cordon", "drain", "write /etc/a", "pivot", "reboot", "verify", "uncordon"}, keys(np.Steps)) {
		t.Errorf("another image, the arguments there: %v", keys(np.Steps))
	}
	// An argument the update removes, still on the node: kargs.
	old.KernelArgs = []string{"a", "gone"}
	n.OSImage, n.KernelArgs = "quay.io/os:2", []string{"a", "nosmt", "gone"}
	if np := plan(n); !slices.Contains(keys(np.Steps), "kargs") {
		t.Errorf("a removed argument still there: %v", keys(np.Steps))
	}
}

func TestMakePlanUnknownCurrentConfigReboots(t *testing.T) {
	n := node("w-0", "worker", "a", 0)
	n.CurrentConfig = "rendered-worker-lost"
	p, err := MakePlan(Input{Desired: desired(model.Pool{Name: "worker"}),
		Rendered: map[string]*model.Rendered{"worker": target("worker", file("/etc/a", "x", "none"))},
		Fleet:    &model.Fleet{Nodes: []model.Node{n}}})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Nodes[0].Reboot || len(p.Nodes[0].Warnings) == 0 {
		t.Errorf("unknown current config: reboot=%v warnings=%v", p.Nodes[0].Reboot, p.Nodes[0].Warnings)
	}
}

// TestBudgetNeverExceeded plays the rollout each plan implies over many random fleets:
// nodes start in plan order whenever their pool has a free slot and finish in random
// order; at no moment may a pool have more than max_unavailable nodes unavailable (nodes
// out of service, changing or not — those stay out for the whole rollout, the worst case —
// plus updating ones). The engine's live check has its own property test.
func TestBudgetNeverExceeded(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 500; iter++ {
		var pools []model.Pool
		var nodes []model.Node
		rendered := map[string]*model.Rendered{}
		for p := 0; p < 1+rng.IntN(3); p++ {
			name := fmt.Sprintf("p%d", p)
			mu := model.IntOrPercent{Value: 1 + rng.IntN(4)}
			if rng.IntN(2) == 0 {
				mu = model.IntOrPercent{Value: 1 + rng.IntN(100), Percent: true}
			}
			pools = append(pools, model.Pool{Name: name, MaxUnavailable: mu})
			rendered[name] = target(name, file("/etc/x", "y"))
			for i := 0; i < rng.IntN(25); i++ {
				n := node(fmt.Sprintf("%s-%d", name, i), name, string(rune('a'+rng.IntN(3))), rng.IntN(100))
				n.Ready = rng.IntN(6) != 0
				n.Unschedulable = rng.IntN(8) == 0
				if rng.IntN(3) == 0 {
					n.CurrentConfig = rendered[name].Name
				}
				nodes = append(nodes, n)
			}
		}
		in := Input{Desired: desired(pools...), Rendered: rendered, Fleet: &model.Fleet{Nodes: nodes}}
		p, err := MakePlan(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, pp := range p.Pools {
			simulate(t, rng, pp, p.Nodes, in)
		}
	}
}

func simulate(t *testing.T, rng *rand.Rand, pp PoolPlan, all []NodePlan, in Input) {
	t.Helper()
	base := 0
	var queue []NodePlan
	for _, np := range all {
		if np.Pool != pp.Name {
			continue
		}
		if np.Condition != "" {
			base++
		}
		if !np.Changed() {
			continue
		}
		if np.Wave == 0 && !np.Deferred {
			t.Fatalf("pool %s: changing node %s neither waved nor deferred", pp.Name, np.Name)
		}
		if np.Condition == "" && !np.Deferred {
			queue = append(queue, np)
		}
	}
	if base != pp.Unavailable {
		t.Fatalf("pool %s: %d nodes out of service, the plan counts %d", pp.Name, base, pp.Unavailable)
	}
	limit := pp.MaxUnavailable
	running := 0
	for len(queue) > 0 || running > 0 {
		if len(queue) > 0 && running < pp.Slots && rng.IntN(2) == 0 {
			queue = queue[1:]
			running++
		} else if running > 0 {
			running--
		} else if len(queue) > 0 && pp.Slots <= 0 {
			t.Fatalf("pool %s: nodes to start but no slots and not deferred", pp.Name)
		}
		if running > 0 && base+running > limit {
			t.Fatalf("pool %s: %d unavailable + %d updating > max_unavailable %d", pp.Name, base, running, limit)
		}
	}
}

// TestImportBoundary keeps the planner pure. Its own packages import no network, process
// or file-writing package; nothing it depends on, directly or not, is a Kubernetes client
// or one of mcp's effectful packages. (Ignition's config types import net/http for header
// names, so the transitive rule cannot cover net/http.)
func TestImportBoundary(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}",
		"github.com/mcpfleet/mcp/planner", "github.com/mcpfleet/mcp/model").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, imp := range f[1:] {
			switch imp {
			case "net", "net/http", "os", "os/exec", "io/ioutil", "syscall":
				t.Errorf("%s imports %s", f[0], imp)
			}
		}
	}
	out, err = exec.Command("go", "list", "-deps", "github.com/mcpfleet/mcp/planner").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"k8s.io/", "github.com/mcpfleet/mcp/providers",
			"github.com/mcpfleet/mcp/engine", "github.com/mcpfleet/mcp/nodeexec", "github.com/mcpfleet/mcp/bootsrv"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("planner depends on %s", dep)
			}
		}
	}
}

// TestMakePlanUnlistedDriftRestoresEverything: a node that reports more drifted paths than
// it lists gets every file and unit of its config restored, with their on_change policies
// (here a restart), and a warning that says so; listed drift alone restores just its path.
func TestMakePlanUnlistedDriftRestoresEverything(t *testing.T) {
	tg := target("worker", file("/etc/a", "x", "none"), file("/etc/b", "y", "restart:b.service"))
	tg.Units = []model.Unit{{Name: "c.service", Contents: "[Service]\n", OnChange: pol("none")}}
	plan := func(unlisted int) NodePlan {
		n := node("w-0", "worker", "a", 0)
		n.CurrentConfig, n.Drift, n.DriftUnlisted = tg.Name, []model.Drift{{Path: "/etc/a", Kind: model.DriftContent}}, unlisted
		p, err := MakePlan(Input{Desired: desired(model.Pool{Name: "worker"}), Rendered: map[string]*model.Rendered{"worker": tg},
			Known: map[string]*model.Rendered{tg.Name: tg}, Fleet: &model.Fleet{Nodes: []model.Node{n}}})
		if err != nil {
			t.Fatal(err)
		}
		return p.Nodes[0]
	}
	if got := keys(plan(0).Steps); !cmp.Equal(got, []string{"write /etc/a"}) {
		t.Errorf("listed drift only: %v", got)
	}
	np := plan(30)
	want := []string{"write /etc/a", "write /etc/b", "write c.service", "daemon-reload", "restart b.service"}
	if d := cmp.Diff(want, keys(np.Steps)); d != "" {
		t.Errorf("unlisted drift (-want +got):\n%s", d)
	}
	if np.DriftUnlisted != 30 || len(np.Warnings) != 1 || !strings.Contains(np.Warnings[0], "30 more drifted paths") {
		t.Errorf("unlisted drift: %d unlisted, warnings %q", np.DriftUnlisted, np.Warnings)
	}
}

// A node out of service that needs the update is updated first, in its own slot; the
// nodes in service share what the budget leaves. Before, a NotReady node in the rollout
// was not counted, and apply took a second node down beside it.
func TestMakePlanOutOfServiceNodeInItsOwnSlot(t *testing.T) {
	plan := func(max int) *Rollout {
		n := []model.Node{node("w-0", "worker", "a", 0), node("w-1", "worker", "a", 1), node("w-2", "worker", "a", 2), node("w-3", "worker", "a", 3)}
		n[3].Ready = false
		n[1].State, n[1].Reason = model.StateDegraded, "disk full"
		p, err := MakePlan(Input{Desired: desired(model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: max}}),
			Rendered: map[string]*model.Rendered{"worker": target("worker", file("/etc/a", "x"))},
			Fleet:    &model.Fleet{Nodes: n}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := plan(2)
	got := map[string]string{}
	for _, n := range p.Nodes {
		got[n.Name] = fmt.Sprintf("%d %v %s", n.Wave, n.Deferred, n.Condition)
	}
	want := map[string]string{"w-1": "1 false Degraded: disk full", "w-3": "1 false NotReady",
		"w-0": "0 true ", "w-2": "0 true "}
	if d := cmp.Diff(want, got); d != "" || p.Nodes[0].Name != "w-1" || p.Nodes[1].Name != "w-3" {
		t.Errorf("max_unavailable 2, two nodes out (-want +got):\n%s\norder %s %s", d, p.Nodes[0].Name, p.Nodes[1].Name)
	}
	if pp := p.Pools[0]; pp.Unavailable != 2 || pp.Slots != 0 || len(pp.Blockers) != 1 ||
		!strings.Contains(pp.Blockers[0].Message, "w-3 (NotReady)") || !strings.Contains(pp.Blockers[0].Message, "2 node changes deferred") {
		t.Errorf("pool: %+v", pp)
	}
	p = plan(3)
	for _, n := range p.Nodes {
		got[n.Name] = fmt.Sprintf("%d %v", n.Wave, n.Deferred)
	}
	want = map[string]string{"w-1": "1 false", "w-3": "1 false", "w-0": "1 false", "w-2": "2 false"}
	if d := cmp.Diff(want, got); d != "" || p.Pools[0].Waves != 2 {
		t.Errorf("max_unavailable 3 (-want +got):\n%s\nwaves %d", d, p.Pools[0].Waves)
	}
}

// A journal entry whose steps are all done still resumes: apply ends it.
func TestMakePlanResumeWithNothingLeft(t *testing.T) {
	tg := target("worker", file("/etc/a", "x"))
	n := node("w-0", "worker", "a", 0)
	n.CurrentConfig = tg.Name
	p, err := MakePlan(Input{Desired: desired(model.Pool{Name: "worker"}),
		Rendered: map[string]*model.Rendered{"worker": tg}, Fleet: &model.Fleet{Nodes: []model.Node{n}},
		InFlight: journaled("w-0", "rendered-worker-old", tg.Name, "cordon", "drain", "write /etc/a", "reboot", "verify", "uncordon")})
	if err != nil {
		t.Fatal(err)
	}
	if np := p.Nodes[0]; np.Action != NodeResume || len(np.Steps) != 0 || np.Wave != 1 {
		t.Errorf("resume with nothing left: %+v", np)
	}
}

func TestRoom(t *testing.T) {
	n := []model.Node{node("w-0", "worker", "a", 0), node("w-1", "worker", "a", 1), node("w-2", "worker", "a", 2)}
	n[2].Ready = false
	if ok, _ := Room(1, "w-0", n, nil); ok {
		t.Error("w-0 may start beside NotReady w-2 with max_unavailable 1")
	}
	if ok, _ := Room(1, "w-2", n, map[string]bool{"w-1": true}); !ok {
		t.Error("w-2, out of service already, may not start in its own slot")
	}
	ok, why := Room(2, "w-0", n, map[string]bool{"w-1": true})
	if ok || why != "max_unavailable 2: 2 of the pool's nodes are out of service: w-1 (updating), w-2 (NotReady)" {
		t.Errorf("room %v: %q", ok, why)
	}
	if ok, _ := Room(3, "w-0", n, map[string]bool{"w-1": true}); !ok {
		t.Error("no room with 2 of 3 out")
	}
}

// A node an interrupted apply left in flight is resumed in its own slot; the others wait
// for it in later waves instead of being deferred to another apply. In flight is what the
// apply recorded (model.InFlight): its journal (the cordon finished), or the intent on the
// node's claim, written before the action and not yet followed by a journaled step — the
// kill between a hand-over, or a cordon, and its record. How the node looks (Working on
// the target, cordoned under a claim) says nothing by itself.
func TestMakePlanResumedNodeGivesItsSlotBack(t *testing.T) {
	old := &model.Rendered{Name: "rendered-worker-old", Pool: "worker"}
	tg := target("worker", file("/etc/a", "x"))
	plan := func(t *testing.T, shape func(*model.Node), inFlight []model.InFlight) *Rollout {
		t.Helper()
		n := []model.Node{node("w-0", "worker", "a", 0), node("w-1", "worker", "a", 1), node("w-2", "worker", "a", 2)}
		for i := range n {
			n[i].CurrentConfig = old.Name
		}
		shape(&n[1])
		p, err := MakePlan(Input{Desired: desired(model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: 1}}),
			Rendered: map[string]*model.Rendered{"worker": tg}, Known: map[string]*model.Rendered{old.Name: old},
			Fleet: &model.Fleet{Nodes: n}, InFlight: inFlight})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	cordoned := func(n *model.Node) { n.Unschedulable = true }
	working := func(n *model.Node) { n.State, n.DesiredConfig = model.StateWorking, tg.Name }
	intent := func(p model.Phase, cordoned bool) []model.InFlight {
		return []model.InFlight{{Node: "w-1", Apply: "A", From: old.Name, Target: tg.Name, Phase: p, Cordoned: cordoned}}
	}
	for _, tc := range []struct {
		name     string
		shape    func(*model.Node)
		inFlight []model.InFlight
	}{
		{"cordoned, journaled", cordoned, journaled("w-1", old.Name, tg.Name, "cordon")},
		{"handed over, not journaled", working, intent(model.PhaseHandOver, false)},
		{"claimed and cordoned, not journaled", cordoned, intent(model.PhaseCordon, true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := plan(t, tc.shape, tc.inFlight)
			got := map[string]string{}
			for _, np := range p.Nodes {
				got[np.Name] = fmt.Sprintf("%s %d %v", np.Action, np.Wave, np.Deferred)
			}
			want := map[string]string{"w-1": "resume 1 false", "w-0": "update 2 false", "w-2": "update 3 false"}
			if d := cmp.Diff(want, got); d != "" || len(p.Pools[0].Blockers) != 0 || p.Pools[0].Waves != 3 {
				t.Errorf("(-want +got):\n%s\nwaves %d, blockers %v", d, p.Pools[0].Waves, p.Pools[0].Blockers)
			}
		})
	}
	// No update recorded in flight — whatever the node looks like: Working on the target
	// or on another config, cordoned under a released claim or a held one — or one only
	// claimed, nothing on the node begun: the others are deferred.
	for name, tc := range map[string]struct {
		shape    func(*model.Node)
		inFlight []model.InFlight
	}{
		"working on the target, nothing recorded": {working, nil},
		"working on another config":               {func(n *model.Node) { n.State, n.DesiredConfig = model.StateWorking, "rendered-worker-other" }, nil},
		"cordoned, claim released": {func(n *model.Node) {
			n.Unschedulable, n.Claim = true, &model.Claim{Apply: "A", Since: time.Unix(0, 0), Released: time.Unix(1, 0)}
		}, nil},
		"cordoned under a held claim, nothing recorded": {func(n *model.Node) {
			n.Unschedulable, n.Claim = true, &model.Claim{Apply: "A", Since: time.Unix(0, 0)}
		}, nil},
		"cordoned, only claimed": {cordoned, intent(model.PhaseClaimed, false)},
	} {
		p := plan(t, tc.shape, tc.inFlight)
		for _, np := range p.Nodes {
			if np.Action == NodeResume {
				t.Errorf("%s: %s resumed, though no update of it is in flight", name, np.Name)
			}
		}
	}
}

// journaled is the update in flight a journal entry with done steps (and no intent on the
// node) gives, as the engine builds it.
func journaled(node, from, target string, done ...string) []model.InFlight {
	p, cordoned := model.PhaseOf(done)
	return []model.InFlight{{Node: node, From: from, Target: target, Phase: p, Cordoned: cordoned, Done: done}}
}

var (
	pol  = modeltest.Policies
	file = modeltest.File
)

func keys(steps []model.Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Key())
	}
	return out
}

// A node that rebooted into its target under a killed apply already boots the target's
// kernel arguments: its plan is still the update cut at the reboot (verify, and the
// uncordon the journal owes), not an update in place from what the host now runs.
func TestMakePlanRebootedNodeWithItsNewKernelArgs(t *testing.T) {
	old := &model.Rendered{Name: "rendered-infra-old", Pool: "infra", Files: []model.File{file("/etc/motd", "old", "none")}}
	tg := target("infra", file("/etc/motd", "new", "none"))
	tg.KernelArgs = []string{"nosmt"}
	n := node("i-0", "infra", "a", 0)
	n.CurrentConfig, n.Unschedulable, n.State, n.BootID = old.Name, true, model.StateWorking, "boot-2"
	n.KernelArgs = []string{"nosmt"} // booted with what the kargs step staged
	n.PendingReboot = &model.PendingReboot{Config: tg.Name, BootID: "boot-1"}
	n.Drift = []model.Drift{{Path: "/etc/motd", Kind: model.DriftContent}} // written before the reboot
	p, err := MakePlan(Input{Desired: desired(model.Pool{Name: "infra"}),
		Rendered: map[string]*model.Rendered{"infra": tg}, Known: map[string]*model.Rendered{old.Name: old},
		Fleet:    &model.Fleet{Nodes: []model.Node{n}},
		InFlight: journaled("i-0", old.Name, tg.Name, "cordon", "drain", "write /etc/motd", "kargs")})
	if err != nil {
		t.Fatal(err)
	}
	if np := p.Nodes[0]; !cmp.Equal([]string{"verify", "uncordon"}, keys(np.Steps)) || np.Happened == "" {
		t.Errorf("steps %v, happened %q", keys(np.Steps), np.Happened)
	}
}

// A node a FleetLock client (Zincati) holds a reboot slot on is shown in the plan as
// taking a slot of the pool's budget, named with its holder (apply counts it live, and
// waits for it); lapsed, nothing is said.
func TestMakePlanShowsFleetLockSlot(t *testing.T) {
	n := []model.Node{node("w-0", "worker", "a", 0), node("w-1", "worker", "a", 1)}
	plan := func(live bool) NodePlan {
		t.Helper()
		fl := &model.Claim{Apply: model.FleetLockPrefix + "c988d2509fdf", Since: t0}
		p, err := MakePlan(Input{Desired: desired(model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: 1}}),
			Rendered: map[string]*model.Rendered{"worker": target("worker", file("/etc/a", "x", "none"))},
			Fleet:    &model.Fleet{Nodes: n}, Claims: map[string]JudgedClaim{"w-1": {Claim: fl, Live: live, Why: "a FleetLock reboot slot"}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, np := range p.Nodes {
			if np.Name == "w-1" {
				return np
			}
		}
		t.Fatal("no w-1 in the plan")
		return NodePlan{}
	}
	np := plan(true)
	if len(np.Blockers) != 1 || np.Blockers[0].Kind != BlockClaim ||
		!strings.Contains(np.Blockers[0].Message, "FleetLock client c988d2509fdf") || !strings.Contains(np.Blockers[0].Message, "slot of the pool's max_unavailable") {
		t.Fatalf("w-1 held by a live FleetLock slot: blockers %+v; want one naming its holder as taking a slot of the budget", np.Blockers)
	}
	if np := plan(false); len(np.Blockers) != 0 {
		t.Fatalf("w-1 with a lapsed FleetLock slot: blockers %+v; want none", np.Blockers)
	}
}
