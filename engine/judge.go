package engine

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"sync"
	"time"

	"github.com/mcpfleet/mcp/internal/liveproc"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/state"
)

// One apply per node (docs/decisions.md): before a node's first step apply claims it on the
// node itself (providers.Claimer), and it starts no node another live apply holds, or
// worked on since this apply's plan was made. Whether a claim's apply still runs is judged
// here, from what the claim names.

// claimTTL is how long a claim stays live, for whoever can check neither its process nor
// the state lock it was taken under, unless its apply renews it (every quarter of it, while
// it works on the node). It is also the most a claim's expiry is believed (model.Claim.LeaseEnd).
// A variable for tests only.
var claimTTL = 2 * time.Minute

// lockLook is how long a look at the state lock is trusted when judging claims.
const lockLook = time.Second

// claimJudge judges claims for one state, as its caller holds that state's lock. One is made
// per refresh a plan is made from; apply makes its own, seeded with what the plan's judge
// saw (seed): a claim gone then stays gone, and a lease counts from when it was first seen.
type claimJudge struct {
	backend state.Backend // the state's backend, for its lock (nil: none)
	self    model.Process
	host    string // user@host
	state   string // the lineage of the state read ("": none yet)
	locked  bool   // whoever judges holds the state lock (not Locking.NoLock)

	mu     sync.Mutex
	gone   map[string]string    // apply id → why it is gone: a gone apply does not come back
	seen   map[string]time.Time // apply id and expiry → when first seen (LeaseEnd)
	lockAt time.Time
	lock   *state.LockStatus
}

func newClaimJudge(b state.Backend, lineage string, lock Locking) *claimJudge {
	host := "unknown"
	if u, err := user.Current(); err == nil {
		host = u.Username
	}
	if h, err := os.Hostname(); err == nil {
		host += "@" + h
	}
	return &claimJudge{backend: b, self: liveproc.Self(), host: host, state: lineage, locked: !lock.NoLock,
		gone: map[string]string{}, seen: map[string]time.Time{}}
}

// seed takes over what a plan's judge saw of the claims: when each was first seen with its
// expiry, and which were gone for good.
func (j *claimJudge) seed(claims map[string]ClaimSeen) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, s := range claims {
		if s.Claim == nil {
			continue
		}
		if !s.Seen.IsZero() {
			j.seen[seenKey(*s.Claim)] = s.Seen
		}
		if s.Gone {
			j.gone[s.Claim.Apply] = s.Why
		}
	}
}

// see judges c and says so as a ClaimSeen.
func (j *claimJudge) see(c *model.Claim) ClaimSeen {
	s := ClaimSeen{JudgedClaim: planner.JudgedClaim{Claim: c}}
	s.Live, s.Why = j.live(*c)
	j.mu.Lock()
	defer j.mu.Unlock()
	s.Seen = j.seen[seenKey(*c)]
	_, s.Gone = j.gone[c.Apply]
	return s
}

// live says whether held's apply still runs, and how that was judged:
//   - from the same machine, boot and PID namespace, by its process: running, not a
//     zombie, started when the claim says (not a reused PID); an apply of this very process
//     (tests run several in one) is judged as one elsewhere, below: by the lock, or by its
//     expiry, which it renews while it works;
//   - elsewhere, taken under a lock of this state: while that lock is held — so never,
//     for an apply that holds the lock itself (its holder gave it up or lost it);
//   - elsewhere, taken without the lock or under another state's lock (which cannot be
//     looked at from here): until it expires (its apply renews it), and never longer than
//     claimTTL from when this judge saw it so (model.Claim.LeaseEnd).
func (j *claimJudge) live(held model.Claim) (bool, string) {
	if !held.Held() {
		return false, "released"
	}
	j.mu.Lock()
	why, gone := j.gone[held.Apply]
	j.mu.Unlock()
	if gone {
		return false, why
	}
	live, why := j.judge(held)
	// Only what no renewal can bring back is remembered: a process gone, a lock lost.
	if !live && (held.SamePlace(j.self) && !j.thisProcess(held) || held.Lock != "" && j.locked && j.ours(held)) {
		j.mu.Lock()
		j.gone[held.Apply] = why
		j.mu.Unlock()
	}
	return live, why
}

