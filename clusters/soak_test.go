package clusters

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/state"
)

// The gate judges a later cluster's pool by what its config, as the earlier cluster renders
// it, did there: not run, soaking (how long is left), unhealthy, or soaked; -ignore-soak
// lets a refused pool through, saying so; a pool the plan does not change is not judged.
func TestGate(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	canary := func(ran map[string]*state.Ran) []Runs {
		return []Runs{{Member: &Member{Cluster: model.Cluster{Name: "canary", Stage: "canary"},
			Stage:     model.Stage{Name: "canary", Soak: time.Hour},
			Workspace: &engine.Workspace{Rendered: map[string]*model.Rendered{"worker": {Name: "rendered-worker-c"}}}}, Ran: ran}}
	}
	run := func(since time.Duration, unhealthy string) map[string]*state.Ran {
		return map[string]*state.Ran{"rendered-worker-c": {Pool: "worker", Nodes: map[string]state.NodeRan{
			"worker-0": {Since: now.Add(-since), Seen: now, Unhealthy: unhealthy},
			"worker-1": {Since: now.Add(-since / 2), Seen: now}}}}
	}
	plan := &planner.Rollout{Pools: []planner.PoolPlan{{Name: "worker", Rendered: "rendered-worker-p", ReRendered: true}, {Name: "infra", Rendered: "rendered-infra-p"}}}
	for _, c := range []struct {
		name    string
		ran     map[string]*state.Ran
		ignore  bool
		refused bool
		want    string
	}{
		{"not run", nil, false, true, "rendered-worker-p has not run on any cluster of stage canary; prod waits for it to soak 1h there"},
		{"soaking", run(20*time.Minute, ""), false, true, "rendered-worker-c (rendered-worker-p as canary renders it, with its values) has soaked 20m of 1h on canary (2 nodes, healthy); prod waits until 10:40 UTC"},
		{"unhealthy", run(2*time.Hour, "went Degraded: chronyd failed"), false, true, "did not stay healthy on canary: node worker-0 went Degraded: chronyd failed; prod does not take it"},
		{"soaked", run(70*time.Minute, ""), false, false, "has soaked 1h10m of 1h on canary (2 nodes, healthy)"},
		{"overridden", nil, true, true, "has not run on any cluster of stage canary"},
	} {
		notes := Gate("prod", plan, canary(c.ran), now, c.ignore)
		if len(notes) != 1 || notes[0].Pool != "worker" {
			t.Errorf("%s: notes %+v, want one for pool worker (infra does not change)", c.name, notes)
			continue
		}
		n := notes[0]
		if n.Refused != c.refused || n.Overridden != c.ignore || !strings.Contains(n.Reason, c.want) {
			t.Errorf("%s: %+v; want refused %v, overridden %v, reason with %q", c.name, n, c.refused, c.ignore, c.want)
		}
		if got := len(Refusals(notes)); got != map[bool]int{true: 1}[c.refused && !c.ignore] {
			t.Errorf("%s: %d refusals", c.name, got)
		}
	}
}

// A stage whose max_failed_clusters let promotion go on past a failed cluster does not
// hold the next stage back for it: up to that many of its clusters may not have run the
// config, or not stayed healthy, when the others soaked it; more refuse, and a cluster
// still soaking refuses whatever the budget.
func TestGateToleratesAStagesFailedClusters(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	member := func(name string, maxFailed int) *Member {
		return &Member{Cluster: model.Cluster{Name: name, Stage: "staging"},
			Stage:     model.Stage{Name: "staging", Soak: time.Hour, MaxFailedClusters: maxFailed},
			Workspace: &engine.Workspace{Rendered: map[string]*model.Rendered{"worker": {Name: "rendered-worker-p"}}}}
	}
	ran := func(since time.Duration, unhealthy string) map[string]*state.Ran {
		return map[string]*state.Ran{"rendered-worker-p": {Pool: "worker", Nodes: map[string]state.NodeRan{
			"worker-0": {Since: now.Add(-since), Seen: now, Unhealthy: unhealthy}}}}
	}
	plan := &planner.Rollout{Pools: []planner.PoolPlan{{Name: "worker", Rendered: "rendered-worker-p", ReRendered: true}}}
	for _, c := range []struct {
		name      string
		maxFailed int
		b         map[string]*state.Ran
		refused   bool
		want      string
	}{
		{"not run, budget 0", 0, nil, true, "has not run on staging-b"},
		{"not run, budget 1", 1, nil, false, "within stage staging's max_failed_clusters (1): rendered-worker-p has not run on staging-b"},
		{"unhealthy, budget 1", 1, ran(2*time.Hour, "went Degraded: x"), false, "within stage staging's max_failed_clusters (1)"},
		{"soaking, budget 1", 1, ran(10*time.Minute, ""), true, "has soaked 10m of 1h on staging-b"},
	} {
		runs := []Runs{{Member: member("staging-a", c.maxFailed), Ran: ran(2*time.Hour, "")}, {Member: member("staging-b", c.maxFailed), Ran: c.b}}
		notes := Gate("prod", plan, runs, now, false)
		if len(notes) != 1 || notes[0].Refused != c.refused || !strings.Contains(notes[0].Reason, c.want) {
			t.Errorf("%s: %+v; want refused %v, reason with %q", c.name, notes, c.refused, c.want)
		}
	}
}

// A plan across clusters reads an earlier cluster's records from the refresh its own plan
// of that cluster made: RunsOf folds those nodes in (a node still on its config extends its
// run to now) and asks the cluster's provider nothing — the workspace here has none, and a
// second refresh would fail. A cluster that could not be planned keeps its error.
func TestRunsOfReadsThePlansRefresh(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	st := state.New()
	st.Rendered = map[string]*model.Rendered{"rendered-worker-c": {Name: "rendered-worker-c"}}
	st.Reached("rendered-worker-c", "worker", "worker-0", now.Add(-2*time.Hour))
	ws := &engine.Workspace{Desired: &model.Desired{Pools: []model.Pool{{Name: "worker", NodeSelector: map[string]string{"role": "worker"}}}}}
	seen := []model.Node{{Name: "worker-0", Labels: map[string]string{"role": "worker"}, CurrentConfig: "rendered-worker-c", DesiredConfig: "rendered-worker-c", State: model.StateDone}}
	m := &Member{Cluster: model.Cluster{Name: "canary"}, Workspace: ws}
	failed := &Member{Cluster: model.Cluster{Name: "other"}}
	runs := RunsOf([]Planned{
		{Member: m, State: st, Plan: &engine.Plan{Observed: &engine.Observed{Nodes: seen}}},
		{Member: failed, Err: errUnreachableForTest},
	}, now)
	if len(runs) != 2 || runs[0].Err != nil || runs[1].Err != errUnreachableForTest {
		t.Fatalf("runs %+v", runs)
	}
	n := runs[0].Ran["rendered-worker-c"].Nodes["worker-0"]
	if !n.Since.Equal(now.Add(-2*time.Hour)) || !n.Seen.Equal(now) {
		t.Errorf("worker-0's run %+v: want since 2h ago, seen now (from the plan's refresh)", n)
	}
	if got := st.Ran["rendered-worker-c"].Nodes["worker-0"].Seen; got.Equal(now) {
		t.Errorf("the plan's state was changed (seen %v): the records are folded into a copy", got)
	}
}

var errUnreachableForTest = errors.New("unreachable")
