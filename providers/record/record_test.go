package record

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
	"github.com/mcpfleet/mcp/providers/providertest"
)

// fromFixture is the record provider over the fixture.
func fromFixture(f providertest.Fixture) *Provider {
	var fl model.Fleet
	for _, n := range f.Nodes {
		fl.Nodes = append(fl.Nodes, model.Node{Name: n.Name, Zone: n.Zone, Labels: n.Labels, Ready: n.Ready, State: model.StateDone})
	}
	fl.Pods = f.Pods
	for _, b := range f.PDBs {
		fl.PDBs = append(fl.PDBs, model.PDB{Namespace: b.Namespace, Name: b.Name, Selector: b.Selector, MinAvailable: b.MinAvailable})
	}
	for _, t := range f.Templates {
		fl.Templates = append(fl.Templates, model.MachineTemplate{Kind: "MachineSet", APIVersion: "machine.openshift.io/v1beta1",
			Namespace: providertest.TemplateNamespace, Name: t.Name, Platform: "aws",
			Field: "spec.template.spec.providerSpec.value.ami.id", Image: t.Image})
	}
	return New(Options{Fleet: fl})
}

func TestConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T, f providertest.Fixture) providers.Provider {
		p := fromFixture(f)
		if b := os.Getenv("MCP_RECORD_BROKEN"); b != "" {
			return broken{p, b}
		}
		return p
	})
}

// broken is the record provider with one promise broken, so that the suite is seen to
// catch it (TestSuiteCatchesBrokenPromises).
type broken struct {
	*Provider
	what string
}

func (b broken) ObserveNodes(ctx context.Context, names []string) ([]model.Node, error) {
	nodes, err := b.Provider.ObserveNodes(ctx, names)
	if b.what == "stale-observations" {
		for i := range nodes {
			nodes[i].Unschedulable = false
		}
	}
	return nodes, err
}

func (b broken) SetTemplateImage(ctx context.Context, t model.MachineTemplate, from, to string) error {
	if b.what == "blind-template-sets" {
		t.Image = from
		b.temps[slices.IndexFunc(b.temps, func(m model.MachineTemplate) bool { return m.ID() == t.ID() })].Image = from
	}
	return b.Provider.SetTemplateImage(ctx, t, from, to)
}

func (b broken) MarkDegraded(ctx context.Context, node, reason string) error {
	if b.what == "forgetful-degraded" {
		return nil
	}
	return b.Provider.MarkDegraded(ctx, node, reason)
}

// TestSuiteCatchesBrokenPromises runs the conformance suite, in a child test process,
// against the record provider with one promise broken at a time: the suite fails exactly
// the tests of the promises that rest on it.
func TestSuiteCatchesBrokenPromises(t *testing.T) {
	if os.Getenv("MCP_RECORD_BROKEN") != "" {
		t.Skip("in the child")
	}
	for what, promises := range map[string][]string{
		// The budget's live count, and the waits under shared watches, read ObserveNodes.
		"stale-observations":  {"NodeObserver/SeesTheNamedNodesAsTheyAreNow", "WatchSharer/SharedWatchesSeeChanges"},
		"blind-template-sets": {"TemplatePatcher/SetsTheImageOnlyFromWhatWasObserved"},
		"forgetful-degraded":  {"DegradedMarker/MarkedUntilTheNextUpdate"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestConformance$", "-test.v")
		cmd.Env = append(os.Environ(), "MCP_RECORD_BROKEN="+what)
		out, err := cmd.CombinedOutput()
		var failed []string
		for _, line := range strings.Split(string(out), "\n") {
			if name, ok := strings.CutPrefix(strings.TrimSpace(line), "--- FAIL: TestConformance/"); ok {
				failed = append(failed, strings.Fields(name)[0])
			}
		}
		if err == nil || !slices.Equal(failed, promises) {
			t.Errorf("suite against a provider with %s: %v, failed %v; want only %v to fail\n%s", what, err, failed, promises, out)
		}
	}
}

// The record provider records every call, in order, in memory and in its log; a drain
// that a PDB blocks names it, and an uncordon brings the evicted pods back.
func TestRecordsWhatItIsAsked(t *testing.T) {
	log := filepath.Join(t.TempDir(), "calls.log")
	f := providertest.Standard()
	p := fromFixture(f)
	p.o.Log = log
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(p.Cordon(ctx, "w-0"))
	must(p.Drain(ctx, "w-0", providers.DrainOptions{Timeout: time.Second}))
	target := &model.Rendered{Name: "rendered-worker-1", Files: []model.File{{Entry: model.Entry{Path: "/etc/a"}, Contents: []byte("a")}}}
	must(p.RunNodeSteps(ctx, "w-0", nil, target, []model.Step{{Kind: model.StepWrite, Target: "/etc/a"}, {Kind: model.StepReboot}}, func(model.Step) {}))
	must(p.Uncordon(ctx, "w-0"))
	want := []string{"cordon w-0", "drain w-0 timeout 1s", "evict w-0 demo/web-0",
		"run-node-steps w-0 rendered-worker-1: write /etc/a, reboot", "uncordon w-0"}
	var got []string
	for _, c := range p.Calls() {
		got = append(got, c.String())
	}
	if !slices.Equal(got, want) {
		t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	b, err := os.ReadFile(log)
	if err != nil || string(b) != strings.Join(want, "\n")+"\n" {
		t.Errorf("log %q, %v", b, err)
	}
	fl, _ := p.Refresh(ctx)
	n := fl.Nodes[0]
	if n.CurrentConfig != target.Name || n.State != model.StateDone || n.BootID == "" || len(fl.Pods) != len(f.Pods) {
		t.Errorf("after the update: node %+v, %d pods (want %d back)", n, len(fl.Pods), len(f.Pods))
	}
}

// The spec: its settings build the fleet they describe; a bad count is refused.
func TestSpec(t *testing.T) {
	if err := Spec.Check(); err != nil {
		t.Fatal(err)
	}
	p, err := providertest.FromSpec[*Provider](Spec, map[string]any{"nodes": 3, "role": "infra", "zones": []string{"a", "b"}, "ready": false})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := p.Refresh(context.Background())
	var got []string
	for _, n := range f.Nodes {
		got = append(got, n.Name+"/"+n.Zone)
		if n.Ready || n.Labels["node-role.kubernetes.io/infra"] != "" {
			t.Errorf("node %+v", n)
		}
	}
	if !slices.Equal(got, []string{"infra-0/a", "infra-1/b", "infra-2/a"}) {
		t.Errorf("nodes %v", got)
	}
	for _, bad := range []any{2.5, -1, maxNodes + 1} {
		if _, err := Spec.With(map[string]any{"nodes": bad}); err == nil {
			t.Errorf("nodes = %v taken", bad)
		}
	}
}
