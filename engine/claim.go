package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/providers"
)

// claimedError: a node not started because another apply works on it, or did since this
// apply's plan was made.
type claimedError struct{ node, why string }

func (e *claimedError) Error() string { return fmt.Sprintf("node %s not started: %s", e.node, e.why) }

// claimFacts are node's claim as the plan saw it and as observed now, each with how it
// was judged, for the claim gate (planner.ClaimGate). Nil when observed lacks node.
func (c *nodeClaims) facts(node string, observed []model.Node) *planner.ClaimFacts {
	for i := range observed {
		n := &observed[i]
		if n.Name != node {
			continue
		}
		f := &planner.ClaimFacts{Seen: c.seen[node].JudgedClaim,
			Now: planner.JudgedClaim{Claim: n.Claim}, Mine: n.Claim != nil && n.Claim.Apply == c.id,
			Elsewhere: n.Claim != nil && !n.Claim.SamePlace(c.judge.self)}
		if n.Claim.Held() && !f.Mine {
			f.Now.Live, f.Now.Why = c.judge.live(*n.Claim)
		}
		return f
	}
	return nil
}

// othersClaims adds to busy (a copy is returned) the nodes of observed, other than node,
// that another live apply holds: they are about to be out of service, or are.
func (c *nodeClaims) others(busy map[string]string, node string, observed []model.Node) map[string]string {
	out := make(map[string]string, len(busy))
	for k, v := range busy {
		out[k] = v
	}
	for i := range observed {
		n := &observed[i]
		if n.Name == node || !n.Claim.Held() || n.Claim.Apply == c.id {
			continue
		}
		if live, _ := c.judge.live(*n.Claim); live {
			out[n.Name] = "claimed by " + n.Claim.Holder()
		}
	}
	return out
}

// newClaim is this apply's claim on node, taken now, naming the state lock it holds (none
// with -lock=false) and that lock's state, with its intent: the node's target, nothing
// begun (a node taken over cordoned from an interrupted apply is cordoned by this one from
// now on). It expires unless renewed: whoever can check neither its process nor that lock
// judges it by its expiry.
func (c *nodeClaims) newClaim(n planner.NodePlan, cordoned bool) model.Claim {
	j := c.judge
	cl := model.Claim{Apply: c.id, Lock: c.lock.ID, State: c.lineage, Host: j.host, Process: j.self, Since: time.Now().UTC()}
	if c.lock.NoLock {
		cl.Lock = ""
	}
	cl.Expires = cl.Since.Add(claimTTL)
	return intent(cl, n, model.PhaseClaimed, cordoned)
}

// newApplyID names one apply run.
func newApplyID() string { return rand.Text() }

// claimer is the provider's Claimer, if it keeps claims.
func (c *nodeClaims) claimer() (providers.Claimer, bool) {
	return c.prov, c.prov.Has(providers.CapClaimer)
}

// lockedApply says why no node may start without the state lock now: an apply that holds
// the lock runs (it counts every node out of service as it finds them, and may not see
// this apply's claims in time), or the lock cannot be read. "" when none.
func (c *nodeClaims) lockedApply(ctx context.Context, fresh bool) string {
	st, err := c.judge.lockStatus(ctx, fresh)
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

// nodeClaims are this apply's claims on the nodes it works on (One apply per node): each
// taken once the gates let its node start, with its intent, renewed while the node is
// worked on, released when it ends; and the judgement of other applies' claims on the
// pool's nodes, as the claim and budget gates ask it.
type nodeClaims struct {
	id      string // this apply run, as its claims name it
	lock    Locking
	lineage string // the state's, which its lock is a lock of
	judge   *claimJudge
	prov    *providers.Adapter
	seen    map[string]ClaimSeen // as the plan's refresh saw them

	mu   sync.Mutex
	held map[string]*heldClaim
}

// heldClaim is a claim this apply holds on a node: the latest one, with its intent.
// Its renewals and new intents are made one at a time (mu), each from the latest.
type heldClaim struct {
	mu sync.Mutex
	c  model.Claim
}

// keep records c as this apply's claim on node.
func (c *nodeClaims) keep(node string, cl model.Claim) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held == nil {
		c.held = map[string]*heldClaim{}
	}
	c.held[node] = &heldClaim{c: cl}
}

// get is the claim this apply holds on node (nil: none).
func (c *nodeClaims) get(node string) *heldClaim {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held[node]
}

func (c *nodeClaims) drop(node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.held, node)
}

// hold runs node's work (run) holding its claim: renewed while it works (with the state
// lock too: an apply of another state judges it by its expiry), released (kept on the node
// as a record) when it ends, whatever the outcome.
func (c *nodeClaims) hold(ctx context.Context, node string, run func() error) error {
	cl, ok := c.claimer()
	h := c.get(node)
	if !ok || h == nil {
		return run()
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
			if _, err := cl.Claim(ctx, node, renew, c.judge.live); err == nil {
				h.c = renew
			}
			h.mu.Unlock()
		}
	}()
	err := run()
	close(stop)
	<-renewed
	c.drop(node)
	last := h.c
	done := last
	done.Released = time.Now().UTC()
	if err != nil && !errors.Is(err, ErrNotStarted) && !isUnconfirmed(err) {
		done.Failed = model.FailedWords(err)
	}
	// A release that fails leaves the claim held, and live only while this process runs
	// (or, taken without the lock, until it expires): the node's outcome stands.
	_ = cl.Release(ctx, node, last, &done)
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
