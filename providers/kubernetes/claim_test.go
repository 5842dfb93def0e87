package kubernetes

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

func alive(model.Claim) (bool, string) { return true, "alive in the test" }

// patches are the node patches among c's actions: their types.
func patches(c *fake.Clientset) []types.PatchType {
	var out []types.PatchType
	for _, a := range c.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && a.GetResource().Resource == "nodes" {
			out = append(out, p.GetPatchType())
		}
	}
	return out
}

func nodeClaim(t *testing.T, c *fake.Clientset, node string) (*model.Claim, bool) {
	t.Helper()
	n, err := c.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cl, _, _ := protocol.ReadClaim(n.Annotations)
	return cl, n.Spec.Unschedulable
}

// Under the state lock a claim costs no request of its own: it rides on the cordon (one
// patch, the node having had no annotations at all), and its release writes nothing — it
// ends with the lock.
func TestClaimUnderTheLockRidesOnTheCordon(t *testing.T) {
	c := fake.NewClientset(kNode("w-0", "a", true, nil))
	p := NewForClient(c, Options{})
	ctx := context.Background()
	a := model.Claim{Apply: "a", Lock: "lock-a", Since: time.Now().UTC()}
	if _, err := p.Claim(ctx, "w-0", a, alive); err != nil {
		t.Fatal(err)
	}
	if ps := patches(c); len(ps) != 0 {
		t.Fatalf("claiming under the lock patched the node: %v", ps)
	}
	if err := p.Cordon(ctx, "w-0"); err != nil {
		t.Fatal(err)
	}
	if ps := patches(c); len(ps) != 1 || ps[0] != types.JSONPatchType {
		t.Fatalf("the cordon: patches %v, want one JSON patch", ps)
	}
	if cl, cordoned := nodeClaim(t, c, "w-0"); !cl.Same(&a) || !cordoned {
		t.Fatalf("after the cordon: claim %+v, cordoned %v", cl, cordoned)
	}
	c.ClearActions()
	done := a
	done.Released = time.Now().UTC()
	if err := p.Release(ctx, "w-0", a, &done); err != nil || len(patches(c)) != 0 {
		t.Errorf("releasing under the lock: %v, patches %v; want none", err, patches(c))
	}
	// Another apply without the lock finds it held while a's lock is (its judge says so).
	b := model.Claim{Apply: "b", Since: time.Now().UTC(), Expires: time.Now().Add(time.Minute)}
	if _, err := NewForClient(c, Options{}).Claim(ctx, "w-0", b, alive); !errors.Is(err, providers.ErrClaimed) {
		t.Errorf("a second apply's claim: %v, want it refused", err)
	}
}

// A node an apply under the lock failed (a drain a PDB refused) keeps the failure: the
// release writes the released claim with it, for status -nodes, as without the lock.
func TestFailureUnderTheLockIsRecorded(t *testing.T) {
	c := fake.NewClientset(kNode("w-0", "a", true, nil))
	p := NewForClient(c, Options{})
	ctx := context.Background()
	a := model.Claim{Apply: "a", Lock: "lock-a", Since: time.Now().UTC()}
	if _, err := p.Claim(ctx, "w-0", a, alive); err != nil {
		t.Fatal(err)
	}
	if err := p.Cordon(ctx, "w-0"); err != nil {
		t.Fatal(err)
	}
	done := a
	done.Released = time.Now().UTC()
	done.Failed = "drain node w-0: eviction of demo/db-0 refused by PodDisruptionBudget demo/db-pdb"
	if err := p.Release(ctx, "w-0", a, &done); err != nil {
		t.Fatal(err)
	}
	if cl, _ := nodeClaim(t, c, "w-0"); cl == nil || cl.Held() || cl.Failed != done.Failed {
		t.Errorf("claim after the failed node's release: %+v, want released with the failure", cl)
	}
}

