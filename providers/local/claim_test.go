package local

import (
	"context"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
)

// A node's claims are in its event log: who claimed it, from whom it was taken over, who
// released it; a renewal is no event.
func TestClaimEvents(t *testing.T) {
	p, dir := newFleet(t, 1, Options{})
	ctx := context.Background()
	gone := func(model.Claim) (bool, string) { return false, "gone" }
	a := model.Claim{Apply: "a", Since: time.Now().UTC()}
	b := model.Claim{Apply: "b", Since: time.Now().UTC()}
	if _, err := p.Claim(ctx, "worker-0", a, gone); err != nil {
		t.Fatal(err)
	}
	a.Expires = a.Since.Add(time.Minute)
	if _, err := p.Claim(ctx, "worker-0", a, gone); err != nil { // a renewal
		t.Fatal(err)
	}
	if _, err := p.Claim(ctx, "worker-0", b, gone); err != nil { // a is gone: taken over
		t.Fatal(err)
	}
	done := b
	done.Released = time.Now().UTC()
	if err := p.Release(ctx, "worker-0", b, &done); err != nil {
		t.Fatal(err)
	}
	evs := events(t, dir, "worker-0")
	if k := kinds(evs); k != "claim claim release" {
		t.Fatalf("events %s", k)
	}
	if evs[0].Apply != "a" || evs[0].TookOver != "" || evs[1].Apply != "b" || evs[1].TookOver != "a" || evs[2].Apply != "b" {
		t.Errorf("claim events %+v", evs)
	}
	if c := observe1(t, p, "worker-0").Claim; !c.Same(&done) {
		t.Errorf("node.json's claim %+v, want b's released record", c)
	}
}
