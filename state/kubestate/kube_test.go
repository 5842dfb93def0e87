package kubestate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state"
)

const ns = "mcp-system"

func secret(t *testing.T, cs *fake.Clientset, name string) *corev1.Secret {
	t.Helper()
	s, err := cs.CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("secret %s: %v", name, err)
	}
	return s
}

// createdSecrets lists the names of the Secrets created, in order.
func createdSecrets(cs *fake.Clientset) []string {
	var out []string
	for _, a := range cs.Actions() {
		if c, ok := a.(k8stesting.CreateAction); ok && a.GetVerb() == "create" && a.GetResource().Resource == "secrets" {
			out = append(out, c.GetObject().(*corev1.Secret).Name)
		}
	}
	return out
}

// named is a rendered config of pool, named by its content as the renderer names it.
func named(pool string) *model.Rendered {
	r := &model.Rendered{Pool: pool, IgnitionVersion: "3.4.0"}
	r.Name = content.Name(r)
	return r
}

var workerName, infraName = named("worker").Name, named("infra").Name

func sample() *state.State {
	s := state.New()
	s.Serial = 1
	s.Pointers["worker"] = workerName
	s.Pointers["infra"] = infraName
	s.Rendered[workerName] = named("worker")
	s.Rendered[infraName] = named("infra")
	return s
}

func TestRoundTripRenderedFirstAndImmutable(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	b := New(cs, ns, Options{})
	empty, err := b.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if empty.Lineage != "" || empty.Serial != 0 || len(empty.Rendered) != 0 {
		t.Fatalf("absent state read as %+v", empty)
	}
	s := sample()
	if err := b.Write(ctx, s); err != nil {
		t.Fatal(err)
	}
	want := []string{protocol.RenderedSecretName(infraName), protocol.RenderedSecretName(workerName), protocol.StateSecret}
	if d := cmp.Diff(want, createdSecrets(cs)); d != "" {
		t.Errorf("created secrets in order (-want +got):\n%s", d)
	}
	r := secret(t, cs, protocol.RenderedSecretName(workerName))
	if r.Immutable == nil || !*r.Immutable {
		t.Errorf("rendered secret is not immutable")
	}
	wantLabels := map[string]string{protocol.ManagedByLabel: protocol.ManagedByValue,
		protocol.KindLabel: "rendered", protocol.RenderedLabel: workerName}
	if d := cmp.Diff(wantLabels, r.Labels); d != "" {
		t.Errorf("rendered secret labels (-want +got):\n%s", d)
	}
	if !strings.Contains(string(r.Data[protocol.RenderedKey]), `"pool":"worker"`) {
		t.Errorf("rendered secret data: %s", r.Data[protocol.RenderedKey])
	}
	head := secret(t, cs, protocol.StateSecret)
	if head.Labels[protocol.KindLabel] != "state" || len(head.Data[KeyState]) == 0 {
		t.Errorf("head = %+v", head)
	}

	// A fresh backend reads what the first wrote.
	got, err := New(cs, ns, Options{}).Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(s, got, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}

	// Writing again leaves existing rendered configs alone, even via a backend that
	// has never seen them (AlreadyExists is fine).
	cs.ClearActions()
	s.Serial++
	if err := New(cs, ns, Options{}).Write(ctx, s); err != nil {
		t.Fatal(err)
	}
	for _, a := range cs.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && a.GetVerb() == "update" && u.GetObject().(*corev1.Secret).Name != protocol.StateSecret {
			t.Errorf("an existing rendered config was updated: %v", u.GetObject().(*corev1.Secret).Name)
		}
	}
}