// The hand-over carries the claim of a node that is not cordoned (an update in place):
// one patch for both.
func TestClaimUnderTheLockRidesOnTheHandover(t *testing.T) {
	c, watching := watchedClient(t)
	agent(t, c, watching, protocol.Report{State: model.StateDone, Progress: 2, Current: target.Name})
	p := NewForClient(c, Options{NodeTimeout: 30 * time.Second})
	a := model.Claim{Apply: "a", Lock: "lock-a", Since: time.Now().UTC()}
	if _, err := p.Claim(context.Background(), "w-0", a, alive); err != nil {
		t.Fatal(err)
	}
	if err := p.RunNodeSteps(context.Background(), "w-0", nil, target, steps, nil); err != nil {
		t.Fatal(err)
	}
	if ps := patches(c); len(ps) != 1 || ps[0] != types.JSONPatchType {
		t.Errorf("claim and hand-over: patches %v, want one JSON patch", ps)
	}
	if cl, _ := nodeClaim(t, c, "w-0"); !cl.Same(&a) {
		t.Errorf("the node's claim %+v, want a's", cl)
	}
}

// Without the lock the claim is a patch of its own, and so is its release, which keeps
// the released record only while the node still has this claim.
func TestClaimWithoutTheLock(t *testing.T) {
	c := fake.NewClientset(kNode("w-0", "a", true, map[string]string{"other": "x"}))
	p := NewForClient(c, Options{})
	ctx := context.Background()
	a := model.Claim{Apply: "a", Since: time.Now().UTC(), Expires: time.Now().Add(time.Minute).UTC()}
	if _, err := p.Claim(ctx, "w-0", a, alive); err != nil {
		t.Fatal(err)
	}
	if ps := patches(c); len(ps) != 1 {
		t.Fatalf("claiming without the lock: patches %v, want one", ps)
	}
	renewed := a
	renewed.Expires = a.Expires.Add(time.Minute)
	if _, err := p.Claim(ctx, "w-0", renewed, alive); err != nil {
		t.Fatal(err)
	}
	if cl, _ := nodeClaim(t, c, "w-0"); !cl.Same(&renewed) {
		t.Fatalf("after the renewal: %+v", cl)
	}
	done := renewed
	done.Released = time.Now().UTC()
	if err := p.Release(ctx, "w-0", renewed, &done); err != nil {
		t.Fatal(err)
	}
	if cl, _ := nodeClaim(t, c, "w-0"); !cl.Same(&done) {
		t.Errorf("after the release: %+v, want the released record", cl)
	}
	if n, _ := c.CoreV1().Nodes().Get(ctx, "w-0", metav1.GetOptions{}); n.Annotations["other"] != "x" {
		t.Errorf("other annotations were lost: %v", n.Annotations)
	}
}

// Without the lock, under a rollout's shared watch, a claim returns once the watch shows it
// (so what apply observes next is at least as new as its claim), and then its intent rides
// on the cordon: one patch each.
func TestClaimWithoutTheLockUnderASharedWatch(t *testing.T) {
	c := fake.NewClientset(kNode("w-0", "a", true, nil))
	p := NewForClient(c, Options{RequestTimeout: 5 * time.Second})
	ctx := context.Background()
	defer p.ShareWatches(ctx)()
	a := model.Claim{Apply: "a", Since: time.Now().UTC(), Expires: time.Now().Add(time.Minute).UTC()}
	t0 := time.Now()
	if _, err := p.Claim(ctx, "w-0", a, alive); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(t0); took > 2*time.Second {
		t.Errorf("the claim returned after %s: the watch showed it long before", took)
	}
	cordon := a
	cordon.Intent = &model.Intent{Target: "rendered-x", Phase: model.PhaseCordon, Cordoned: true}
	if err := p.Intend(ctx, "w-0", cordon); err != nil {
		t.Fatal(err)
	}
	if err := p.Cordon(ctx, "w-0"); err != nil {
		t.Fatal(err)
	}
	if ps := patches(c); len(ps) != 2 {
		t.Errorf("claim, then intent with the cordon: patches %v, want two", ps)
	}
	if cl, _ := nodeClaim(t, c, "w-0"); !cl.Same(&cordon) {
		t.Errorf("after the cordon: %+v, want the claim with the intent to cordon", cl)
	}
}

