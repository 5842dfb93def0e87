package providertest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

// The promises of the Provider interface itself.

// refreshObserves: Refresh gives every node, sorted by name, with its zone, readiness and
// labels, and the PDBs with the status the disruption controller would give them.
func refreshObserves(t *testing.T, newProvider New) {
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
}

// cordonUncordon: a cordon is seen by the next Refresh, and so is the uncordon.
func cordonUncordon(t *testing.T, newProvider New) {
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
}

// unknownNode: a cordon of a node the fleet lacks is an error that names it, and changes
// no other node.
func unknownNode(t *testing.T, newProvider New) {
	p := newProvider(t, Standard())
	for name, act := range map[string]func() error{
		"cordon":   func() error { return p.Cordon(ctx, "w-9") },
		"uncordon": func() error { return p.Uncordon(ctx, "w-9") },
	} {
		if err := act(); err == nil || !strings.Contains(err.Error(), "w-9") {
			t.Errorf("%s of a node the fleet lacks: %v, want an error naming w-9", name, err)
		}
	}
	f, err := p.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range f.Nodes {
		if n.Unschedulable {
			t.Errorf("node %s cordoned by a cordon of w-9", n.Name)
		}
	}
}

// drainEvicts: a drain evicts every pod but the DaemonSets'.
func drainEvicts(t *testing.T, newProvider New) {
	p := newProvider(t, Standard())
	if err := p.Cordon(ctx, "w-0"); err != nil {
		t.Fatal(err)
	}
	if err := p.Drain(ctx, "w-0", providers.DrainOptions{Timeout: 30 * time.Second, RetryDelay: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	f, err := p.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, pod := range f.Pods {
		if pod.Node == "w-0" {
			left = append(left, pod.Name)
		}
	}
	if !slices.Equal(left, []string{"agent-w-0"}) {
		t.Errorf("pods left on w-0 after drain: %v, want only the DaemonSet pod", left)
	}
}

// drainBlocked: a drain a PDB blocks fails after its timeout, naming the node, the PDB and
// the pod.
func drainBlocked(t *testing.T, newProvider New) {
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
}

// conformanceTarget is the config runNodeSteps and others move a node to, and its steps.
func conformanceTarget() (*model.Rendered, []model.Step) {
	target := &model.Rendered{Name: "rendered-worker-test", Pool: "worker",
		Files: []model.File{{
			Entry:    model.Entry{Path: "/etc/mcp-conformance", OnChange: []model.Policy{{Kind: model.PolicyRestart, Unit: "x.service"}}},
			Mode:     0o644,
			Contents: []byte("x\n"),
		}}}
	return target, []model.Step{{Kind: model.StepWrite, Target: "/etc/mcp-conformance"}, {Kind: model.StepRestart, Target: "x.service"}}
}

// runNodeSteps: done is called for each step, in order, and the node then runs the target.
func runNodeSteps(t *testing.T, newProvider New) {
	p := newProvider(t, Standard())
	update(t, p, "w-0")
}

// update runs the conformance target's steps on node, checking runNodeSteps' promise.
func update(t *testing.T, p providers.Provider, name string) *model.Rendered {
	t.Helper()
	target, steps := conformanceTarget()
	var done []model.Step
	if err := p.RunNodeSteps(ctx, name, nil, target, steps, func(s model.Step) { done = append(done, s) }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(done, steps) {
		t.Errorf("done called with %v, want %v in order", done, steps)
	}
	if n := node(t, p, name); n.CurrentConfig != target.Name {
		t.Errorf("current config %q, want %q", n.CurrentConfig, target.Name)
	}
	return target
}
