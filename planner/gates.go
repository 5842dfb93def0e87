package planner

import (
	"fmt"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/model"
)

// The gates, each one question (Admission). A plan leaves Policy and Run zero and Alerts
// and LockedApply unset: what only apply can know passes.

// PausedGate: does the node's pool's pause hold it? paused = true holds every node;
// paused = "disruptive" those whose steps drain or reboot them (Facts.Disruptive). Held
// nodes are left to a later apply.
type PausedGate struct{}

func (PausedGate) Name() string { return "paused" }

func (PausedGate) Ask(f *Facts) Verdict {
	mode := model.PauseOff
	switch p := f.Pool.Pause; {
	case p != nil:
		mode = p.Mode
	case f.Pool.Paused: // a pool plan that says only that it is paused holds everything
		mode = model.PauseAll
	}
	switch {
	case !mode.Holds(f.Disruptive):
		return Verdict{}
	case mode == model.PauseDisruptive:
		return Verdict{Kind: Defer, Reason: fmt.Sprintf("pool %s is paused for disruptive changes (paused = \"disruptive\") and the node's steps drain or reboot it", f.Pool.Name)}
	}
	return Verdict{Kind: Defer, Reason: fmt.Sprintf("pool %s is paused", f.Pool.Name)}
}

// CanaryGate: may the pool's other nodes start after its canaries? Not while a canary
// runs; not at all once one failed; not before the canary soak has passed.
type CanaryGate struct{}

func (CanaryGate) Name() string { return "canary" }

func (CanaryGate) Ask(f *Facts) Verdict {
	r := &f.Run
	switch {
	case r.Canary || r.Stopped && r.CanaryFailed == "":
		return Verdict{} // a canary; or a pool stopped otherwise (StoppedGate says why)
	case r.CanariesRunning > 0:
		return Verdict{Kind: Wait}
	case r.CanaryFailed != "":
		return Verdict{Kind: Stop, Failed: true, Reason: fmt.Sprintf("pool %s: a canary node failed (canary: %s): the other %s not started",
			f.Pool.Name, r.CanaryFailed, NodeCount(r.Rest))}
	case f.Now.Before(r.SoakUntil):
		return Verdict{Kind: Wait, Until: r.SoakUntil, Reason: r.SoakWhy}
	}
	return Verdict{}
}

// StoppedGate: has the pool's run stopped — max_failures nodes failed, or the alert gate
// found alerts firing after a node finished?
type StoppedGate struct{}

func (StoppedGate) Name() string { return "stopped" }

func (StoppedGate) Ask(f *Facts) Verdict {
	if !f.Run.Stopped {
		return Verdict{}
	}
	return Verdict{Kind: Stop, Reason: f.Run.StopReason, ListRest: f.Run.StopReason != "", Failed: f.Run.StopFailed}
}

// WindowGate: is one of the pool's maintenance windows open? The first opening is waited
// for (running apply asks for that) unless -no-wait; once the pool has had its window in
// this apply, a window that closes ends its rollout unless the next opening comes within
// -budget-wait — with -no-wait, at once.
type WindowGate struct{}

func (WindowGate) Name() string { return "window" }

func (WindowGate) Ask(f *Facts) Verdict {
	open, _, next := WindowState(f.Windows, f.Now)
	switch {
	case open || len(f.Windows) == 0:
		return Verdict{}
	case next.IsZero(): // windows without days (the configuration refuses them)
		return Verdict{Kind: Stop, Reason: fmt.Sprintf("pool %s: node %s and the rest not started: its maintenance windows never open", f.Pool.Name, f.Node)}
	}
	wait := Verdict{Kind: Wait, Until: next,
		Reason: fmt.Sprintf("maintenance window closed (%s): next opening %s", DescribeWindows(f.Windows), WhenFrom(next, f.Now))}
	if f.AtPlan || !f.Run.HadWindow && !f.Policy.NoWait {
		return wait
	}
	why := fmt.Sprintf("its maintenance window closed during the rollout (%s); next opening %s", DescribeWindows(f.Windows), WhenFrom(next, f.Now))
	switch {
	case f.Policy.NoWait:
		return Verdict{Kind: Stop, ListRest: true, Reason: why + ": -no-wait: not waiting for it; run mcp apply then"}
	case next.Sub(f.Now) > f.Policy.BudgetWait:
		return Verdict{Kind: Stop, ListRest: true, Reason: fmt.Sprintf("%s, later than -budget-wait %s allows waiting: run mcp apply then",
			why, model.ShortDuration(f.Policy.BudgetWait))}
	}
	return wait
}

