package providertest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

// claimsOneApply: a node claimed by a live apply is refused to another,
// naming the holder; a gone apply's claim is taken over; of two applies that judged a node
// free at the same moment, one gets it (the other's claim, or its first write carrying the
// claim, is refused); a release leaves the node's record; the node's claim is observed.
func claimsOneApply(t *testing.T, newProvider New) {
	p := newProvider(t, Standard())
	cl := capability[providers.Claimer](t, p, "Claimer", "keeps no claims")
	since := time.Now().UTC().Truncate(time.Second)
	claim := func(apply, lock string) model.Claim {
		return model.Claim{Apply: apply, Lock: lock, Host: "test@host", Process: model.Process{PID: 1}, Since: since, Expires: since.Add(time.Hour)}
	}
	alive := func(model.Claim) (bool, string) { return true, "alive in the test" }
	gone := func(model.Claim) (bool, string) { return false, "gone in the test" }
	a, b := claim("apply-a", ""), claim("apply-b", "")

	if prev, err := cl.Claim(ctx, "w-0", a, alive); err != nil || prev != nil {
		t.Fatalf("claiming a free node: prev %v, %v", prev, err)
	}
	if got := node(t, p, "w-0").Claim; !got.Same(&a) {
		t.Errorf("the node's claim after it was taken: %+v, want %+v", got, a)
	}
	_, err := cl.Claim(ctx, "w-0", b, alive)
	var ce *providers.ClaimedError
	if !errors.As(err, &ce) || ce.Holder.Apply != a.Apply || !strings.Contains(err.Error(), "apply-a") {
		t.Errorf("claiming a node a live apply holds: %v; want a ClaimedError naming apply-a", err)
	}
	if prev, err := cl.Claim(ctx, "w-0", b, gone); err != nil || !prev.Same(&a) {
		t.Errorf("taking over a gone apply's claim: prev %v, %v; want apply-a's", prev, err)
	}
	// a, taken over, releases nothing; b's release leaves its record.
	if err := cl.Release(ctx, "w-0", a, nil); err != nil {
		t.Fatal(err)
	}
	done := b
	done.Released = since.Add(time.Minute)
	if err := cl.Release(ctx, "w-0", b, &done); err != nil {
		t.Fatal(err)
	}
	if got := node(t, p, "w-0").Claim; !got.Same(&done) || got.Held() {
		t.Errorf("the node's claim after its release: %+v, want the released record %+v", got, done)
	}

	// Under the state lock a provider may write the claim with the node's next write: of
	// two applies that judged w-1 free, exactly one cordons it.
	c, d := claim("apply-c", "lock-c"), claim("apply-d", "")
	_, errC := cl.Claim(ctx, "w-1", c, alive)
	_, errD := cl.Claim(ctx, "w-1", d, alive)
	if errC == nil {
		errC = p.Cordon(ctx, "w-1")
	}
	if (errC == nil) == (errD == nil) || errC != nil && !errors.Is(errC, providers.ErrClaimed) || errD != nil && !errors.Is(errD, providers.ErrClaimed) {
		t.Fatalf("two applies on one node: c %v, d %v; want exactly one refused as claimed", errC, errD)
	}
	winner := c
	if errC != nil {
		winner = d
	}
	n := node(t, p, "w-1")
	if !n.Claim.Same(&winner) || n.Unschedulable != (winner.Apply == c.Apply) {
		t.Errorf("w-1 after the race: claim %+v, cordoned %v; want %s's claim, cordoned only by c", n.Claim, n.Unschedulable, winner.Apply)
	}
	clearsByHand(t, p, cl, claim("apply-e", ""), alive)
}

