package planner

import (
	"time"

	"github.com/mcpfleet/mcp/model"
)

// Admission: whether a node of a pool may start is a list of gates asked in order — the
// pool paused, its run stopped, its canaries, its maintenance windows, its alert gate, a
// hold on the node, another apply's claim on it, the state lock held by another apply, the
// pool's budget — each one question with a verdict that carries its reason, as kubectl
// drain's filters are. The first gate that does not let the node pass decides. The plan
// asks them of the fleet it was made from, at the time it was made; apply asks the same
// gates before each node starts, of the pool observed again then: so what the plan
// predicts (its blockers, its deferred and held nodes) and what apply does cannot drift
// apart. The gates read no clock and do no I/O: what they look at is in Facts.

// VerdictKind is what a gate says of a node.
type VerdictKind int

const (
	// Pass: this gate lets the node start.
	Pass VerdictKind = iota
	// Wait: not now; ask again (Verdict.Until, Verdict.Poll, or when the pool changes).
	Wait
	// Skip: the node is not started; the pool's other nodes go on.
	Skip
	// Stop: neither the node nor the pool's later ones start.
	Stop
	// Defer: the plan leaves the pool's nodes to a later apply (a paused pool).
	Defer
)

// Verdict is a gate's answer for one node.
type Verdict struct {
	Gate string
	Kind VerdictKind
	// Reason says why, for people ("" with Pass, and with a Stop whose cause is reported
	// already: a failed node, an interruption).
	Reason string
	// Until (Wait): look again at this time on the pacing clock (a window's opening, the
	// end of a canary soak). Poll (Wait): look again after this long on the wall clock.
	Until time.Time
	Poll  time.Duration
	// Held (Skip): only a person lets the node start (a hold); not an error.
	Held bool
	// Failed (Stop): the gate could not be asked (Prometheus did not answer), or what it
	// stops for is a failure (a canary failed): an error, where a Stop otherwise only
	// leaves nodes not started.
	Failed bool
	// ListRest (Stop): Reason is said of the nodes left, each named ("pool worker: 2 nodes
	// not started (w-1, w-2): …"); else it is the whole story.
	ListRest bool
}

// Passes reports whether v lets the node start.
func (v Verdict) Passes() bool { return v.Kind == Pass }

// Gate is one question asked before a node starts.
type Gate interface {
	Name() string
	Ask(f *Facts) Verdict
}

// Gates are the gates, in the order they are asked: first those about the pool — its run
// and the clock (PoolGates) —, then those about the node in the pool as observed
// (NodeGates).
var Gates = append(append([]Gate{}, PoolGates...), NodeGates...)

// PoolGates ask of the pool and the clock; NodeGates of the node and the pool's other
// nodes as observed.
var (
	PoolGates = []Gate{PausedGate{}, CanaryGate{}, StoppedGate{}, WindowGate{}, AlertGate{}}
	NodeGates = []Gate{HoldGate{}, ClaimGate{}, LockGate{}, BudgetGate{}}
)

// Admit asks gates in order about f.Node and returns the first verdict that does not let
// it pass (a Pass when all do).
func Admit(gates []Gate, f *Facts) Verdict {
	for _, g := range gates {
		if v := g.Ask(f); !v.Passes() {
			v.Gate = g.Name()
			return v
		}
	}
	return Verdict{Kind: Pass}
}

// Facts are what the gates look at when asked about one node. A plan fills in what it
// knows (the refreshed fleet, the claims as judged then, the plan's time); apply fills in
// the pool observed again, the clock, Prometheus's answer and its own progress.
type Facts struct {
	Node string
	Pool *PoolPlan
	// AtPlan: the facts are a plan's (the claims as judged at its refresh; nothing waited
	// for yet).
	AtPlan bool
	// Now is the time on the pacing clock (maintenance windows, soaks); Wall on the wall
	// clock (how long a gate holds a node).
	Now, Wall time.Time
	Windows   []model.Window
	// Waited is how long, on the wall clock, the node has waited on each gate (by name)
	// so far: a gate that bounds its wait gives up past its bound.
	Waited map[string]time.Duration
	// Policy is apply's: zero in a plan.
	Policy Policy
	// Run is the pool's run in apply: zero in a plan.
	Run RunFacts
	// Excluded says the node was kept out with -exclude (a plan's).
	Excluded bool
	// Disruptive says the node's steps drain or reboot it (NodePlan.Disruptive).
	Disruptive bool
	// Observed are the pool's nodes as seen when asked; Busy the nodes (other than Node)
	// taking budget besides those out of service, and why each: the apply's own, updating
	// or soaking, and those other live applies hold.
	Observed []model.Node
	Busy     map[string]string
	// Claim is Node's claim as the plan saw it and as it is now (nil: the provider keeps
	// no claims).
	Claim *ClaimFacts
	// Alerts is what the pool's alert gate's Prometheus answered (nil: not asked, as in a
	// plan).
	Alerts *AlertFacts
	// LockedApply says why no node may start without the state lock now ("": none may be
	// kept so, or the caller holds the lock).
	LockedApply string
}

// Policy is how long apply may wait, as its flags say.
type Policy struct {
	// NoWait: a closed window is not waited for (apply -no-wait).
	NoWait bool
	// BudgetWait bounds a wait for room in the budget, for a claim to lapse, and for a
	// window that closed mid-rollout to open again (-budget-wait). Poll is how often room
	// is looked for; AlertPoll how often Prometheus is asked while its gate holds a node.
	BudgetWait, Poll, AlertPoll time.Duration
}

// RunFacts are what a pool's run in apply has seen so far.
type RunFacts struct {
	// Stopped: the pool stopped (max_failures nodes failed, or alerts fired after a node);
	// StopReason says why when it is not reported elsewhere (the alerts), StopFailed that
	// Prometheus did not answer.
	Stopped    bool
	StopReason string
	StopFailed bool
	// HadWindow: a window of the pool was seen open in this apply.
	HadWindow bool
	// Canaries: the pool's canary nodes still running, whether one failed, and when their
	// soak ends (zero: no soak, or not over yet).
	CanariesRunning int
	CanaryFailed    string // the canary nodes, when one failed
	SoakUntil       time.Time
	SoakWhy         string
	Canary          bool // Node is a canary node
	// Rest counts the pool's nodes left to start, Node with them.
	Rest int
}

// ClaimFacts are a node's claim as the plan saw it and as it is now, with how each was
// judged.
type ClaimFacts struct {
	// Seen is the claim when the plan was made, judged then (nil claim: none); at the plan
	// itself, Now.
	Seen JudgedClaim
	// Now is the claim as observed when asked, judged then; Mine says it is this apply's.
	Now  JudgedClaim
	Mine bool
	// Elsewhere: Now names a process that this run cannot check (another machine, boot
	// or PID namespace): its liveness is its lease, or the lock it was taken under.
	Elsewhere bool
}

// JudgedClaim is a claim with whether its apply was judged to run, and how.
type JudgedClaim struct {
	Claim *model.Claim
	Live  bool
	Why   string
}

// AlertFacts are what the pool's alert gate's Prometheus answered: the counted alerts
// firing, or why it could not be asked.
type AlertFacts struct {
	Holding []model.Alert
	Err     error
}

// claimFacts are node's claim as the plan's refresh saw and judged it (nil: none seen).
func (in Input) claimFacts(node string) *ClaimFacts {
	c, ok := in.Claims[node]
	if !ok {
		return nil
	}
	return &ClaimFacts{Seen: c, Now: c}
}
