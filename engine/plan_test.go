package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers/local"
)

// workedOnElsewhere records on node that an apply on another machine claimed it and
// released it: the node may have changed since any plan made before.
func workedOnElsewhere(t *testing.T, w *Workspace, node string) {
	t.Helper()
	c := model.Claim{Apply: "elsewhere", Host: "you@there", Process: model.Process{BootID: "elsewhere", PID: 1}, Since: time.Now().UTC()}
	c.Released = c.Since.Add(time.Second)
	if _, err := w.Provider.(*local.Provider).Claim(context.Background(), node, c, func(model.Claim) (bool, string) { return false, "" }); err != nil {
		t.Fatal(err)
	}
}

// worked are the nodes whose event logs show a cordon or an agent at work.
func worked(t *testing.T, dir string) []string {
	t.Helper()
	logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for node, evs := range logs {
		for _, e := range evs {
			if e.Kind == local.EventCordon || e.Kind == local.EventWorking {
				out = append(out, node)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// editNode changes node's node.json in the local fleet of dir with f.
func editNode(t *testing.T, dir, node string, f func(map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, "fleet", "nodes", node, "node.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Two plans of one workspace, the fleet changed between them so that the older one's
// derived again would do more than it showed (worker-0 moved to pool infra: another
// target, other steps); the older is applied. Under the state lock it is derived again
// from a refresh of its own and refused, naming the node: nothing acts, and the apply is
// incomplete (run again). The newer plan is then applied whole: the older one's refusal
// left nothing behind in the workspace.
func TestOlderOfTwoPlansIsRefusedUnderTheLock(t *testing.T) {
	dir := quickstart(t)
	w := load(t, dir)
	ctx := context.Background()
	st, older := planned(t, w, PlanOptions{})
	editNode(t, dir, "worker-0", func(m map[string]any) {
		labels := m["labels"].(map[string]any)
		delete(labels, "node-role.kubernetes.io/worker")
		labels["node-role.kubernetes.io/infra"] = ""
	})
	newer, err := w.Plan(ctx, st, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if older.File.FleetFingerprint == newer.File.FleetFingerprint {
		t.Fatal("the two plans saw the same fleet: the test shows nothing")
	}
	_, res, err := w.Apply(ctx, st, older, ApplyOptions{BudgetPoll: 20 * time.Millisecond})
	if Outcome(res, err) != Incomplete || !errors.Is(err, errChangedSincePlan) || len(res.Updated) != 0 {
		t.Fatalf("older plan: updated %v, err %v; want it refused, nothing started", res, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "node.worker-0: ") || !strings.Contains(msg, "does more than the plan shown") ||
		!strings.Contains(msg, "no node was started; run mcp apply again") {
		t.Errorf("the refusal does not say what moved: %v", err)
	}
	if got := worked(t, dir); len(got) != 0 {
		t.Fatalf("the refused plan worked on %v", got)
	}
	_, res, err = w.Apply(ctx, st, newer, ApplyOptions{BudgetPoll: 20 * time.Millisecond})
	if Outcome(res, err) != Complete || len(res.Updated) != 6 {
		t.Fatalf("newer plan: outcome %v, updated %v, err %v; want all 6 updated", Outcome(res, err), res.Updated, err)
	}
}

// Without the state lock a fresh plan is carried out as made, with its own refresh's
// observation. The older of two plans does not know the claim the newer one saw on
// infra-1: for it, another apply worked on the node since, and infra-1 is not started
// (carried out with the newer plan's observation, it would be: that claim was seen, and
// released). The other nodes are updated as the older plan showed. The newer plan, made
// from the state as it was before that apply wrote it, then starts nothing.
func TestOlderOfTwoPlansIsAppliedAsPlannedWithoutTheLock(t *testing.T) {
	dir := quickstart(t)
	w := load(t, dir)
	ctx := context.Background()
	unlocked := Locking{NoLock: true}
	st, older := planned(t, w, PlanOptions{Lock: unlocked})
	workedOnElsewhere(t, w, "infra-1")
	newer, err := w.Plan(ctx, st, PlanOptions{Lock: unlocked})
	if err != nil {
		t.Fatal(err)
	}
	if _, seen := newer.Observed.Claims["infra-1"]; !seen {
		t.Fatal("the newer plan did not see infra-1's claim: the test shows nothing")
	}
	next, res, err := w.Apply(ctx, st, older, ApplyOptions{BudgetPoll: 20 * time.Millisecond, Lock: unlocked})
	if Outcome(res, err) != Incomplete || !slices.Equal(res.Skipped, []string{"infra-1"}) ||
		!strings.Contains(err.Error(), "since this apply's plan was made") {
		t.Fatalf("older plan: skipped %v, err %v; want infra-1 not started, worked on since the plan", res.Skipped, err)
	}
	want := []string{"infra-0", "worker-0", "worker-1", "worker-2", "worker-3"}
	if d := cmp.Diff(want, worked(t, dir)); d != "" {
		t.Errorf("nodes worked on (-want +got):\n%s", d)
	}
	// The state that follows the older plan's apply: the newer plan was made before it.
	_, res, err = w.Apply(ctx, next, newer, ApplyOptions{BudgetPoll: 20 * time.Millisecond, Lock: unlocked})
	if !errors.Is(err, errChangedSincePlan) || len(res.Updated) != 0 {
		t.Fatalf("newer plan, after the state moved on: updated %v, err %v; want nothing started", res.Updated, err)
	}
	if want := fmt.Sprintf("the state changed between this apply's plan and its first node (serial %d then, %d now", newer.File.Serial, next.Serial); !strings.Contains(err.Error(), want) {
		t.Errorf("the refusal does not say what moved: %v; want %q", err, want)
	}
	if d := cmp.Diff(want, worked(t, dir)); d != "" {
		t.Errorf("nodes worked on after the newer plan (-want +got):\n%s", d)
	}
}

// A saved plan is never carried out as made, even without the lock: it is derived again.
// And a fresh plan is applied only for the configuration it was made for: a plan is a
// value, which another Workspace of that configuration applies as well, but not one of
// another directory.
func TestApplyToldFreshOrSaved(t *testing.T) {
	dir := quickstart(t)
	w := load(t, dir)
	ctx := context.Background()
	unlocked := Locking{NoLock: true}
	st, p := planned(t, w, PlanOptions{Lock: unlocked})
	if !p.Fresh() || Saved(p.File).Fresh() {
		t.Fatal("Plan's plan must be fresh, Saved's not")
	}
	if _, _, err := load(t, quickstart(t)).Apply(ctx, st, p, ApplyOptions{Lock: unlocked}); err == nil || !strings.Contains(err.Error(), "was made for the configuration in") {
		t.Fatalf("a plan applied in another configuration directory: %v", err)
	}
	workedOnElsewhere(t, w, "infra-1")
	_, _, err := w.Apply(ctx, st, Saved(p.File), ApplyOptions{Lock: unlocked})
	if err == nil || !strings.Contains(err.Error(), "saved plan is stale") {
		t.Fatalf("a saved plan whose fleet changed, without the lock: %v; want it refused as stale", err)
	}
	if got := worked(t, dir); len(got) != 0 {
		t.Errorf("the stale saved plan worked on %v", got)
	}
}

// A plan approved as shown and applied later in the run (a later stage across clusters)
// is taken when the fleet moved on in a way that leaves its steps (a label no pool reads),
// which a saved plan is not; a move that changes the steps refuses it as stale.
func TestApprovedPlanTakesTheSameSteps(t *testing.T) {
	dir := quickstart(t)
	w := load(t, dir)
	ctx := context.Background()
	unlocked := Locking{NoLock: true}
	st, p := planned(t, w, PlanOptions{Lock: unlocked})
	edit := func(node string, f func(map[string]any)) { t.Helper(); editNode(t, dir, node, f) }
	edit("worker-0", func(m map[string]any) { m["labels"].(map[string]any)["example.com/unrelated"] = "moved" })
	if _, _, err := w.Apply(ctx, st, Saved(p.File), ApplyOptions{Lock: unlocked}); err == nil || !strings.Contains(err.Error(), "fleet changed") {
		t.Fatalf("saved plan on a moved fleet: %v; want it refused as stale", err)
	}
	edit("worker-1", func(m map[string]any) { m["ready"] = false }) // now the steps differ too
	_, _, err := w.Apply(ctx, st, Approved(p.File), ApplyOptions{Lock: unlocked})
	if !errors.Is(err, planfile.ErrStale) || !strings.Contains(err.Error(), "it now gives another plan") {
		t.Fatalf("approved plan whose steps changed: %v; want stale", err)
	}
	if got := worked(t, dir); len(got) != 0 {
		t.Fatalf("a refused plan worked on %v", got)
	}
	edit("worker-1", func(m map[string]any) { m["ready"] = true })
	if _, _, err := w.Apply(ctx, st, Approved(p.File), ApplyOptions{Lock: unlocked}); err != nil {
		t.Fatalf("approved plan, same steps on a moved fleet: %v", err)
	}
	if got := worked(t, dir); len(got) != 6 {
		t.Errorf("the approved plan worked on %v, want the 6 nodes", got)
	}
}
