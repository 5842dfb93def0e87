package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/user"
	"sync"
	"time"

	"github.com/mcpfleet/mcp/internal/liveproc"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/providers"
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
	s := ClaimSeen{Claim: c}
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
	key := seenKey(held)
	now := time.Now()
	j.mu.Lock()
	seen, ok := j.seen[key]
	if !ok {
		seen = now
		j.seen[key] = now
	}
	j.mu.Unlock()
	end, capped := held.LeaseEnd(seen, claimTTL)
	note := ""
	if capped && !held.Expires.IsZero() {
		note = fmt.Sprintf(" (its expiry, %s, is further ahead than an apply asks for: taken as %s from when this run first saw it)",
			held.Expires.Format(time.RFC3339), claimTTL)
	} else if capped {
		note = fmt.Sprintf(" (it has no expiry: taken as %s from when this run first saw it)", claimTTL)
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

// blockClaimed marks the plan's changing nodes that another live apply holds, as their
// claims were judged at the refresh (planner.BlockClaim): who holds each, and until when
// or while what. Apply waits for such a node's claim to lapse, within -budget-wait, and
// leaves it to its holder otherwise (claimedSince).
func (o *Observed) blockClaimed(p *planner.Rollout) {
	for i := range p.Nodes {
		n := &p.Nodes[i]
		seen, ok := o.Claims[n.Name]
		if !ok || !seen.Live || !n.Changed() {
			continue
		}
		n.Blockers = append(n.Blockers, planner.Blocker{Kind: planner.BlockClaim,
			Message: fmt.Sprintf("held by %s: %s", seen.Claim, seen.Why)})
	}
}

// claimedError: a node not started because another apply works on it, or did since this
// apply's plan was made.
type claimedError struct{ node, why string }

func (e *claimedError) Error() string { return fmt.Sprintf("node %s not started: %s", e.node, e.why) }

// claimedSince checks node, as just observed, against its claim when the plan was made: a
// claim held then by a live apply, or any other claim since, means another apply may have
// worked on the node after the plan saw it, and its planned steps may be stale (a reboot
// done twice); the node is not started.
func (a *applier) claimedSince(node string, observed []model.Node) error {
	for i := range observed {
		n := &observed[i]
		if n.Name != node || n.Claim != nil && n.Claim.Apply == a.id {
			continue
		}
		seen := a.obs.Claims[node]
		switch {
		case seen.Live && n.Claim.Same(seen.Claim) && !n.Claim.SamePlace(a.judge.self):
			return a.claimLapsing(node, n.Claim)
		case seen.Live:
			return notStarted(&claimedError{node, fmt.Sprintf("%s held it when this apply's plan was made (%s): the plan's steps for it may be stale",
				seen.Claim, seen.Why)})
		case !n.Claim.Same(seen.Claim) && n.Claim.Held():
			why := "since this apply's plan was made"
			if live, how := a.judge.live(*n.Claim); live {
				why += "; it still runs (" + how + ")"
			}
			return notStarted(&claimedError{node, fmt.Sprintf("%s claimed it %s", n.Claim, why)})
		case !n.Claim.Same(seen.Claim):
			return notStarted(&claimedError{node, fmt.Sprintf("apply %s worked on it since this apply's plan was made: the plan's steps for it may be stale",
				n.Claim.Apply)})
		}
	}
	return nil
}

// claimLapsing weighs a node whose claim, live when the plan was made, is unchanged since
// and names an apply elsewhere (another machine, boot or PID namespace): its liveness is
// its lease (or the state lock it was taken under), not a process this run can check. A
// live apply there renews its claim, so one still the same once it has expired (or its
// lock gone) is an apply that stopped before the plan and touched the node no more: the
// node is this apply's, in its own slot, and the room its claim held frees then, not at the
// end of -budget-wait. Until then the node waits for room, saying for what.
func (a *applier) claimLapsing(node string, held *model.Claim) error {
	live, why := a.judge.live(*held)
	if !live {
		return nil
	}
	return &claimWaitError{why: fmt.Sprintf("node %s is held by %s (%s)", node, held, why)}
}

// claimWaitError: the node may start once another apply's claim on it lapses; it waits for
// room meanwhile, within -budget-wait.
type claimWaitError struct{ why string }

func (e *claimWaitError) Error() string { return e.why }

// othersClaims adds to busy (a copy is returned) the nodes of observed, other than node,
// that another live apply holds: they are about to be out of service, or are.
func (a *applier) othersClaims(busy map[string]string, node string, observed []model.Node) map[string]string {
	out := make(map[string]string, len(busy))
	for k, v := range busy {
		out[k] = v
	}
	for i := range observed {
		n := &observed[i]
		if n.Name == node || !n.Claim.Held() || n.Claim.Apply == a.id {
			continue
		}
		if live, _ := a.judge.live(*n.Claim); live {
			out[n.Name] = "claimed by apply " + n.Claim.Apply
		}
	}
	return out
}

// newClaim is this apply's claim on node, taken now, naming the state lock it holds (none
// with -lock=false) and that lock's state, with its intent: the node's target, nothing
// begun (a node taken over cordoned from an interrupted apply is cordoned by this one from
// now on). It expires unless renewed: whoever can check neither its process nor that lock
// judges it by its expiry.
func (a *applier) newClaim(node string) model.Claim {
	j := a.judge
	c := model.Claim{Apply: a.id, Lock: a.opts.Lock.ID, State: a.st.Lineage, Host: j.host, Process: j.self, Since: time.Now().UTC()}
	if a.opts.Lock.NoLock {
		c.Lock = ""
	}
	c.Expires = c.Since.Add(claimTTL)
	f := a.inFlightOf(node)
	return intent(c, a.nodes[node], model.PhaseClaimed, f != nil && f.Cordoned)
}

// newApplyID names one apply run.
func newApplyID() string { return rand.Text() }

// claimer is the provider's Claimer, if it keeps claims.
func (a *applier) claimer() (providers.Claimer, bool) {
	c := a.w.provider()
	return c, c.Has(providers.CapClaimer)
}

// take claims node for this apply. A live other apply's claim leaves the node not started
// (a claimedError). Without the state lock, the pool is looked at again once the claim is
// on the node (look): another apply may have claimed a node of the pool at the same
// moment, and of two that did, at least one sees the other; when there is no room the
// claim is given back as it was, and errNoRoom sends the node back to wait.
func (r *poolRun) take(node string) error {
	cl, ok := r.a.claimer()
	if !ok {
		return nil
	}
	c := r.a.newClaim(node)
	prev, err := cl.Claim(r.ctx, node, c, r.a.judge.live)
	var ce *providers.ClaimedError
	switch {
	case errors.As(err, &ce):
		return notStarted(&claimedError{node, fmt.Sprintf("%s works on it (%s)", &ce.Holder, ce.Why)})
	case err != nil:
		return notStarted(fmt.Errorf("pool %s: node %s not started: claiming it: %w", r.pp.Name, node, err))
	}
	r.a.keepClaim(node, c)
	if !r.a.opts.Lock.NoLock {
		return nil
	}
	room, why, err := r.look(node, true)
	if err == nil && room {
		return nil
	}
	r.a.dropClaim(node)
	if rerr := cl.Release(context.WithoutCancel(r.ctx), node, c, prev); rerr != nil {
		err = errors.Join(err, rerr)
	}
	if err != nil {
		return err
	}
	r.a.emit(Event{Kind: EventWaiting, Pool: r.pp.Name, Node: node, Reason: why})
	return errNoRoom
}

// backOff pauses a node whose claim was given back for a random part of BudgetPoll, so
// that two applies that claimed at one moment do not claim at one moment again. A node
// that keeps backing off for BudgetWait is not started, nor the rest of its pool.
func (r *poolRun) backOff(node string, since time.Time) error {
	if time.Since(since) > r.a.opts.BudgetWait {
		return notStarted(fmt.Errorf("pool %s: node %s and the rest not started: no room in the budget beside other applies within %s",
			r.pp.Name, node, r.a.opts.BudgetWait))
	}
	select {
	case <-r.ctx.Done():
		return r.ctx.Err()
	case <-time.After(mrand.N(r.a.opts.BudgetPoll/2 + 1)):
	}
	return errNoRoom
}

// lockedApply says why no node may start without the state lock now: an apply that holds
// the lock runs (it counts every node out of service as it finds them, and may not see
// this apply's claims in time), or the lock cannot be read. "" when none.
func (a *applier) lockedApply(ctx context.Context, fresh bool) string {
	st, err := a.judge.lockStatus(ctx, fresh)
	switch {
	case err != nil:
		return fmt.Sprintf("the state lock cannot be read (%v): with -lock=false no node starts until it shows no apply holds it", err)
	case st == nil || !st.Alive || st.Holder.Operation != "apply":
		return ""
	}
	h := st.Holder
	return fmt.Sprintf("an apply that holds the state lock runs (%s, pid %d, lock ID %s; %s): with -lock=false no node starts beside it",
		h.Who, h.PID, h.ID, st.Detail)
}

// heldClaim is a claim this apply holds on a node: the latest one, with its intent.
// Its renewals and new intents are made one at a time (mu), each from the latest.
type heldClaim struct {
	mu sync.Mutex
	c  model.Claim
}

func (a *applier) keepClaim(node string, c model.Claim) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.held == nil {
		a.held = map[string]*heldClaim{}
	}
	a.held[node] = &heldClaim{c: c}
}

