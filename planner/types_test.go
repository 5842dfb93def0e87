package planner

import "testing"

func TestPlanHasChanges(t *testing.T) {
	for _, c := range []struct {
		name string
		plan Rollout
		want bool
	}{
		{"empty", Rollout{}, false},
		{"nothing to do", Rollout{Pools: []PoolPlan{{Name: "w"}}, Nodes: []NodePlan{{Name: "n", Action: NodeNoOp}}}, false},
		{"a node updates", Rollout{Nodes: []NodePlan{{Name: "a", Action: NodeNoOp}, {Name: "b", Action: NodeUpdate}}}, true},
		{"a node resumes", Rollout{Nodes: []NodePlan{{Name: "a", Action: NodeResume}}}, true},
		// A new rendered config moves the pool's boot-server pointer even when no node
		// changes (a pool with no nodes yet).
		{"only a pool re-rendered", Rollout{Pools: []PoolPlan{{Name: "w", ReRendered: true}}}, true},
	} {
		if got := c.plan.HasChanges(); got != c.want {
			t.Errorf("%s: HasChanges() = %v, want %v", c.name, got, c.want)
		}
	}
}
