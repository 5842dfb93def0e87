package planner

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
)

// Each gate is one question, with a verdict that says why. Asked at the plan, a wait for
// room or for a claim is a prediction (the plan blocks or defers); asked by apply, it is
// bounded by -budget-wait.
func TestGates(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC) // a Tuesday
	sat := model.Window{Days: []time.Weekday{time.Saturday}, Start: 2 * time.Hour, Duration: 4 * time.Hour, Location: time.UTC, Zone: "UTC"}
	pool := &PoolPlan{Name: "worker", MaxUnavailable: 1}
	paused := &PoolPlan{Name: "worker", MaxUnavailable: 1, Paused: true}
	gated := &PoolPlan{Name: "worker", MaxUnavailable: 1, AlertGate: &model.AlertGate{PrometheusURL: "http://prom", Timeout: time.Minute}}
	down := node("w-1", "worker", "a", 1)
	down.Ready = false
	held := node("w-0", "worker", "a", 0)
	held.Hold = "debugging"
	firing := &AlertFacts{Holding: []model.Alert{{Labels: map[string]string{"alertname": "NodeDown"}}}}
	other := &model.Claim{Apply: "B", Host: "you@there", Since: now}
	apply := Policy{BudgetWait: time.Minute, Poll: time.Second, AlertPoll: time.Second}
	for _, tc := range []struct {
		name string
		gate Gate
		f    Facts
		kind VerdictKind
		why  string
	}{
		{"paused", PausedGate{}, Facts{Pool: paused}, Defer, "pool worker is paused"},
		{"not paused", PausedGate{}, Facts{Pool: pool}, Pass, ""},
		{"canary running", CanaryGate{}, Facts{Pool: pool, Run: RunFacts{CanariesRunning: 1}}, Wait, ""},
		{"canary failed", CanaryGate{}, Facts{Pool: pool, Run: RunFacts{CanaryFailed: "w-0", Rest: 2}}, Stop,
			"pool worker: a canary node failed (canary: w-0): the other 2 nodes not started"},
		{"canary soaking", CanaryGate{}, Facts{Pool: pool, Now: now, Run: RunFacts{SoakUntil: now.Add(time.Hour), SoakWhy: "canary soak 1h"}}, Wait, "canary soak 1h"},
		{"a canary itself", CanaryGate{}, Facts{Pool: pool, Run: RunFacts{Canary: true, CanariesRunning: 1}}, Pass, ""},
		{"stopped after alerts", StoppedGate{}, Facts{Pool: pool, Run: RunFacts{Stopped: true, StopReason: "alert gate: …"}}, Stop, "alert gate: …"},
		{"window closed, first opening", WindowGate{}, Facts{Pool: pool, Now: now, Windows: []model.Window{sat}, Policy: apply}, Wait,
			"maintenance window closed (sat 02:00 for 4h (UTC)): next opening Sat 2026-11-28 02:00 UTC (in 3d14h)"},
		{"window closed mid-rollout", WindowGate{}, Facts{Pool: pool, Now: now, Windows: []model.Window{sat}, Policy: apply, Run: RunFacts{HadWindow: true}}, Stop,
			"later than -budget-wait 1m allows waiting"},
		{"window closed, -no-wait", WindowGate{}, Facts{Pool: pool, Now: now, Windows: []model.Window{sat}, Policy: Policy{NoWait: true}, Run: RunFacts{HadWindow: true}}, Stop,
			"-no-wait: not waiting for it"},
		{"alerts firing", AlertGate{}, Facts{Pool: gated, Alerts: firing, Policy: apply, Wall: now}, Wait, "alert gate: 1 alert firing at http://prom: NodeDown"},
		{"alerts firing past the timeout", AlertGate{}, Facts{Pool: gated, Alerts: firing, Policy: apply, Waited: map[string]time.Duration{"alerts": time.Minute}}, Stop,
			"still after 1m, the alert_gate's timeout"},
		{"Prometheus not answering", AlertGate{}, Facts{Pool: gated, Alerts: &AlertFacts{Err: errors.New("connection refused")}, Waited: map[string]time.Duration{"alerts": time.Minute}}, Stop,
			"alert gate: connection refused"},
		{"alerts not asked (a plan)", AlertGate{}, Facts{Pool: gated}, Pass, ""},
		{"held, at the plan", HoldGate{}, Facts{AtPlan: true, Node: "w-0", Pool: pool, Observed: []model.Node{held}}, Skip, "debugging (mcpfleet.io/hold)"},
		{"held since the plan", HoldGate{}, Facts{Node: "w-0", Pool: pool, Observed: []model.Node{held}}, Skip,
			`put on hold after the plan was made: not started (mcpfleet.io/hold="debugging")`},
		{"excluded", HoldGate{}, Facts{AtPlan: true, Node: "w-0", Pool: pool, Excluded: true}, Skip, "excluded with -exclude"},
		{"claimed by a live apply, at the plan", ClaimGate{}, Facts{AtPlan: true, Node: "w-0", Pool: pool,
			Claim: &ClaimFacts{Now: JudgedClaim{Claim: other, Live: true, Why: "its process runs"}}}, Wait, "held by apply B"},
		{"claimed since the plan", ClaimGate{}, Facts{Node: "w-0", Pool: pool, Claim: &ClaimFacts{Now: JudgedClaim{Claim: other}}}, Skip,
			"claimed it since this apply's plan was made"},
		{"a live claim elsewhere, unchanged since the plan", ClaimGate{}, Facts{Node: "w-0", Pool: pool, Policy: apply,
			Claim: &ClaimFacts{Seen: JudgedClaim{Claim: other, Live: true}, Now: JudgedClaim{Claim: other, Live: true, Why: "until 12:02"}, Elsewhere: true}},
			Wait, "node w-0 is held by apply B"},
		{"that claim lapsed", ClaimGate{}, Facts{Node: "w-0", Pool: pool,
			Claim: &ClaimFacts{Seen: JudgedClaim{Claim: other, Live: true}, Now: JudgedClaim{Claim: other}, Elsewhere: true}}, Pass, ""},
		{"an apply holding the lock runs", LockGate{}, Facts{Pool: pool, Node: "w-0", Policy: apply, LockedApply: "an apply that holds the state lock runs"}, Wait,
			"an apply that holds the state lock runs"},
		{"no room", BudgetGate{}, Facts{Node: "w-0", Pool: pool, Policy: apply, Observed: []model.Node{node("w-0", "worker", "a", 0), down}}, Wait,
			"max_unavailable 1: 1 of the pool's nodes is out of service: w-1 (NotReady)"},
		{"no room within -budget-wait", BudgetGate{}, Facts{Node: "w-0", Pool: pool, Policy: apply, Waited: map[string]time.Duration{"budget": time.Minute},
			Observed: []model.Node{node("w-0", "worker", "a", 0), down}}, Stop, "pool worker: node w-0 and the rest not started: no room in the budget within 1m0s"},
		{"no room, at the plan: no bound", BudgetGate{}, Facts{AtPlan: true, Node: "w-0", Pool: pool, Observed: []model.Node{node("w-0", "worker", "a", 0), down}}, Wait, "max_unavailable 1"},
		{"out of service already: its own slot", BudgetGate{}, Facts{Node: "w-1", Pool: pool, Observed: []model.Node{node("w-0", "worker", "a", 0), down}}, Pass, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.gate.Ask(&tc.f)
			if v.Kind != tc.kind || !strings.Contains(v.Reason, tc.why) {
				t.Errorf("%s: %+v; want kind %d with %q", tc.gate.Name(), v, tc.kind, tc.why)
			}
		})
	}
}