// writeChunked writes a state of many pools through a backend with 256-byte chunks.
func writeChunked(t *testing.T, cs *fake.Clientset) (*Backend, *state.State) {
	t.Helper()
	b := New(cs, ns, Options{ChunkSize: 256})
	s := sample()
	for i := range 40 {
		s.Pointers[fmt.Sprintf("pool-%02d", i)] = workerName
	}
	if err := b.Write(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return b, s
}

func TestChunkedState(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	b, s := writeChunked(t, cs)
	head := secret(t, cs, protocol.StateSecret)
	chunks := strings.Fields(string(head.Data[KeyChunks]))
	if len(chunks) < 2 || len(head.Data[KeyState]) != 0 {
		t.Fatalf("head has chunks %v and inline state of %d bytes", chunks, len(head.Data[KeyState]))
	}
	created := createdSecrets(cs)
	if created[len(created)-1] != protocol.StateSecret {
		t.Errorf("head not created last: %v", created)
	}
	for _, n := range chunks {
		c := secret(t, cs, n)
		if !strings.HasPrefix(n, ChunkPrefix) || c.Labels[protocol.KindLabel] != "state-chunk" ||
			c.Labels[protocol.ManagedByLabel] != "mcp" || c.Immutable == nil || !*c.Immutable || len(c.Data[KeyChunk]) > 256 {
			t.Errorf("chunk %s = %+v", n, c)
		}
	}
	got, err := New(cs, ns, Options{}).Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(s, got, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("chunked round trip (-want +got):\n%s", d)
	}

	// A new head drops the chunks it no longer uses, after it is written.
	got.Serial++
	got.Pointers = map[string]string{"worker": workerName}
	if err := b.Write(ctx, got); err != nil {
		t.Fatal(err)
	}
	head = secret(t, cs, protocol.StateSecret)
	if len(head.Data[KeyChunks]) != 0 || len(head.Data[KeyState]) == 0 {
		t.Errorf("small state not inline: %v", head.Data)
	}
	l, _ := cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: protocol.KindLabel + "=state-chunk"})
	if len(l.Items) != 0 {
		t.Errorf("%d old chunks left", len(l.Items))
	}
	again, err := b.Read(ctx)
	if err != nil || again.Serial != got.Serial || len(again.Pointers) != 1 {
		t.Errorf("read after shrinking: %+v, %v", again, err)
	}
}