func (j *claimJudge) judge(held model.Claim) (bool, string) {
	switch u, _ := held.Updater(); u {
	case model.UpdaterFleetLock:
		// A reboot slot mcp serve -fleetlock granted: it lives until its lease ends (or the
		// client reports steady state), whoever judges it.
		return j.leasedFor(held, model.MaxFleetLockLease, "a FleetLock reboot slot")
	case model.UpdaterKured:
		return held.KuredLive(time.Now())
	}
	switch {
	case held.SamePlace(j.self) && !j.thisProcess(held):
		live, _, why := liveproc.Judge(held.Process)
		return live, why
	case held.Lock != "" && !j.ours(held):
		return j.leased(held, fmt.Sprintf("taken under state lock %s of another state (lineage %s), which this apply cannot look at", held.Lock, held.State))
	case held.Lock != "" && j.locked:
		return false, fmt.Sprintf("it was taken under state lock %s, and this apply holds the lock now", held.Lock)
	case held.Lock != "":
		st, err := j.lockStatus(context.Background(), false)
		if err != nil {
			return true, fmt.Sprintf("taken under state lock %s, and the lock cannot be read: %v", held.Lock, err)
		}
		if st != nil && st.Holder.ID == held.Lock && st.Alive {
			return true, fmt.Sprintf("its apply holds state lock %s", held.Lock)
		}
		return false, fmt.Sprintf("state lock %s, which it was taken under, is not held any more", held.Lock)
	}
	return j.leased(held, "taken without the state lock where its process cannot be checked from here")
}

// thisProcess says whether held names the judging process itself (its PID and start).
func (j *claimJudge) thisProcess(held model.Claim) bool {
	return held.SamePlace(j.self) && held.PID == j.self.PID && held.Start == j.self.Start
}

// ours says whether held was taken under a lock of the state this judge's apply works
// with (a claim that names no state is taken for one). Without a state backend there is
// no lock to look at: every lock is another's.
func (j *claimJudge) ours(held model.Claim) bool {
	return j.backend != nil && (held.State == "" || held.State == j.state)
}

// leased judges held by its expiry, capped (model.Claim.LeaseEnd) from when this judge
// first saw it with that expiry; how says how it was taken.
func (j *claimJudge) leased(held model.Claim, how string) (bool, string) {
	return j.leasedFor(held, claimTTL, how)
}

// leasedFor is leased with the most an expiry is believed (lease).
func (j *claimJudge) leasedFor(held model.Claim, lease time.Duration, how string) (bool, string) {
	key := seenKey(held)
	now := time.Now()
	j.mu.Lock()
	seen, ok := j.seen[key]
	if !ok {
		seen = now
		j.seen[key] = now
	}
	j.mu.Unlock()
	end, capped := held.LeaseEnd(seen, lease)
	note := ""
	if capped && !held.Expires.IsZero() {
		note = fmt.Sprintf(" (its expiry, %s, is further ahead than its holder asks for: taken as %s from when this run first saw it)",
			held.Expires.Format(time.RFC3339), lease)
	} else if capped {
		note = fmt.Sprintf(" (it has no expiry: taken as %s from when this run first saw it)", lease)
	}
	if now.Before(end) {
		return true, fmt.Sprintf("%s; live until %s unless renewed%s", how, end.Local().Format(time.RFC3339), note)
	}
	return false, fmt.Sprintf("%s; not renewed since it lapsed at %s%s", how, end.Local().Format(time.RFC3339), note)
}

// seenKey names a claim with its expiry: a renewal is seen anew.
func seenKey(c model.Claim) string { return c.Apply + "\x00" + c.Expires.String() }

// lockStatus looks at the state lock (nil: not held; the backend cannot tell: nil too),
// trusting a look made within lockLook unless fresh.
func (j *claimJudge) lockStatus(ctx context.Context, fresh bool) (*state.LockStatus, error) {
	insp, ok := j.backend.(state.LockInspector)
	if !ok {
		return nil, nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if !fresh && time.Since(j.lockAt) < lockLook {
		return j.lock, nil
	}
	st, err := insp.LockStatus(ctx)
	if err != nil {
		return nil, err
	}
	j.lock, j.lockAt = st, time.Now()
	return st, nil
}

// noteClaims are the nodes' claims as fleet shows them, judged by j: the plan made from
// fleet is carried out only on nodes whose claim is still that one, held by no live apply
// then (claimedSince). Nil when the provider keeps no claims.
func noteClaims(fleet *model.Fleet, j *claimJudge) map[string]ClaimSeen {
	seen := make(map[string]ClaimSeen)
	for i := range fleet.Nodes {
		if n := &fleet.Nodes[i]; n.Claim != nil {
			seen[n.Name] = j.see(n.Claim)
		}
	}
	return seen
}

// judgedClaims are the claims as seen and judged, for the planner (planner.Input.Claims).
func (o *Observed) judgedClaims() map[string]planner.JudgedClaim {
	if len(o.Claims) == 0 {
		return nil
	}
	out := make(map[string]planner.JudgedClaim, len(o.Claims))
	for node, s := range o.Claims {
		out[node] = s.JudgedClaim
	}
	return out
}