// The plan asks the gates apply asks: a held node is kept out, a node another live apply
// holds is blocked, a paused pool's nodes and those the budget has no room for are
// deferred — each as the gate that apply asks before the node starts says, given what the
// plan saw.
func TestPlanAsksTheGates(t *testing.T) {
	tg := target("worker", file("/etc/a", "x"))
	plan := func(t *testing.T, pool model.Pool, claims map[string]JudgedClaim, change func([]model.Node)) *Rollout {
		t.Helper()
		n := []model.Node{node("w-0", "worker", "a", 0), node("w-1", "worker", "a", 1), node("w-2", "worker", "a", 2)}
		change(n)
		p, err := MakePlan(Input{Desired: desired(pool), Rendered: map[string]*model.Rendered{"worker": tg},
			Fleet: &model.Fleet{Nodes: n}, Claims: claims})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	worker := model.Pool{Name: "worker", MaxUnavailable: model.IntOrPercent{Value: 1}}
	p := plan(t, worker, map[string]JudgedClaim{"w-1": {Claim: &model.Claim{Apply: "B"}, Live: true, Why: "its process runs"}},
		func(n []model.Node) { n[0].Hold = "debugging" })
	byName := map[string]NodePlan{}
	for _, np := range p.Nodes {
		byName[np.Name] = np
	}
	if np := byName["w-0"]; np.Held != "debugging (mcpfleet.io/hold)" || np.Changed() {
		t.Errorf("held w-0: held %q, action %s", np.Held, np.Action)
	}
	if b := byName["w-1"].Blockers; len(b) != 1 || b[0].Kind != BlockClaim || b[0].Message != "held by apply B (pid 0 on , since 00:00:00): its process runs" &&
		!strings.HasPrefix(b[0].Message, "held by apply B") {
		t.Errorf("w-1 held by a live apply: blockers %+v", b)
	}
	paused := worker
	paused.Paused = model.PauseAll
	if p := plan(t, paused, nil, func([]model.Node) {}); len(p.Pools[0].Blockers) != 1 || p.Pools[0].Blockers[0].Message != "pool worker is paused: 3 node changes deferred" {
		t.Errorf("paused: %+v", p.Pools[0].Blockers)
	}
	p = plan(t, worker, nil, func(n []model.Node) { n[2].Ready = false })
	for _, np := range p.Nodes {
		if want := np.Condition == ""; np.Deferred != want {
			t.Errorf("max_unavailable 1, w-2 NotReady: %s deferred %v", np.Name, np.Deferred)
		}
		// What apply's budget gate says of the node, given what the plan saw.
		v := (BudgetGate{}).Ask(&Facts{Node: np.Name, Pool: &p.Pools[0], Observed: []model.Node{node("w-0", "worker", "a", 0),
			node("w-1", "worker", "a", 1), func() model.Node { d := node("w-2", "worker", "a", 2); d.Ready = false; return d }()},
			Policy: Policy{BudgetWait: time.Minute, Poll: time.Second}})
		if np.Deferred == v.Passes() {
			t.Errorf("%s: the plan defers it %v, apply's budget gate says %+v", np.Name, np.Deferred, v)
		}
	}
}

// A FleetLock client's slot on a node is waited for, never a reason to skip it: taken
// since the plan and live, apply waits; given back (released) or lapsed, the node starts —
// its reboot for its own updater changed nothing mcp planned.
func TestClaimGateWaitsForFleetLock(t *testing.T) {
	pool := &PoolPlan{Name: "worker", MaxUnavailable: 1}
	slot := &model.Claim{Apply: model.FleetLockPrefix + "c988", Since: t0, Expires: t0.Add(time.Hour)}
	done := *slot
	done.Released = t0.Add(time.Minute)
	for _, tc := range []struct {
		name string
		now  JudgedClaim
		kind VerdictKind
	}{
		{"taken since the plan, live", JudgedClaim{Claim: slot, Live: true, Why: "a FleetLock reboot slot"}, Wait},
		{"given back since", JudgedClaim{Claim: &done}, Pass},
		{"lapsed", JudgedClaim{Claim: slot}, Pass},
	} {
		f := &Facts{Node: "w-0", Pool: pool, Policy: Policy{BudgetWait: time.Minute, Poll: time.Second}, Waited: map[string]time.Duration{},
			Claim: &ClaimFacts{Now: tc.now, Elsewhere: true}}
		if v := (ClaimGate{}).Ask(f); v.Kind != tc.kind {
			t.Errorf("%s: %+v; want kind %v", tc.name, v, tc.kind)
		}
	}
}

// kured's lock is waited for as a FleetLock slot is: live, apply waits, and the plan names
// it as taking a slot; released or lapsed, the node starts. A lock the plan saw that has
// gone leaves the node to this apply, unless another apply claimed it since.
func TestClaimGateWaitsForKured(t *testing.T) {
	pool := &PoolPlan{Name: "worker", MaxUnavailable: 1}
	lock := &model.Claim{Apply: model.KuredPrefix + "w-0", Host: "DaemonSet kube-system/kured", Since: t0}
	record := &model.Claim{Apply: "A0", Since: t0, Released: t0}
	other := &model.Claim{Apply: "A9", Since: t0, Expires: t0.Add(time.Hour)}
	live := JudgedClaim{Claim: lock, Live: true, Why: "kured's lock has no TTL"}
	for _, tc := range []struct {
		name      string
		seen, now JudgedClaim
		atPlan    bool
		kind      VerdictKind
	}{
		{"at plan, live", JudgedClaim{}, live, true, Wait},
		{"taken since the plan, live", JudgedClaim{Claim: record}, live, false, Wait},
		{"held at the plan and still", live, live, false, Wait},
		{"lapsed", JudgedClaim{Claim: record}, JudgedClaim{Claim: lock, Why: "lapsed"}, false, Pass},
		{"released since the plan", live, JudgedClaim{Claim: record}, false, Pass},
		{"released, and another apply claimed it since", live, JudgedClaim{Claim: other, Live: true, Why: "its process runs"}, false, Skip},
	} {
		f := &Facts{Node: "w-0", Pool: pool, AtPlan: tc.atPlan, Policy: Policy{BudgetWait: time.Minute, Poll: time.Second}, Waited: map[string]time.Duration{},
			Claim: &ClaimFacts{Seen: tc.seen, Now: tc.now, Elsewhere: true}}
		v := (ClaimGate{}).Ask(f)
		if v.Kind != tc.kind {
			t.Errorf("%s: %+v; want kind %v", tc.name, v, tc.kind)
		}
		if tc.atPlan && (!strings.Contains(v.Reason, "kured (lock on DaemonSet kube-system/kured") || !strings.Contains(v.Reason, "until kured releases it")) {
			t.Errorf("%s: reason %q does not name kured's lock and what ends it", tc.name, v.Reason)
		}
	}
}