// AlertGate: does none of the alerts the pool's alert_gate counts fire? It waits up to the
// gate's timeout; Prometheus not answering holds the node as a firing alert does (the
// gate fails closed), and ends as an error.
type AlertGate struct{}

func (AlertGate) Name() string { return "alerts" }

func (AlertGate) Ask(f *Facts) Verdict {
	g, a := f.Pool.AlertGate, f.Alerts
	if g == nil || a == nil || a.Err == nil && len(a.Holding) == 0 {
		return Verdict{}
	}
	why := AlertWords(*g, a.Holding, a.Err)
	waited := f.Waited["alerts"]
	if waited >= g.Timeout {
		return Verdict{Kind: Stop, ListRest: true, Failed: a.Err != nil, Reason: fmt.Sprintf("%s (%s)", why, heldFor(g.Timeout))}
	}
	deadline := f.Wall.Add(g.Timeout - waited)
	return Verdict{Kind: Wait, Poll: min(f.Policy.AlertPoll, g.Timeout-waited),
		Reason: fmt.Sprintf("%s: waiting until %s at most", why, deadline.Format("15:04:05 MST"))}
}

// AlertWords says what a look at an alert gate found: the counted alerts firing, or why
// Prometheus could not be asked.
func AlertWords(g model.AlertGate, holding []model.Alert, err error) string {
	if err != nil {
		return "alert gate: " + err.Error()
	}
	noun := "alerts"
	if len(holding) == 1 {
		noun = "alert"
	}
	return fmt.Sprintf("alert gate: %d %s firing at %s: %s", len(holding), noun, g.PrometheusURL, model.DescribeAlerts(holding))
}

// heldFor says how long the gate held a node that is left not started.
func heldFor(timeout time.Duration) string {
	if timeout == 0 {
		return "looked once: the alert_gate's timeout is 0s"
	}
	return "still after " + model.ShortDuration(timeout) + ", the alert_gate's timeout"
}

// HoldGate: is the node kept out — on hold (its mcpfleet.io/hold label or annotation,
// which wins), or -exclude'd? A hold is somebody's word that the node must not be touched.
type HoldGate struct{}

func (HoldGate) Name() string { return "hold" }

func (HoldGate) Ask(f *Facts) Verdict {
	why, held := "", false
	if n := f.node(); n != nil {
		why, held = n.HoldReason()
	}
	switch {
	case !held && f.Excluded:
		return Verdict{Kind: Skip, Held: true, Reason: "excluded with -exclude"}
	case !held:
		return Verdict{}
	case f.AtPlan:
		if why == "" {
			why = "no reason given"
		}
		return Verdict{Kind: Skip, Held: true, Reason: why + " (" + model.HoldKey + ")"}
	}
	return Verdict{Kind: Skip, Held: true, Reason: fmt.Sprintf("put on hold after the plan was made: not started (%s=%q)", model.HoldKey, why)}
}

// node is the observed Node (nil: not observed).
func (f *Facts) node() *model.Node {
	for i := range f.Observed {
		if f.Observed[i].Name == f.Node {
			return &f.Observed[i]
		}
	}
	return nil
}

// ClaimGate: does another apply hold the node, or has one worked on it since the plan was
// made? A live one's node waits for its claim to lapse (one elsewhere, unchanged since the
// plan: it renews it while it works) or is left to it; one that claimed or worked on the
// node since the plan leaves it not started: the plan's steps for it may be stale.
type ClaimGate struct{}

func (ClaimGate) Name() string { return "claim" }

