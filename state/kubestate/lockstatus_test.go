package kubestate

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
)

// TestLockStatus: a Lease within its duration has a live holder; one past renewTime +
// leaseDurationSeconds does not; no Lease is no lock.
func TestLockStatus(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	clk := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	b := New(cs, ns, Options{LeaseDuration: 15 * time.Second, Now: clk.Now})
	if st, err := b.LockStatus(ctx); st != nil || err != nil {
		t.Fatalf("unlocked: %+v, %v", st, err)
	}
	alice := lockInfo("alice@node1")
	u, err := b.Lock(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Unlock(ctx)
	clk.Add(10 * time.Second)
	st, err := b.LockStatus(ctx)
	if err != nil || st == nil || !st.Alive || st.Holder.Who != "alice@node1" || !strings.Contains(st.Detail, "2026-01-02T03:04:20Z") {
		t.Errorf("within the lease: %+v, %v", st, err)
	}
	clk.Add(6 * time.Second)
	st, err = b.LockStatus(ctx)
	if err != nil || st == nil || st.Alive || st.Holder.ID != alice.ID || !strings.Contains(st.Detail, "expired") {
		t.Errorf("past the lease: %+v, %v", st, err)
	}
}
