package acceptance

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/state/kubestate"
)

// unlockRounds is how many applies, each followed at once by a plan, the test runs.
const unlockRounds = 12

// TestKubeApplyReleasesItsLock: a finished apply's Lease must not outlive it (issue 43,
// item 6: once, the next plan was refused the lock, held by the apply that had just exited;
// a renewal that apply's unlock cancelled had landed after the unlock read the Lease). On
// the real apiserver, 12 applies, each a real change the agents carry out and long enough
// to span the Lease's renewals, each followed at once by a plan that may not wait for the
// lock: no apply says it could not release the lock, the Lease is gone when each apply has
// exited, and no plan is refused the lock. (TestKubeUnlockAfterALateRenewal, below, makes
// the late renewal happen every time; here it happens when it happens.)
func TestKubeApplyReleasesItsLock(t *testing.T) {
	waiting(t)
	// Each round reboots both nodes one after the other, so an apply lasts several seconds,
	// across a renewal of its Lease (every 5s).
	c := newKubeCluster(t, markerPools(1, "generation 0"), map[string]int{"worker": 2})
	leases := c.env.Client.CoordinationV1().Leases(c.stateNS)
	var took []time.Duration
	for round := 1; round <= unlockRounds; round++ {
		c.writeConfig(t, markerPools(1, fmt.Sprintf("generation %d", round)))
		// The first node to reboot stays down 0 to 4s more each round, so the applies end
		// at moments spread over the Lease's 5s renewal period.
		c.nextRebootDelay.Store(int64(time.Duration(round%5) * time.Second))
		began := time.Now()
		out, code := c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color", "-drain-retry-delay=500ms")
		took = append(took, time.Since(began).Round(100*time.Millisecond))
		if code != 0 || strings.Contains(out, "Error releasing the state lock") {
			t.Fatalf("round %d: apply exit %d\n%s", round, code, lastLines(out, 20))
		}
		if held := leaseHolder(t, leases); held != "" {
			t.Errorf("round %d: the Lease outlived the apply that held it: %s", round, held)
		}
		out, code = c.mcp(t, "mcp-apply", "plan", "-no-color", "-detailed-exitcode", "-lock-timeout=0s")
		if code != 0 || strings.Contains(out, "Error acquiring the state lock") {
			t.Fatalf("round %d: the plan right after apply: exit %d, want 0 (nothing to do, the lock free)\n%s", round, code, lastLines(out, 20))
		}
	}
	t.Logf("%d applies, each followed by a plan that found the lock free; the applies took %v", unlockRounds, took)
	for node, a := range c.agents {
		if got := c.node(t, node).Annotations[protocol.State]; got != "Done" || a.boots.Load() != 1+unlockRounds {
			t.Errorf("%s: %s after %d boots; want Done after one reboot a round", node, got, a.boots.Load())
		}
		want := fmt.Sprintf("generation %d\n", unlockRounds)
		if b, err := os.ReadFile(filepath.Join(a.root, "etc/mcp-marker")); string(b) != want {
			t.Errorf("%s: /etc/mcp-marker = %q, %v; want %q", node, b, err, want)
		}
	}
}

// TestKubeUnlockAfterALateRenewal makes on the real apiserver the moment the loop above
// meets only by chance: the holder's renewal is on the wire when Unlock cancels it, and
// the apiserver applies it after Unlock has read the Lease, so Unlock's delete (of the
// version it read) is refused. Unlock must read the Lease again and delete it, not leave
// it held for a full duration. A transport between the backend and the apiserver holds
// the renewal's PUT, lets Unlock's read through, then lands the PUT before the delete.
func TestKubeUnlockAfterALateRenewal(t *testing.T) {
	waiting(t)
	c := newFleet(t, sharedKube(t))
	late := &lateRenewal{held: make(chan struct{})}
	rc := rest.CopyConfig(c.env.RESTConfig)
	rc.Wrap(late.wrap)
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	u, err := kubestate.New(cs, c.stateNS, kubestate.Options{}).Lock(ctx, state.NewLockInfo("apply", "test"))
	if err != nil {
		t.Fatal(err)
	}
	select { // the first renewal comes a third of the Lease's 15s after the lock
	case <-late.held:
	case <-time.After(30 * time.Second):
		t.Fatal("no renewal of the Lease within 30s")
	}
	if err := u.Unlock(ctx); err != nil {
		t.Errorf("unlock after a late renewal: %v", err)
	}
	if !late.landed.Load() {
		t.Fatal("the held renewal never reached the apiserver: nothing was tested")
	}
	if held := leaseHolder(t, c.env.Client.CoordinationV1().Leases(c.stateNS)); held != "" {
		t.Errorf("the Lease outlived its unlock: %s", held)
	}
}

// leaseHolder is who holds the state's Lease, "" when there is none.
func leaseHolder(t *testing.T, leases coordinationv1client.LeaseInterface) string {
	t.Helper()
	l, err := leases.Get(context.Background(), protocol.LockLease, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return ""
	case err != nil:
		t.Fatalf("reading the Lease: %v", err)
	}
	return "held by " + ptr.Deref(l.Spec.HolderIdentity, "nobody")
}

// lateRenewal holds the first PUT of the lock's Lease (a renewal) until its sender gives
// up, then sends it on its own once the next GET of the Lease (Unlock's read) is answered,
// and waits for it to land before answering that GET.
type lateRenewal struct {
	mu     sync.Mutex
	put    *http.Request // the held renewal, once there is one
	held   chan struct{} // closed when it is held
	landed atomic.Bool
}

func (l *lateRenewal) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if !strings.HasSuffix(r.URL.Path, "/leases/"+protocol.LockLease) {
			return rt.RoundTrip(r)
		}
		l.mu.Lock()
		first := r.Method == http.MethodPut && l.put == nil
		held := l.put
		if first {
			l.put = r.Clone(context.Background())
			if r.GetBody != nil {
				l.put.Body, _ = r.GetBody()
			}
			close(l.held)
		}
		l.mu.Unlock()
		switch {
		case first: // on the wire, unanswered until the sender gives up
			<-r.Context().Done()
			return nil, r.Context().Err()
		case r.Method == http.MethodGet && held != nil && !l.landed.Load():
			resp, err := rt.RoundTrip(r) // Unlock reads the Lease before the renewal lands
			if late, lerr := rt.RoundTrip(held); lerr == nil {
				late.Body.Close()
				l.landed.Store(late.StatusCode == http.StatusOK)
			}
			return resp, err
		}
		return rt.RoundTrip(r)
	})
}