// heldClaim is the claim this apply holds on node (nil: none).
func (a *applier) heldClaim(node string) *heldClaim {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.held[node]
}

func (a *applier) dropClaim(node string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.held, node)
}

// runClaimed runs node n holding its claim: renewed while it works (with the state lock
// too: an apply of another state judges it by its expiry), released (kept on the node as
// a record) when it ends, whatever the outcome.
func (a *applier) runClaimed(ctx context.Context, n planner.NodePlan) error {
	cl, ok := a.claimer()
	h := a.heldClaim(n.Name)
	if !ok || h == nil {
		return a.runNode(ctx, n)
	}
	stop := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		t := time.NewTicker(claimTTL / 4)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			// A renewal that fails is tried again at the next tick; one that finds the
			// claim taken (it expired meanwhile) cannot stop the node's steps.
			h.mu.Lock()
			renew := h.c
			renew.Expires = time.Now().UTC().Add(claimTTL)
			if _, err := cl.Claim(ctx, n.Name, renew, a.judge.live); err == nil {
				h.c = renew
			}
			h.mu.Unlock()
		}
	}()
	err := a.runNode(ctx, n)
	close(stop)
	<-renewed
	a.dropClaim(n.Name)
	c := h.c
	done := c
	done.Released = time.Now().UTC()
	if err != nil && !errors.Is(err, ErrNotStarted) && !isUnconfirmed(err) {
		done.Failed = model.FailedWords(err)
	}
	// A release that fails leaves the claim held, and live only while this process runs
	// (or, taken without the lock, until it expires): the node's outcome stands.
	_ = cl.Release(ctx, n.Name, c, &done)
	return err
}

// isUnconfirmed reports whether err is a node whose health gates apply stopped waiting for:
// it neither passed nor failed.
func isUnconfirmed(err error) bool {
	var u *unconfirmedError
	return errors.As(err, &u)
}

// claimedAway is a node's first write refused because another live apply took the node
// (a provider that writes the claim with that write, which is always this run's first
// write to the node): the node was not started, and is left to that apply as it is.
func claimedAway(n string, err error) error {
	var ce *providers.ClaimedError
	if !errors.As(err, &ce) {
		return nil
	}
	return notStarted(&claimedError{n, fmt.Sprintf("%s took it first (%s)", &ce.Holder, ce.Why)})
}
