package engine

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/config"
	"github.com/mcpfleet/mcp/model"
)

// TestLocalApplyTraceEqualsPlan applies the quickstart on the real local provider and
// checks that the steps each node went through are exactly the plan's, in order — and
// that the infra nodes, which reboot, came back with a new boot id and were verified.
func TestLocalApplyTraceEqualsPlan(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "qs")
	if err := os.CopyFS(dir, os.DirFS("../examples/quickstart")); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "main.hcl")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, regexp.MustCompile(`_duration = "[^"]*"`).ReplaceAll(b, []byte(`_duration = "1ms"`)), 0o644)

	ctx := context.Background()
	w, _, diags := Load(dir, config.Options{}, localParts)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	st, err := w.ReadState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := w.Provider.Refresh(ctx)
	pf, err := w.Plan(ctx, st, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	trace := map[string][]string{}
	_, _, err = w.Apply(ctx, st, pf, ApplyOptions{Observer: func(e Event) {
		if e.Kind == EventStepDone {
			mu.Lock()
			trace[e.Node] = append(trace[e.Node], e.Step.Key())
			mu.Unlock()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for _, n := range pf.File.Rollout.Nodes {
		for _, s := range n.Steps {
			want[n.Name] = append(want[n.Name], s.Key())
		}
	}
	if d := cmp.Diff(want, trace); d != "" {
		t.Errorf("executed steps differ from the plan (-plan +executed):\n%s", d)
	}
	after, _ := w.Provider.Refresh(ctx)
	for i, n := range after.Nodes {
		rebooted := n.BootID != before.Nodes[i].BootID
		if want := n.Name[:5] == "infra"; rebooted != want {
			t.Errorf("%s rebooted=%v, want %v", n.Name, rebooted, want)
		}
		if n.State != model.StateDone || n.Unschedulable || n.CurrentConfig != pf.File.Rollout.Nodes[0].To && n.CurrentConfig == "" {
			t.Errorf("%s after apply: %+v", n.Name, n)
		}
	}
	// Nothing is left to do.
	st, _ = w.ReadState(ctx)
	pf, err = w.Plan(ctx, st, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range pf.File.Rollout.Nodes {
		if n.Changed() {
			t.Errorf("%s still changes after apply: %v", n.Name, n.Steps)
		}
	}
}