// Clear writes only over the claim it read: an apply that renews its claim between the
// read and the patch keeps it (the patch's test fails; ErrClaimChanged), and a clear of
// the claim as it is leaves it released on the Node.
func TestClearLeavesAClaimRenewedMeanwhile(t *testing.T) {
	c := fake.NewClientset(kNode("w-0", "a", true, nil))
	p := NewForClient(c, Options{})
	ctx := context.Background()
	since := time.Now().UTC().Truncate(time.Second)
	a := model.Claim{Apply: "a", State: "other-state", Lock: "lock-a", Since: since, Expires: since.Add(time.Minute)}
	if err := c.Tracker().Update(nodesGVR, annotated(t, c, "w-0", protocol.EncodeClaim(a)), ""); err != nil {
		t.Fatal(err)
	}
	renewed := a
	renewed.Expires = since.Add(2 * time.Minute)
	once := true
	c.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		if once { // the holder renews just before the clear's patch lands
			once = false
			if err := c.Tracker().Update(nodesGVR, annotated(t, c, "w-0", protocol.EncodeClaim(renewed)), ""); err != nil {
				t.Error(err)
			}
		}
		return false, nil, nil
	})
	leave := a
	leave.Released = since.Add(time.Second)
	if err := p.Clear(ctx, "w-0", a, leave); !errors.Is(err, providers.ErrClaimChanged) {
		t.Errorf("clearing a claim renewed meanwhile: %v, want ErrClaimChanged", err)
	}
	if cl, _ := nodeClaim(t, c, "w-0"); !cl.Same(&renewed) {
		t.Errorf("the renewed claim was overwritten: %+v", cl)
	}
	leave = renewed
	leave.Released = since.Add(time.Second)
	if err := p.Clear(ctx, "w-0", renewed, leave); err != nil {
		t.Fatal(err)
	}
	if cl, _ := nodeClaim(t, c, "w-0"); !cl.Same(&leave) || cl.Held() {
		t.Errorf("after the clear: %+v, want the released record %+v", cl, leave)
	}
}

// nodesGVR is the Nodes resource, for the fake's tracker.
var nodesGVR = corev1.SchemeGroupVersion.WithResource("nodes")

// annotated is node as the fake has it, with claim as its claim annotation.
func annotated(t *testing.T, c *fake.Clientset, node, claim string) *corev1.Node {
	t.Helper()
	obj, err := c.Tracker().Get(nodesGVR, "", node)
	if err != nil {
		t.Fatal(err)
	}
	n := obj.(*corev1.Node).DeepCopy()
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[protocol.Claim] = claim
	return n
}

// SwapClaim (mcp serve -fleetlock's slots) writes a claim on a node without annotations
// and without one, replaces it only while it is still the one read, and removes it; the
// fleet's nodes come with their machine ids.
func TestSwapClaimAndFleetLockNodes(t *testing.T) {
	bare := kNode("w-0", "a", true, nil)
	bare.Status.NodeInfo.MachineID = "mid-0"
	other := kNode("w-1", "a", true, map[string]string{"other": "x"})
	c := fake.NewClientset(bare, other)
	p := NewForClient(c, Options{})
	ctx := context.Background()
	slot := &model.Claim{Apply: model.FleetLockPrefix + "mid-0", Since: time.Now().UTC(), Expires: time.Now().Add(time.Hour).UTC()}
	for _, node := range []string{"w-0", "w-1"} {
		if err := p.SwapClaim(ctx, node, nil, slot); err != nil {
			t.Fatalf("%s: %v", node, err)
		}
		if cl, _ := nodeClaim(t, c, node); !cl.Same(slot) {
			t.Fatalf("%s's claim after the swap: %+v", node, cl)
		}
	}
	if err := p.SwapClaim(ctx, "w-0", nil, slot); !errors.Is(err, providers.ErrClaimChanged) {
		t.Errorf("a swap from no claim, the node having one: %v; want ErrClaimChanged", err)
	}
	if err := p.SwapClaim(ctx, "w-0", slot, nil); err != nil {
		t.Fatal(err)
	}
	if cl, _ := nodeClaim(t, c, "w-0"); cl != nil {
		t.Errorf("w-0's claim after its removal: %+v", cl)
	}
	nodes, ids, err := p.FleetLockNodes(ctx)
	if err != nil || len(nodes) != 2 || ids["w-0"] != "mid-0" {
		t.Errorf("FleetLockNodes: %d nodes, ids %v, %v", len(nodes), ids, err)
	}
}
