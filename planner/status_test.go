package planner

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

// Each node counts where `oc get mcp` would count it: updated (runs the pool's config and
// is settled), ready (updated and in service), updating (told to move, or Working),
// degraded; held is counted beside the rest.
func TestMakeStatusCounts(t *testing.T) {
	with := func(n model.Node, f func(*model.Node)) model.Node { f(&n); return n }
	fleet := &model.Fleet{Nodes: []model.Node{
		with(node("w-done", "worker", "a", 0), func(n *model.Node) { n.CurrentConfig, n.State = "new", model.StateDone }),
		with(node("w-cordoned", "worker", "a", 0), func(n *model.Node) {
			n.CurrentConfig, n.State, n.Unschedulable = "new", model.StateDone, true
		}),
		with(node("w-told", "worker", "a", 0), func(n *model.Node) {
			n.CurrentConfig, n.DesiredConfig, n.State, n.Unschedulable = "old", "new", model.StateDone, true
		}),
		with(node("w-working", "worker", "a", 0), func(n *model.Node) {
			n.CurrentConfig, n.DesiredConfig, n.State = "old", "new", model.StateWorking
		}),
		with(node("w-degraded", "worker", "a", 0), func(n *model.Node) {
			n.CurrentConfig, n.DesiredConfig, n.State, n.Reason = "old", "new", model.StateDegraded, "disk full"
		}),
		with(node("w-old-held", "worker", "a", 0), func(n *model.Node) {
			n.CurrentConfig, n.State = "old", model.StateDone
			n.Labels["mcpfleet.io/hold"] = "db migration"
		}),
		with(node("w-staged", "worker", "a", 0), func(n *model.Node) {
			n.CurrentConfig, n.DesiredConfig, n.State, n.Staging = "old", "new", model.StateDone, true
		}),
		with(node("i-0", "infra", "a", 0), func(n *model.Node) { n.Ready = false }),
		node("stray", "none", "a", 0),
	}}
	d := desired(model.Pool{Name: "worker"}, model.Pool{Name: "infra", Paused: model.PauseAll})
	s, err := MakeStatus(d, map[string]string{"worker": "new"}, nil, fleet)
	if err != nil {
		t.Fatal(err)
	}
	want := []PoolStatus{
		{Name: "worker", Config: "new", Machines: 7, Updated: 2, Updating: 2, Degraded: 1, Held: 1, Ready: 1, Created: t0},
		{Name: "infra", Machines: 1, Paused: true, Created: t0},
	}
	if diff := cmp.Diff(want, s.Pools); diff != "" {
		t.Errorf("pools (-want +got):\n%s", diff)
	}
	var names []string
	for _, n := range s.Nodes {
		names = append(names, n.Pool+"/"+n.Name)
	}
	wantNames := []string{"worker/w-cordoned", "worker/w-degraded", "worker/w-done", "worker/w-old-held",
		"worker/w-staged", "worker/w-told", "worker/w-working", "infra/i-0", "/stray"}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("node order (-want +got):\n%s", diff)
	}
	byName := map[string]NodeStatus{}
	for _, n := range s.Nodes {
		byName[n.Name] = n
	}
	if n := byName["w-told"]; n.Current != "old" || n.Desired != "new" || n.Condition != "cordoned, updating" {
		t.Errorf("w-told: %+v", n)
	}
	if n := byName["w-old-held"]; !n.Held || n.HoldReason != "db migration" || n.Desired != "old" {
		t.Errorf("w-old-held: %+v", n)
	}
	if n := byName["w-degraded"]; n.State != model.StateDegraded || n.Reason != "disk full" {
		t.Errorf("w-degraded: %+v", n)
	}
	// Staged ahead for new, it runs old in service: not updating, not out of service.
	if n := byName["w-staged"]; !n.Staged || n.Condition != "" || n.Desired != "new" {
		t.Errorf("w-staged: %+v", n)
	}
}

func TestMakeStatusRefusesANodeInTwoPools(t *testing.T) {
	n := node("both", "worker", "a", 0)
	n.Labels["node-role.kubernetes.io/infra"] = ""
	_, err := MakeStatus(desired(model.Pool{Name: "worker"}, model.Pool{Name: "infra"}), nil, nil, &model.Fleet{Nodes: []model.Node{n}})
	if err == nil {
		t.Fatal("a node in two pools was given a status")
	}
}

// The pool's conditions, as oc get mcp shows them: Updated only when every node is;
// a node's last failed apply is its claim's record; the pool's age is its oldest node's.
func TestStatusConditionsAndLastFailure(t *testing.T) {
	done := node("w-0", "worker", "a", 5)
	done.CurrentConfig, done.State = "new", model.StateDone
	failed := node("w-1", "worker", "a", 2)
	failed.CurrentConfig, failed.State = "old", model.StateDone
	failed.Claim = &model.Claim{Apply: "a1", Since: t0, Released: t0, Failed: "node w-1: drain: eviction refused"}
	s, err := MakeStatus(desired(model.Pool{Name: "worker"}), map[string]string{"worker": "new"}, nil, &model.Fleet{Nodes: []model.Node{done, failed}})
	if err != nil {
		t.Fatal(err)
	}
	p := s.Pools[0]
	if u, ing, deg := p.Conditions(); u || ing || deg {
		t.Errorf("conditions %v %v %v, want all false (w-1 is on the old config)", u, ing, deg)
	}
	if !p.Created.Equal(failed.Created) {
		t.Errorf("pool created %v, want its oldest node's %v", p.Created, failed.Created)
	}
	if got := s.Nodes[1].LastFailure; got != "node w-1: drain: eviction refused" {
		t.Errorf("last failure %q", got)
	}
	failed.Claim.Released = time.Time{} // held: a running apply's, not a record
	s, _ = MakeStatus(desired(model.Pool{Name: "worker"}), nil, nil, &model.Fleet{Nodes: []model.Node{failed}})
	if s.Nodes[0].LastFailure != "" {
		t.Errorf("a held claim's failure shown: %q", s.Nodes[0].LastFailure)
	}
	all := PoolStatus{Machines: 2, Updated: 2}
	if u, _, _ := all.Conditions(); !u {
		t.Error("every node updated, and not Updated")
	}
}
