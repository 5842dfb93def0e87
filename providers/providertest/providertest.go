// Package providertest is the provider conformance suite: every provider's tests call Run,
// which checks the Provider contract through the interface alone, so the local and the
// kubernetes providers behave the same to the engine.
package providertest

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

// Fixture is the fleet a harness must create before handing over its provider.
type Fixture struct {
	Nodes []FixtureNode
	Pods  []model.Pod // Node names the node; pods start Ready
	PDBs  []FixturePDB
}

// FixtureNode is a node of the fixture.
type FixtureNode struct {
	Name   string
	Zone   string
	Labels map[string]string
	Ready  bool
}

// FixturePDB is a PodDisruptionBudget of the fixture.
type FixturePDB struct {
	Namespace, Name string
	Selector        map[string]string
	MinAvailable    int
}

// Standard is the fixture Run uses: three workers; web pods on w-0 and w-1 guarded by a PDB
// that allows one disruption; a DaemonSet pod on every node; a db pod on w-2 whose PDB
// allows none.
func Standard() Fixture {
	f := Fixture{
		PDBs: []FixturePDB{
			{Namespace: "demo", Name: "web-pdb", Selector: map[string]string{"app": "web"}, MinAvailable: 1},
			{Namespace: "demo", Name: "db-pdb", Selector: map[string]string{"app": "db"}, MinAvailable: 1},
		},
	}
	for i, z := range []string{"a", "b", "c"} {
		name := "w-" + string(rune('0'+i))
		f.Nodes = append(f.Nodes, FixtureNode{Name: name, Zone: z, Ready: true,
			Labels: map[string]string{"node-role.kubernetes.io/worker": "", "topology.kubernetes.io/zone": z}})
		f.Pods = append(f.Pods, model.Pod{Namespace: "kube-system", Name: "agent-" + name, Node: name,
			Labels: map[string]string{"app": "agent"}, DaemonSet: true, Ready: true})
	}
	f.Pods = append(f.Pods,
		model.Pod{Namespace: "demo", Name: "web-0", Node: "w-0", Labels: map[string]string{"app": "web"}, Ready: true},
		model.Pod{Namespace: "demo", Name: "web-1", Node: "w-1", Labels: map[string]string{"app": "web"}, Ready: true},
		model.Pod{Namespace: "demo", Name: "db-0", Node: "w-2", Labels: map[string]string{"app": "db"}, Ready: true})
	return f
}

