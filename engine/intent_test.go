package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/config"
	"github.com/mcpfleet/mcp/providers"
	"github.com/mcpfleet/mcp/providers/record"
	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/state/localstate"
)

// Before each action that changes a node — its cordon, the hand-over of its steps, its
// uncordon — apply records the action's intent on the node's claim (the provider writes
// it with the action where it can), after its journal entry was opened: the order of the
// calls the provider was asked to make shows it.
func TestIntentBeforeEachAction(t *testing.T) {
	dir := t.TempDir()
	main := `provider "record" {
  nodes = 1
}
pool "worker" {
  node_selector = { "node-role.kubernetes.io/worker" = "" }
}
config "50-a" {
  pools = ["worker"]
  file "/etc/a" { content = "a" }
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	parts := Parts{Providers: []providers.Spec{record.Spec}, Backends: []state.BackendSpec{localstate.Spec}}
	w, _, diags := Load(dir, config.Options{}, parts)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	res, err, _ := apply(t, w, PlanOptions{}, ApplyOptions{})
	if err != nil || len(res.Updated) != 1 {
		t.Fatalf("apply: %+v, %v", res, err)
	}
	var got []string
	for _, c := range w.Provider.(*record.Provider).Calls() {
		switch c.Op {
		case "claim", "cordon", "drain", "run-node-steps", "uncordon", "release":
			got = append(got, c.Op)
		case "intend":
			f := strings.Fields(c.Args)
			got = append(got, "intend "+f[1])
		}
	}
	want := []string{"claim", "intend cordon", "cordon", "drain", "intend hand-over", "run-node-steps",
		"intend uncordon", "uncordon", "release"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("calls on worker-0 (-want +got):\n%s", d)
	}
	st, err := w.ReadState(context.Background())
	if err != nil || len(st.Journal) != 0 {
		t.Errorf("the journal after a finished node: %v, %v; want no entry left", st.Journal, err)
	}
}