func (ClaimGate) Ask(f *Facts) Verdict {
	c := f.Claim
	if c == nil || c.Mine {
		return Verdict{}
	}
	now, seen := c.Now, c.Seen
	if f.AtPlan {
		if now.Claim.ByUpdater() && now.Claim.Held() && now.Live {
			return Verdict{Kind: Wait, Reason: fmt.Sprintf("held by %s, taking a slot of the pool's max_unavailable %s: %s; apply waits for it",
				now.Claim, now.Claim.Until(), now.Why)}
		}
		if now.Claim.Held() && now.Live {
			return Verdict{Kind: Wait, Reason: fmt.Sprintf("held by %s: %s", now.Claim, now.Why)}
		}
		return Verdict{}
	}
	if now.Claim.ByUpdater() {
		// An OS updater's reboot (a FleetLock slot, kured's lock): the node reboots for its
		// own updater, which changes nothing mcp planned; it is waited for, not skipped.
		if now.Claim.Held() && now.Live {
			return bounded(f, "claim", fmt.Sprintf("node %s is held by %s (%s)", f.Node, now.Claim, now.Why))
		}
		return Verdict{}
	}
	if u, _ := seen.Claim.Updater(); u == model.UpdaterKured {
		// The plan saw kured's lock over the node's own claim, and it has gone: only an
		// apply that holds the node now keeps this one from it.
		if now.Claim.Held() && now.Live {
			return Verdict{Kind: Skip, Reason: fmt.Sprintf("%s claimed it since this apply's plan was made; it still runs (%s)", now.Claim, now.Why)}
		}
		return Verdict{}
	}
	skip := func(format string, a ...any) Verdict { return Verdict{Kind: Skip, Reason: fmt.Sprintf(format, a...)} }
	switch {
	case seen.Live && now.Claim.Same(seen.Claim) && c.Elsewhere:
		if !now.Live {
			return Verdict{} // lapsed unchanged: an apply that stopped; the node is this one's
		}
		return bounded(f, "claim", fmt.Sprintf("node %s is held by %s (%s)", f.Node, now.Claim, now.Why))
	case seen.Live:
		return skip("%s held it when this apply's plan was made (%s): the plan's steps for it may be stale", seen.Claim, seen.Why)
	case !now.Claim.Same(seen.Claim) && now.Claim.Held():
		why := "since this apply's plan was made"
		if now.Live {
			why += "; it still runs (" + now.Why + ")"
		}
		return skip("%s claimed it %s", now.Claim, why)
	case !now.Claim.Same(seen.Claim):
		return skip("apply %s worked on it since this apply's plan was made: the plan's steps for it may be stale", now.Claim.Apply)
	}
	return Verdict{}
}

// LockGate: without the state lock, does an apply that holds it run? It counts every node
// out of service as it finds them, and may not see this apply's claims in time.
type LockGate struct{}

func (LockGate) Name() string { return "lock" }

func (LockGate) Ask(f *Facts) Verdict {
	if f.LockedApply == "" {
		return Verdict{}
	}
	return bounded(f, "lock", f.LockedApply)
}

// BudgetGate: does the pool stay within max_unavailable with the node out of service,
// counting the nodes out of service now and those taking budget besides (Busy)? A node out
// of service already takes no more of it (Room).
type BudgetGate struct{}

func (BudgetGate) Name() string { return "budget" }

func (BudgetGate) Ask(f *Facts) Verdict {
	if room, why := RoomFor(f.Pool.MaxUnavailable, f.Node, f.Observed, f.Busy); !room {
		return bounded(f, "budget", why)
	}
	return Verdict{}
}

// bounded is a wait for room (the budget, a claim lapsing, a locked apply ending), which
// apply bounds by -budget-wait (and the pool's soak, which frees a slot by itself).
func bounded(f *Facts, gate, why string) Verdict {
	if f.AtPlan {
		return Verdict{Kind: Wait, Reason: why}
	}
	patience := f.Policy.BudgetWait + f.Pool.Soak
	waited := f.Waited[gate]
	if waited >= patience {
		return Verdict{Kind: Stop, Reason: fmt.Sprintf("pool %s: node %s and the rest not started: no room in the budget within %s: %s",
			f.Pool.Name, f.Node, patience, why)}
	}
	return Verdict{Kind: Wait, Poll: min(f.Policy.Poll, patience-waited), Reason: why}
}

// DescribeWindows writes windows for people, "; " between them.
func DescribeWindows(ws []model.Window) string {
	s := make([]string, len(ws))
	for i, w := range ws {
		s[i] = w.String()
	}
	return strings.Join(s, "; ")
}

// WhenFrom writes t in its own zone with how far it is from now:
// "Sat 2026-11-28 02:00 CET (in 4d3h)".
func WhenFrom(t, now time.Time) string {
	return fmt.Sprintf("%s (in %s)", t.Format("Mon 2006-01-02 15:04 MST"), Roughly(t.Sub(now)))
}

// Roughly writes d to the minute, days apart: "4d3h", "2h5m", "40s".
func Roughly(d time.Duration) string {
	if d < time.Minute {
		return d.Round(time.Second).String()
	}
	d = d.Round(time.Minute)
	days := d / (24 * time.Hour)
	rest := model.ShortDuration(d % (24 * time.Hour))
	if days == 0 {
		return rest
	}
	if rest == "0s" {
		return fmt.Sprintf("%dd", days)
	}
	return fmt.Sprintf("%dd%s", days, rest)
}

// NodeCount is "1 node", "3 nodes".
func NodeCount(n int) string {
	if n == 1 {
		return "1 node"
	}
	return fmt.Sprintf("%d nodes", n)
}