func TestJournalAppendReplayAndFold(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	b := New(cs, ns, Options{})
	s := sample()
	if err := b.Write(ctx, s); err != nil {
		t.Fatal(err)
	}
	for _, r := range []state.JournalRecord{
		{Node: "w-1", Target: workerName, Step: "cordon"},
		{Node: "w-1", Target: workerName, Step: "drain"},
		{Node: "w-2", Target: workerName, Step: "cordon"},
		{Node: "w-2", Target: workerName, Finished: true},
	} {
		if err := b.AppendJournal(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	// A torn last line is ignored.
	head := secret(t, cs, protocol.StateSecret)
	head.Data[KeyJournal] = append(head.Data[KeyJournal], `{"node":"w-1","tar`...)
	if _, err := cs.CoreV1().Secrets(ns).Update(ctx, head, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := New(cs, ns, Options{}).Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]model.JournalEntry{"w-1": {Target: workerName, Done: []string{"cordon", "drain"}}}
	if d := cmp.Diff(want, got.Journal); d != "" {
		t.Errorf("journal (-want +got):\n%s", d)
	}
	// Write folds the journal into the state and clears it.
	got.Serial++
	b2 := New(cs, ns, Options{JournalLimit: 300})
	if err := b2.Write(ctx, got); err != nil {
		t.Fatal(err)
	}
	if j := secret(t, cs, protocol.StateSecret).Data[KeyJournal]; len(j) != 0 {
		t.Errorf("journal still present after write: %q", j)
	}
	again, _ := b2.Read(ctx)
	if d := cmp.Diff(want, again.Journal); d != "" {
		t.Errorf("folded journal (-want +got):\n%s", d)
	}
	// A journal past the limit is folded by AppendJournal itself.
	for i := range 10 {
		r := state.JournalRecord{Node: "w-3", Target: workerName, Step: "write /etc/f-" + strconv.Itoa(i)}
		if err := b2.AppendJournal(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if j := secret(t, cs, protocol.StateSecret).Data[KeyJournal]; len(j) > 300 {
		t.Errorf("journal of %d bytes past the limit", len(j))
	}
	final, err := b2.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(final.Journal["w-3"].Done); n != 10 || final.Serial != got.Serial || final.Lineage != s.Lineage {
		t.Errorf("after folding: %d steps of w-3, serial %d lineage %s", n, final.Serial, final.Lineage)
	}
}

// TestJournalBadLineNamesSecret: a bad journal line that is not the last is an error naming
// the head Secret, its data key and the line, and saying what to do.
func TestJournalBadLineNamesSecret(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	b := New(cs, ns, Options{})
	if err := b.Write(ctx, sample()); err != nil {
		t.Fatal(err)
	}
	head := secret(t, cs, protocol.StateSecret)
	good := `{"node":"w-1","target":"rendered-worker-abc","step":"cordon"}` + "\n"
	head.Data[KeyJournal] = []byte(good + "garbage\n" + good)
	if _, err := cs.CoreV1().Secrets(ns).Update(ctx, head, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := New(cs, ns, Options{}).Read(ctx)
	if err == nil {
		t.Fatal("a journal with a bad middle line was read")
	}
	for _, want := range []string{"secret " + ns + "/" + protocol.StateSecret, `"journal"`, "line 2", "kubectl"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

// TestEmptyOrNullStateIsAnError: a head whose state.json is empty or null is damage, not a
// fresh state; a head with only a journal (AppendJournal before any Write) is one.
func TestEmptyOrNullStateIsAnError(t *testing.T) {
	ctx := context.Background()
	for _, raw := range []string{"", " ", "null", "{}"} {
		cs := fake.NewClientset(&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: protocol.StateSecret, Namespace: ns, Labels: objectLabels(KindState)},
			Data:       map[string][]byte{KeyState: []byte(raw)}})
		_, err := New(cs, ns, Options{}).Read(ctx)
		if err == nil || !strings.Contains(err.Error(), "secret "+ns+"/"+protocol.StateSecret) {
			t.Errorf("state.json %q: %v, want an error naming the Secret", raw, err)
		}
	}
	cs := fake.NewClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: protocol.StateSecret, Namespace: ns, Labels: objectLabels(KindState)},
		Data:       map[string][]byte{KeyJournal: []byte(`{"node":"w-1","target":"rendered-worker-abc","step":"cordon"}` + "\n")}})
	st, err := New(cs, ns, Options{}).Read(ctx)
	if err != nil || st.Lineage != "" || len(st.Journal["w-1"].Done) != 1 {
		t.Errorf("a journal-only head: %+v, %v", st, err)
	}
}

// versioned makes the fake clientset give Secrets increasing resourceVersions (the fake
// tracker does not), so that the backend's own staleness check can be tested; it does not
// enforce them — the real apiserver's acceptance tests do.
func versioned(cs *fake.Clientset) {
	var n atomic.Int64
	cs.PrependReactor("*", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if o, ok := a.(interface{ GetObject() runtime.Object }); ok && (a.GetVerb() == "create" || a.GetVerb() == "update") {
			o.GetObject().(metav1.Object).SetResourceVersion(strconv.FormatInt(n.Add(1), 10))
		}
		return false, nil, nil
	})
}

func TestWriteRefusesAStateChangedSinceRead(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	versioned(cs)
	a, b := New(cs, ns, Options{}), New(cs, ns, Options{})
	if err := a.Write(ctx, sample()); err != nil {
		t.Fatal(err)
	}
	sa, _ := a.Read(ctx)
	sb, _ := b.Read(ctx)
	sb.Serial++
	if err := b.Write(ctx, sb); err != nil {
		t.Fatal(err)
	}
	sa.Serial++
	err := a.Write(ctx, sa)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("write over a changed state: %v, want ErrConflict", err)
	}
	// Its own journal appends do not count as someone else's change.
	if _, err := a.Read(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.AppendJournal(ctx, state.JournalRecord{Node: "w-1", Step: "cordon"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Write(ctx, sa); err != nil {
		t.Errorf("write after own journal append: %v", err)
	}
}

// clock is a settable clock for the lock tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func lockInfo(who string) state.LockInfo {
	i := state.NewLockInfo("apply", "test")
	i.Who = who
	return i
}

func TestLockHeldNamesHolderAndTakeoverAfterExpiry(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	clk := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	b := New(cs, ns, Options{LeaseDuration: 15 * time.Second, Now: clk.Now})
	alice := lockInfo("alice@node1")
	ua, err := b.Lock(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	l, err := cs.CoordinationV1().Leases(ns).Get(ctx, protocol.LockLease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *l.Spec.HolderIdentity != alice.ID || *l.Spec.LeaseDurationSeconds != 15 ||
		!l.Spec.RenewTime.Time.Equal(clk.Now()) || !strings.Contains(l.Annotations[LockInfoAnnotation], "alice@node1") {
		t.Errorf("lease = %+v", l)
	}

	bob := lockInfo("bob@node2")
	clk.Add(10 * time.Second)
	_, err = New(cs, ns, Options{Now: clk.Now}).Lock(ctx, bob)
	var le *state.LockError
	if !errors.As(err, &le) || le.Holder.ID != alice.ID || le.Holder.Who != "alice@node1" {
		t.Fatalf("lock while held: %v", err)
	}
	for _, s := range []string{"alice@node1", "Lease mcp-system/mcp-state-lock", "2026-01-02T03:04:20Z", "mcp force-unlock " + alice.ID} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("lock error %q does not mention %q", err, s)
		}
	}

	// Alice stops renewing (her clock here never moves renewTime past the first), and
	// the lease runs out: Bob takes it over.
	clk.Add(6 * time.Second)
	ub, err := New(cs, ns, Options{Now: clk.Now}).Lock(ctx, bob)
	if err != nil {
		t.Fatalf("takeover of an expired lease: %v", err)
	}
	l, _ = cs.CoordinationV1().Leases(ns).Get(ctx, protocol.LockLease, metav1.GetOptions{})
	if *l.Spec.HolderIdentity != bob.ID || l.Spec.LeaseTransitions == nil || *l.Spec.LeaseTransitions != 1 {
		t.Errorf("lease after takeover = %+v", l.Spec)
	}
	// Alice's unlock must not delete Bob's lease, and says who has it.
	if err := ua.Unlock(ctx); err == nil || !strings.Contains(err.Error(), "bob@node2") {
		t.Errorf("unlock of a lost lock: %v", err)
	}
	if _, err := cs.CoordinationV1().Leases(ns).Get(ctx, protocol.LockLease, metav1.GetOptions{}); err != nil {
		t.Errorf("bob's lease gone: %v", err)
	}
	if err := ub.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoordinationV1().Leases(ns).Get(ctx, protocol.LockLease, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("lease after unlock: %v", err)
	}
}

func TestLockIsRenewed(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	clk := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	b := New(cs, ns, Options{LeaseDuration: 90 * time.Millisecond, Now: clk.Now})
	u, err := b.Lock(ctx, lockInfo("alice"))
	if err != nil {
		t.Fatal(err)
	}
	start := clk.Now()
	clk.Add(time.Minute)
	deadline := time.Now().Add(5 * time.Second)
	for {
		l, err := cs.CoordinationV1().Leases(ns).Get(ctx, protocol.LockLease, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if l.Spec.RenewTime.Time.After(start) {
			if !l.Spec.AcquireTime.Time.Equal(start) {
				t.Errorf("renewal moved acquireTime: %v", l.Spec.AcquireTime)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("lease not renewed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Renewed, it stays held although the first renewTime + duration is long past.
	if _, err := New(cs, ns, Options{Now: clk.Now}).Lock(ctx, lockInfo("bob")); err == nil {
		t.Error("a renewed lock was taken over")
	}
	if err := u.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestForceUnlock(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	b := New(cs, ns, Options{})
	if err := b.ForceUnlock(ctx, "x"); err == nil || !strings.Contains(err.Error(), "not locked") {
		t.Errorf("force-unlock of no lock: %v", err)
	}
	alice := lockInfo("alice@node1")
	u, err := b.Lock(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Unlock(ctx)
	other := New(cs, ns, Options{})
	if err := other.ForceUnlock(ctx, "wrong-id"); err == nil || !strings.Contains(err.Error(), alice.ID) ||
		!strings.Contains(err.Error(), "alice@node1") {
		t.Errorf("force-unlock with a wrong ID: %v", err)
	}
	if err := other.ForceUnlock(ctx, alice.ID); err != nil {
		t.Fatal(err)
	}
	u2, err := other.Lock(ctx, lockInfo("bob"))
	if err != nil {
		t.Fatalf("lock after force-unlock: %v", err)
	}
	u2.Unlock(ctx)
}

// A lock whose Lease another run took is reported lost, so the holder starts nothing new.
func TestLockLostWhenTaken(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	u, err := New(cs, ns, Options{LeaseDuration: 90 * time.Millisecond}).Lock(ctx, lockInfo("alice"))
	if err != nil {
		t.Fatal(err)
	}
	l := u.(state.Losable)
	if l.LostErr() != nil {
		t.Fatalf("lost at once: %v", l.LostErr())
	}
	// Bob's force-unlock and lock (as after alice's Lease had lapsed).
	leases := cs.CoordinationV1().Leases(ns)
	lease, err := leases.Get(ctx, protocol.LockLease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bob := "bob-id"
	lease.Spec.HolderIdentity = &bob
	lease.Annotations[LockInfoAnnotation] = `{"id":"bob-id","who":"bob@node2"}`
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("a lock taken by another run was not reported lost")
	}
	if err := l.LostErr(); err == nil || !strings.Contains(err.Error(), "bob@node2") {
		t.Errorf("lost because %v; want the new holder named", err)
	}
}

// A lock that cannot be renewed until its Lease lapses is reported lost.
func TestLockLostWhenNotRenewedInTime(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	var unreachable atomic.Bool // the reactor chain must be set before the renewals start
	cs.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if unreachable.Load() {
			return true, nil, errors.New("apiserver unreachable")
		}
		return false, nil, nil
	})
	u, err := New(cs, ns, Options{LeaseDuration: 90 * time.Millisecond}).Lock(ctx, lockInfo("alice"))
	if err != nil {
		t.Fatal(err)
	}
	unreachable.Store(true)
	select {
	case <-u.(state.Losable).Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("a Lease left unrenewed past its duration was not reported lost")
	}
	if err := u.(state.Losable).LostErr(); err == nil || !strings.Contains(err.Error(), "not renewed") {
		t.Errorf("lost because %v", err)
	}
}

func TestDeleteRendered(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	b := New(cs, ns, Options{})
	if err := b.Write(ctx, sample()); err != nil {
		t.Fatal(err)
	}
	for range 2 { // deleting what is gone is no error
		if err := b.DeleteRendered(ctx, []string{infraName, "rendered-never-stored"}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := New(cs, ns, Options{}).Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Rendered[infraName] != nil || got.Rendered[workerName] == nil {
		t.Errorf("rendered configs after delete: %v", slices.Collect(maps.Keys(got.Rendered)))
	}
}

// TestPruneOrphans: a chunk no head names (a write cut off between its chunks and its
// head) is listed by a dry run and deleted by a prune; the head's own chunks stay.
func TestPruneOrphans(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	b, s := writeChunked(t, cs)
	orphan := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: ChunkPrefix + "cut-off", Namespace: ns, Labels: objectLabels(KindChunk)}}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		got, err := b.PruneOrphans(ctx, dry)
		if err != nil || !slices.Equal(got, []string{orphan.Name}) {
			t.Errorf("PruneOrphans(dry run %v) = %v, %v; want the cut-off chunk", dry, got, err)
		}
	}
	if got, err := b.PruneOrphans(ctx, false); err != nil || len(got) != 0 {
		t.Errorf("a second prune: %v, %v", got, err)
	}
	if back, err := New(cs, ns, Options{}).Read(ctx); err != nil || len(back.Pointers) != len(s.Pointers) {
		t.Errorf("state after pruning orphans: %v", err)
	}
}

// A renewal that Unlock cancelled can still land on the apiserver after Unlock read the
// Lease; the delete is then refused (the Lease changed) and Unlock must read it again and
// delete it, not leave it held for a full duration: the next run was refused the lock
// (TestKubeDriftPastTheAnnotationLimit, seen once in CI).
func TestUnlockAfterALateRenewal(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	u, err := New(cs, ns, Options{}).Lock(ctx, lockInfo("alice"))
	if err != nil {
		t.Fatal(err)
	}
	var deletes atomic.Int32
	cs.PrependReactor("delete", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if deletes.Add(1) > 1 {
			return false, nil, nil
		}
		// The late renewal lands first: the Lease is still alice's, at a new version.
		l, err := cs.Tracker().Get(leaseGVR, ns, protocol.LockLease)
		if err != nil {
			return true, nil, err
		}
		lease := l.(*coordinationv1.Lease).DeepCopy()
		now := metav1.NewMicroTime(time.Now())
		lease.Spec.RenewTime = &now
		if err := cs.Tracker().Update(leaseGVR, lease, ns); err != nil {
			return true, nil, err
		}
		return true, nil, apierrors.NewConflict(leaseGVR.GroupResource(), protocol.LockLease,
			errors.New("the ResourceVersion in the precondition does not match"))
	})
	if err := u.Unlock(ctx); err != nil {
		t.Fatalf("unlock after a late renewal: %v", err)
	}
	if _, err := cs.CoordinationV1().Leases(ns).Get(ctx, protocol.LockLease, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Lease outlived its unlock: %v", err)
	}
	if n := deletes.Load(); n != 2 {
		t.Errorf("%d deletes, want 2 (the refused one, then the one on a fresh read)", n)
	}
}

var leaseGVR = coordinationv1.SchemeGroupVersion.WithResource("leases")

// A journal append that meets conflicts on the head (another apply without the lock writes
// it between the read and the update, many times over) retries until it lands: more than
// the handful of quick tries that two racing applies once ran out of.
func TestAppendJournalOutlastsConflicts(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	b := New(cs, ns, Options{})
	if err := b.Write(ctx, sample()); err != nil {
		t.Fatal(err)
	}
	var conflicts atomic.Int64
	cs.PrependReactor("update", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts.Add(1) <= 8 {
			return true, nil, apierrors.NewConflict(corev1.Resource("secrets"), protocol.StateSecret, errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	if err := b.AppendJournal(ctx, state.JournalRecord{Node: "w-1", Target: "rendered-worker-abc", Step: "cordon"}); err != nil {
		t.Fatalf("append after 8 conflicts: %v", err)
	}
	st, err := b.Read(ctx)
	if err != nil || len(st.Journal["w-1"].Done) != 1 {
		t.Errorf("the journal after the append: %+v, %v", st.Journal, err)
	}
}