// Run checks a provider built by newProvider on the Standard fixture (a fresh fleet for
// each sub-test).
func Run(t *testing.T, newProvider func(t *testing.T, f Fixture) providers.Provider) {
	ctx := context.Background()
	t.Run("Refresh", func(t *testing.T) {
		p := newProvider(t, Standard())
		f, err := p.Refresh(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, n := range f.Nodes {
			names = append(names, n.Name+"/"+n.Zone)
			if !n.Ready || n.Labels["node-role.kubernetes.io/worker"] != "" {
				t.Errorf("node %s: ready=%v labels=%v", n.Name, n.Ready, n.Labels)
			}
			if _, ok := n.Labels["node-role.kubernetes.io/worker"]; !ok {
				t.Errorf("node %s lost its role label", n.Name)
			}
		}
		if !slices.Equal(names, []string{"w-0/a", "w-1/b", "w-2/c"}) {
			t.Errorf("nodes %v, want w-0/a w-1/b w-2/c sorted", names)
		}
		web := findPDB(f, "web-pdb")
		if web == nil || web.CurrentHealthy != 2 || web.DisruptionsAllowed != 1 {
			t.Errorf("web-pdb status %+v, want 2 healthy, 1 disruption allowed", web)
		}
		if db := findPDB(f, "db-pdb"); db == nil || db.DisruptionsAllowed != 0 {
			t.Errorf("db-pdb status %+v, want 0 disruptions allowed", db)
		}
	})
	t.Run("CordonUncordon", func(t *testing.T) {
		p := newProvider(t, Standard())
		if err := p.Cordon(ctx, "w-1"); err != nil {
			t.Fatal(err)
		}
		if n := node(t, p, "w-1"); !n.Unschedulable {
			t.Error("cordon did not mark w-1 unschedulable")
		}
		if err := p.Uncordon(ctx, "w-1"); err != nil {
			t.Fatal(err)
		}
		if n := node(t, p, "w-1"); n.Unschedulable {
			t.Error("uncordon left w-1 unschedulable")
		}
	})
	t.Run("DrainEvictsAndKeepsDaemonSets", func(t *testing.T) {
		p := newProvider(t, Standard())
		if err := p.Cordon(ctx, "w-0"); err != nil {
			t.Fatal(err)
		}
		if err := p.Drain(ctx, "w-0", providers.DrainOptions{Timeout: 30 * time.Second, RetryDelay: 100 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		f, _ := p.Refresh(ctx)
		var left []string
		for _, pod := range f.Pods {
			if pod.Node == "w-0" {
				left = append(left, pod.Name)
			}
		}
		if !slices.Equal(left, []string{"agent-w-0"}) {
			t.Errorf("pods left on w-0 after drain: %v, want only the DaemonSet pod", left)
		}
	})
	t.Run("DrainBlockedByPDBNamesIt", func(t *testing.T) {
		p := newProvider(t, Standard())
		start := time.Now()
		err := p.Drain(ctx, "w-2", providers.DrainOptions{Timeout: 2 * time.Second, RetryDelay: 200 * time.Millisecond})
		if err == nil {
			t.Fatal("drain of w-2 succeeded, but db-pdb allows no disruption")
		}
		for _, want := range []string{"w-2", "db-pdb", "db-0"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("drain error %q does not name %s", err, want)
			}
		}
		if time.Since(start) > time.Minute {
			t.Errorf("blocked drain took %v, timeout was 2s", time.Since(start))
		}
	})
	t.Run("HealthGatesPassOnAHealthyNode", func(t *testing.T) {
		p := newProvider(t, Standard())
		g, ok := p.(providers.HealthGater)
		if !ok {
			t.Skip("the provider has no health gates (providers.HealthGater)")
		}
		// w-0 is Ready, and so is its DaemonSet pod.
		if err := g.WaitHealthy(ctx, "w-0", 30*time.Second); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("CommandChecksRunOnlyWhatWasPublished", func(t *testing.T) {
		p := newProvider(t, Standard())
		cc, ok := p.(providers.CommandChecker)
		if !ok {
			t.Skip("the provider runs no command checks (providers.CommandChecker)")
		}
		marker := filepath.Join(t.TempDir(), "ran")
		probe := model.HealthCheck{Name: "probe", Timeout: 30 * time.Second,
			Command: []string{"/bin/sh", "-c", `echo "probe on $MCP_NODE"; exit 3`}}
		if err := cc.PublishChecks(ctx, map[string][]model.HealthCheck{"worker": {probe}}); err != nil {
			t.Fatal(err)
		}
		res, err := cc.RunCheck(ctx, "w-0", "worker", probe)
		if err != nil || res.ExitCode != 3 || res.Output != "probe on w-0\n" || res.Error != "" {
			t.Errorf("probe on w-0: %+v, %v; want exit 3 and its output", res, err)
		}
		// A name the pool was not given runs nothing, whatever command the caller holds:
		// what runs is what was published.
		forged := model.HealthCheck{Name: "forged", Timeout: 30 * time.Second, Command: []string{"/usr/bin/touch", marker}}
		res, err = cc.RunCheck(ctx, "w-0", "worker", forged)
		if err != nil || res.ExitCode != -1 || !strings.Contains(res.Error, "forged") {
			t.Errorf("an unpublished check: %+v, %v; want not run, naming it", res, err)
		}
		swapped := model.HealthCheck{Name: "probe", Timeout: 30 * time.Second, Command: []string{"/usr/bin/touch", marker}}
		if res, err := cc.RunCheck(ctx, "w-1", "worker", swapped); err != nil || res.ExitCode != 3 || res.Output != "probe on w-1\n" {
			t.Errorf("probe named with another command: %+v, %v; want the published command's exit 3", res, err)
		}
		if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a command that was never published ran (%s: %v)", marker, err)
		}
		// Published again with none for the pool: the pool keeps none.
		if err := cc.PublishChecks(ctx, map[string][]model.HealthCheck{"worker": nil}); err != nil {
			t.Fatal(err)
		}
		if res, err := cc.RunCheck(ctx, "w-2", "worker", probe); err != nil || res.ExitCode != -1 || res.Error == "" {
			t.Errorf("probe after the pool's checks were withdrawn: %+v, %v; want not run", res, err)
		}
	})
	t.Run("ClaimsOneApplyAtATime", func(t *testing.T) { claims(t, newProvider(t, Standard())) })
	t.Run("RunNodeSteps", func(t *testing.T) {
		p := newProvider(t, Standard())
		target := &model.Rendered{Name: "rendered-worker-test", Pool: "worker",
			Files: []model.File{{Path: "/etc/mcp-conformance", Mode: 0o644, Contents: []byte("x\n"),
				OnChange: []model.Policy{{Kind: model.PolicyRestart, Unit: "x.service"}}}}}
		steps := []model.Step{{Kind: model.StepWrite, Target: "/etc/mcp-conformance"}, {Kind: model.StepRestart, Target: "x.service"}}
		var done []model.Step
		if err := p.RunNodeSteps(ctx, "w-0", nil, target, steps, func(s model.Step) { done = append(done, s) }); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(done, steps) {
			t.Errorf("done called with %v, want %v in order", done, steps)
		}
		if n := node(t, p, "w-0"); n.CurrentConfig != target.Name {
			t.Errorf("current config %q, want %q", n.CurrentConfig, target.Name)
		}
	})
}

// claims checks providers.Claimer: a node claimed by a live apply is refused to another,
// naming the holder; a gone apply's claim is taken over; of two applies that judged a node
// free at the same moment, one gets it (the other's claim, or its first write carrying the
// claim, is refused); a release leaves the node's record; the node's claim is observed.
func claims(t *testing.T, p providers.Provider) {
	ctx := context.Background()
	cl, ok := p.(providers.Claimer)
	if !ok {
		t.Skip("the provider keeps no claims (providers.Claimer)")
	}
	since := time.Now().UTC().Truncate(time.Second)
	claim := func(apply, lock string) model.Claim {
		return model.Claim{Apply: apply, Lock: lock, Host: "test@host", PID: 1, Since: since, Expires: since.Add(time.Hour)}
	}
	alive := func(model.Claim) (bool, string) { return true, "alive in the test" }
	gone := func(model.Claim) (bool, string) { return false, "gone in the test" }
	a, b := claim("apply-a", ""), claim("apply-b", "")

	if prev, err := cl.Claim(ctx, "w-0", a, alive); err != nil || prev != nil {
		t.Fatalf("claiming a free node: prev %v, %v", prev, err)
	}
	if got := node(t, p, "w-0").Claim; !got.Same(&a) {
		t.Errorf("the node's claim after it was taken: %+v, want %+v", got, a)
	}
	_, err := cl.Claim(ctx, "w-0", b, alive)
	var ce *providers.ClaimedError
	if !errors.As(err, &ce) || ce.Holder.Apply != a.Apply || !strings.Contains(err.Error(), "apply-a") {
		t.Errorf("claiming a node a live apply holds: %v; want a ClaimedError naming apply-a", err)
	}
	if prev, err := cl.Claim(ctx, "w-0", b, gone); err != nil || !prev.Same(&a) {
		t.Errorf("taking over a gone apply's claim: prev %v, %v; want apply-a's", prev, err)
	}
	// a, taken over, releases nothing; b's release leaves its record.
	if err := cl.Release(ctx, "w-0", a, nil); err != nil {
		t.Fatal(err)
	}
	done := b
	done.Released = since.Add(time.Minute)
	if err := cl.Release(ctx, "w-0", b, &done); err != nil {
		t.Fatal(err)
	}
	if got := node(t, p, "w-0").Claim; !got.Same(&done) || got.Held() {
		t.Errorf("the node's claim after its release: %+v, want the released record %+v", got, done)
	}

	// Under the state lock a provider may write the claim with the node's next write: of
	// two applies that judged w-1 free, exactly one cordons it.
	c, d := claim("apply-c", "lock-c"), claim("apply-d", "")
	_, errC := cl.Claim(ctx, "w-1", c, alive)
	_, errD := cl.Claim(ctx, "w-1", d, alive)
	if errC == nil {
		errC = p.Cordon(ctx, "w-1")
	}
	if (errC == nil) == (errD == nil) || errC != nil && !errors.Is(errC, providers.ErrClaimed) || errD != nil && !errors.Is(errD, providers.ErrClaimed) {
		t.Fatalf("two applies on one node: c %v, d %v; want exactly one refused as claimed", errC, errD)
	}
	winner := c
	if errC != nil {
		winner = d
	}
	n := node(t, p, "w-1")
	if !n.Claim.Same(&winner) || n.Unschedulable != (winner.Apply == c.Apply) {
		t.Errorf("w-1 after the race: claim %+v, cordoned %v; want %s's claim, cordoned only by c", n.Claim, n.Unschedulable, winner.Apply)
	}
}

func findPDB(f *model.Fleet, name string) *model.PDB {
	for i := range f.PDBs {
		if f.PDBs[i].Name == name {
			return &f.PDBs[i]
		}
	}
	return nil
}

func node(t *testing.T, p providers.Provider, name string) model.Node {
	t.Helper()
	f, err := p.Refresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range f.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no node %s", name)
	return model.Node{}
}
