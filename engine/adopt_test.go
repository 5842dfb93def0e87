package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/model"
)

// A node that changes after the plan and before its adopt step is refused by its own check,
// not recorded: it keeps its config and what it carries, is not Degraded, and apply names
// the stale plan; the other nodes are adopted.
func TestAdoptRefusedByTheNodeThatChanged(t *testing.T) {
	dir := quickstart(t)
	w := load(t, dir)
	if _, err, _ := apply(t, w, PlanOptions{}, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	nodes := filepath.Join(dir, "fleet/nodes")
	for _, n := range []string{"infra-0", "infra-1", "worker-0", "worker-1", "worker-2", "worker-3"} {
		setNodeJSON(t, filepath.Join(nodes, n, "node.json"), "current_config", "rendered-foreign-"+n)
	}
	motd := filepath.Join(nodes, "worker-1/root/etc/motd")
	_, pf := planned(t, w, PlanOptions{})
	adopts := 0
	for _, n := range pf.File.Rollout.Nodes {
		if n.Action == "adopt" {
			adopts++
		}
	}
	if adopts != 6 {
		t.Fatalf("%d nodes to adopt, want 6", adopts)
	}
	st, err := w.ReadState(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	changed := false
	opts := ApplyOptions{Observer: func(e Event) {
		if e.Kind == EventStepStart && e.Node == "worker-1" && e.Step.Kind == model.StepAdopt && !changed {
			changed = true
			if err := os.WriteFile(motd, []byte("changed after the plan\n"), 0o644); err != nil {
				t.Error(err)
			}
		}
	}}
	_, res, err := w.Apply(context.Background(), st, pf, opts)
	if err == nil || !strings.Contains(err.Error(), "stale plan") || !slices.Equal(res.Failed, []string{"worker-1"}) {
		t.Fatalf("apply: %v, failed %v; want worker-1 refused as a stale plan", err, res.Failed)
	}
	n := readNodeJSON(t, filepath.Join(nodes, "worker-1/node.json"))
	if n.CurrentConfig != "rendered-foreign-worker-1" || n.State == model.StateDegraded || n.Unschedulable {
		t.Errorf("worker-1 after a refused adoption: config %q, state %q, cordoned %v", n.CurrentConfig, n.State, n.Unschedulable)
	}
	if b, _ := os.ReadFile(motd); string(b) != "changed after the plan\n" {
		t.Errorf("worker-1's motd was rewritten: %q", b)
	}
	if n := readNodeJSON(t, filepath.Join(nodes, "worker-0/node.json")); !strings.HasPrefix(n.CurrentConfig, "rendered-worker-") {
		t.Errorf("worker-0 not adopted: %q", n.CurrentConfig)
	}
}

func setNodeJSON(t *testing.T, p, key, value string) {
	t.Helper()
	m := map[string]any{}
	b, err := os.ReadFile(p)
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		t.Fatal(err)
	}
	m[key] = value
	if b, err = json.Marshal(m); err == nil {
		err = os.WriteFile(p, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func readNodeJSON(t *testing.T, p string) model.Node {
	t.Helper()
	var n model.Node
	b, err := os.ReadFile(p)
	if err == nil {
		err = json.Unmarshal(b, &n)
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}