// clearsByHand: Clear ends the claim e on w-2 only while it is the one read — a clear of a
// claim since renewed leaves the node as it is — and leaves the released record.
func clearsByHand(t *testing.T, p providers.Provider, cl providers.Claimer, e model.Claim, alive providers.ClaimLive) {
	t.Helper()
	if _, err := cl.Claim(ctx, "w-2", e, alive); err != nil {
		t.Fatal(err)
	}
	read := *node(t, p, "w-2").Claim
	stale := read
	stale.Expires = stale.Expires.Add(-time.Minute) // as read before a renewal
	if err := cl.Clear(ctx, "w-2", stale, stale); !errors.Is(err, providers.ErrClaimChanged) {
		t.Errorf("clearing a claim that changed since it was read: %v, want ErrClaimChanged", err)
	}
	if got := node(t, p, "w-2").Claim; !got.Same(&read) {
		t.Errorf("a refused clear changed the claim: %+v, want %+v", got, read)
	}
	leave := read
	leave.Released = read.Since.Add(time.Minute)
	if err := cl.Clear(ctx, "w-2", read, leave); err != nil {
		t.Fatalf("clearing the claim as read: %v", err)
	}
	if got := node(t, p, "w-2").Claim; !got.Same(&leave) || got.Held() {
		t.Errorf("w-2's claim after it was cleared: %+v, want the released record %+v", got, leave)
	}
}

// intentsRideTheirAction: an intent recorded with Intend is on the node once the action it
// names is made — the cordon with the intent to cordon, the uncordon with the intent to
// uncordon —, and never over another apply's claim: an apply whose node was taken over
// meanwhile has its intent or its action refused as claimed, the node left as it is.
func intentsRideTheirAction(t *testing.T, newProvider New) {
	p := newProvider(t, Standard())
	cl := capability[providers.Claimer](t, p, "Claimer", "keeps no claims")
	since := time.Now().UTC().Truncate(time.Second)
	a := model.Claim{Apply: "apply-a", Lock: "lock-a", Host: "test@host", Process: model.Process{PID: 1}, Since: since, Expires: since.Add(time.Hour)}
	gone := func(model.Claim) (bool, string) { return false, "gone in the test" }
	if _, err := cl.Claim(ctx, "w-0", a, gone); err != nil {
		t.Fatal(err)
	}
	with := func(c model.Claim, ph model.Phase, cordoned bool) model.Claim {
		c.Intent = &model.Intent{Target: "rendered-worker-x", Phase: ph, Cordoned: cordoned}
		return c
	}
	cordon, uncordon := with(a, model.PhaseCordon, true), with(a, model.PhaseUncordon, false)
	if err := cl.Intend(ctx, "w-0", cordon); err != nil {
		t.Fatal(err)
	}
	if err := p.Cordon(ctx, "w-0"); err != nil {
		t.Fatal(err)
	}
	if n := node(t, p, "w-0"); !n.Unschedulable || !n.Claim.Same(&cordon) {
		t.Errorf("w-0 after its intent to cordon and the cordon: cordoned %v, claim %+v; want cordoned under %+v", n.Unschedulable, n.Claim, cordon.Intent)
	}
	if err := cl.Intend(ctx, "w-0", uncordon); err != nil {
		t.Fatal(err)
	}
	if err := p.Uncordon(ctx, "w-0"); err != nil {
		t.Fatal(err)
	}
	if n := node(t, p, "w-0"); n.Unschedulable || !n.Claim.Same(&uncordon) {
		t.Errorf("w-0 after its intent to uncordon and the uncordon: cordoned %v, claim %+v; want uncordoned under %+v", n.Unschedulable, n.Claim, uncordon.Intent)
	}

	// w-1: apply-b (without the lock) claims it, apply-c takes it over, then apply-b
	// records its intent to cordon and cordons.
	b := a
	b.Apply, b.Lock = "apply-b", ""
	c := b
	c.Apply = "apply-c"
	if _, err := cl.Claim(ctx, "w-1", b, gone); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Claim(ctx, "w-1", c, gone); err != nil {
		t.Fatal(err)
	}
	err := cl.Intend(ctx, "w-1", with(b, model.PhaseCordon, true))
	if err == nil {
		err = p.Cordon(ctx, "w-1")
	}
	if !errors.Is(err, providers.ErrClaimed) {
		t.Errorf("an intent over another apply's claim, and its cordon: %v; want refused as claimed", err)
	}
	if n := node(t, p, "w-1"); n.Unschedulable || !n.Claim.Same(&c) {
		t.Errorf("w-1, taken over: cordoned %v, claim %+v; want it as apply-c left it", n.Unschedulable, n.Claim)
	}
}
