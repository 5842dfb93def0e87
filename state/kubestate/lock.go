package kubestate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/state"
)

// LockInfoAnnotation holds the lock holder's state.LockInfo (JSON) on the Lease.
const LockInfoAnnotation = protocol.Prefix + "lock-info"

// The state lock is a coordination/v1 Lease: holderIdentity is the lock ID, the whole
// LockInfo is in an annotation, and the holder renews it every third of its duration.
// A Lease whose renewTime + leaseDurationSeconds has passed belongs to a holder that is
// gone, and the next Lock takes it over — updating it with the resourceVersion it read, so
// two takers cannot both win. Unlike the local lock file, a crashed apply therefore frees
// the lock by itself after the duration; force-unlock is for a holder that is alive but
// should not be.

func (b *Backend) leaseWhere() string { return "Lease " + b.ns + "/" + protocol.LockLease }

// Lock takes the Lease, or takes over an expired one; a live holder gives a *state.LockError.
func (b *Backend) Lock(ctx context.Context, info state.LockInfo) (state.Unlocker, error) {
	info.Path = b.leaseWhere()
	ann, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	leases := b.cs.CoordinationV1().Leases(b.ns)
	secs := int32(max(1, b.opts.LeaseDuration/time.Second))
	for range 3 {
		now := metav1.NewMicroTime(b.opts.Now())
		l, err := leases.Get(ctx, protocol.LockLease, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = leases.Create(ctx, &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: protocol.LockLease, Namespace: b.ns,
					Labels:      map[string]string{protocol.ManagedByLabel: protocol.ManagedByValue},
					Annotations: map[string]string{LockInfoAnnotation: string(ann)}},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: &info.ID, LeaseDurationSeconds: &secs,
					AcquireTime: &now, RenewTime: &now},
			}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				continue // another taker was first: look at what it wrote
			}
			if err != nil {
				return nil, fmt.Errorf("locking state (%s): %w", b.leaseWhere(), err)
			}
			return b.hold(info.ID), nil
		}
		if err != nil {
			return nil, fmt.Errorf("locking state (%s): %w", b.leaseWhere(), err)
		}
		if b.live(l) {
			return nil, b.lockError(l)
		}
		// Released or expired: take it over, but only the version we just read.
		t := l.DeepCopy()
		if t.Annotations == nil {
			t.Annotations = map[string]string{}
		}
		t.Annotations[LockInfoAnnotation] = string(ann)
		transitions := int32(1)
		if l.Spec.LeaseTransitions != nil {
			transitions += *l.Spec.LeaseTransitions
		}
		t.Spec = coordinationv1.LeaseSpec{HolderIdentity: &info.ID, LeaseDurationSeconds: &secs,
			AcquireTime: &now, RenewTime: &now, LeaseTransitions: &transitions}
		_, err = leases.Update(ctx, t, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue // another taker won: look at what it wrote
		}
		if err != nil {
			return nil, fmt.Errorf("taking over the expired state lock (%s): %w", b.leaseWhere(), err)
		}
		return b.hold(info.ID), nil
	}
	return nil, fmt.Errorf("locking state (%s): others keep taking the lock; try again", b.leaseWhere())
}

// expiry is when the Lease lapses unless its holder renews it.
func (b *Backend) expiry(l *coordinationv1.Lease) time.Time {
	d := b.opts.LeaseDuration
	if l.Spec.LeaseDurationSeconds != nil {
		d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	var t time.Time
	switch {
	case l.Spec.RenewTime != nil:
		t = l.Spec.RenewTime.Time
	case l.Spec.AcquireTime != nil:
		t = l.Spec.AcquireTime.Time
	}
	return t.Add(d)
}

func (b *Backend) live(l *coordinationv1.Lease) bool {
	return holder(l) != "" && b.expiry(l).After(b.opts.Now())
}

func holder(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// holderInfo is the holder's LockInfo from the annotation, or what the Lease itself says.
func holderInfo(l *coordinationv1.Lease) state.LockInfo {
	var info state.LockInfo
	if json.Unmarshal([]byte(l.Annotations[LockInfoAnnotation]), &info) != nil || info.ID != holder(l) {
		info = state.LockInfo{ID: holder(l), Who: "unknown (the Lease has no lock info)"}
		if l.Spec.AcquireTime != nil {
			info.Created = l.Spec.AcquireTime.Time
		}
	}
	return info
}

func (b *Backend) lockError(l *coordinationv1.Lease) *state.LockError {
	return &state.LockError{Holder: holderInfo(l), Note: fmt.Sprintf(
		"the lock is %s, which its holder renews; it expires at %s if the holder stops renewing it",
		b.leaseWhere(), b.expiry(l).UTC().Format(time.RFC3339))}
}

// leaseLock is a held Lease, renewed until Unlock.
type leaseLock struct {
	b      *Backend
	id     string
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	lost   error         // set when the Lease was found taken or gone, or lapsed unrenewed
	lostCh chan struct{} // closed when lost is set
}

var _ state.Losable = (*leaseLock)(nil)

// Lost is closed when the lock is lost while held.
func (u *leaseLock) Lost() <-chan struct{} { return u.lostCh }

// LostErr says why the lock was lost (nil while it is held).
func (u *leaseLock) LostErr() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.lost
}

func (u *leaseLock) lose(err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.lost == nil {
		u.lost = err
		close(u.lostCh)
	}
}

func (b *Backend) hold(id string) *leaseLock {
	ctx, cancel := context.WithCancel(context.Background())
	u := &leaseLock{b: b, id: id, cancel: cancel, done: make(chan struct{}), lostCh: make(chan struct{})}
	go u.renewLoop(ctx)
	return u
}

func (u *leaseLock) renewLoop(ctx context.Context) {
	defer close(u.done)
	every := u.b.opts.LeaseDuration / 3
	t := time.NewTicker(every)
	defer t.Stop()
	renewed := u.b.opts.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, every)
		err := u.renew(rctx)
		cancel()
		if err == nil {
			renewed = u.b.opts.Now()
			continue
		}
		if errors.Is(err, context.Canceled) {
			continue
		}
		var le *state.LockError
		if errors.As(err, &le) || apierrors.IsNotFound(err) {
			u.lose(err)
			return
		}
		// Anything else (the apiserver briefly away, a conflict) is tried again at the
		// next tick; the Lease lasts three ticks. Past its expiry another run may take it.
		if u.b.opts.Now().Sub(renewed) >= u.b.opts.LeaseDuration {
			u.lose(fmt.Errorf("%s was not renewed for %s and may be held by another run now: %w",
				u.b.leaseWhere(), u.b.opts.LeaseDuration, err))
			return
		}
	}
}

// renew moves renewTime to now if the Lease is still ours.
func (u *leaseLock) renew(ctx context.Context) error {
	leases := u.b.cs.CoordinationV1().Leases(u.b.ns)
	l, err := leases.Get(ctx, protocol.LockLease, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if holder(l) != u.id {
		return u.b.lockError(l)
	}
	now := metav1.NewMicroTime(u.b.opts.Now())
	l.Spec.RenewTime = &now
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}

// Unlock stops renewing and deletes the Lease if it is still ours. A renewal cancelled by
// Unlock may still land on the apiserver after Unlock has read the Lease, so a delete
// refused because the Lease changed is tried again on a fresh read while the holder is
// still this run: without that, a finished apply left its Lease held for a full duration.
func (u *leaseLock) Unlock(ctx context.Context) error {
	u.cancel()
	<-u.done
	u.mu.Lock()
	lost := u.lost
	u.mu.Unlock()
	leases := u.b.cs.CoordinationV1().Leases(u.b.ns)
	var err error
	for range unlockTries {
		var l *coordinationv1.Lease
		l, err = leases.Get(ctx, protocol.LockLease, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("unlocking state: %s was removed while this run held it (force-unlock?)", u.b.leaseWhere())
		}
		if err != nil {
			return fmt.Errorf("unlocking state (%s): %w", u.b.leaseWhere(), err)
		}
		if holder(l) != u.id {
			h := holderInfo(l)
			return fmt.Errorf("unlocking state: the lock was lost while this run held it and is now held by %s (lock ID %s)%s",
				h.Who, h.ID, lostDetail(lost))
		}
		if err = u.b.deleteLease(ctx, l); !errors.Is(err, errLeaseChanged) {
			return err
		}
	}
	return err
}

// unlockTries bounds Unlock's re-reads of a Lease that changed under its delete.
const unlockTries = 5

// errLeaseChanged marks a delete refused because the Lease changed since it was read.
var errLeaseChanged = errors.New("changed meanwhile")

func lostDetail(err error) string {
	if err == nil {
		return ""
	}
	return "; a renewal failed: " + err.Error()
}

func (b *Backend) deleteLease(ctx context.Context, l *coordinationv1.Lease) error {
	pre := &metav1.Preconditions{}
	if l.UID != "" {
		pre.UID = &l.UID
	}
	if l.ResourceVersion != "" {
		pre.ResourceVersion = &l.ResourceVersion
	}
	err := b.cs.CoordinationV1().Leases(b.ns).Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: pre})
	if apierrors.IsConflict(err) {
		return fmt.Errorf("unlocking state: %s %w; look at it again: %w", b.leaseWhere(), errLeaseChanged, err)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("unlocking state (%s): %w", b.leaseWhere(), err)
	}
	return nil
}

// ForceUnlock deletes the Lease if its holder is id; otherwise it names the actual holder.
func (b *Backend) ForceUnlock(ctx context.Context, id string) error {
	l, err := b.cs.CoordinationV1().Leases(b.ns).Get(ctx, protocol.LockLease, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("state in namespace %s is not locked (no %s)", b.ns, b.leaseWhere())
	}
	if err != nil {
		return fmt.Errorf("reading the state lock (%s): %w", b.leaseWhere(), err)
	}
	if holder(l) != id {
		h := holderInfo(l)
		if holder(l) == "" {
			return fmt.Errorf("lock ID %q does not match: %s is released (no holder)", id, b.leaseWhere())
		}
		return fmt.Errorf("lock ID %q does not match the lock held (ID %s, by %s, operation %q)", id, h.ID, h.Who, h.Operation)
	}
	return b.deleteLease(ctx, l)
}

var _ state.LockInspector = (*Backend)(nil)

// LockStatus says who holds the Lease and whether that holder is alive: it is while
// renewTime + leaseDurationSeconds is in the future (the holder renews every third of it).
// A Lease with no holder is no lock.
func (b *Backend) LockStatus(ctx context.Context) (*state.LockStatus, error) {
	l, err := b.cs.CoordinationV1().Leases(b.ns).Get(ctx, protocol.LockLease, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the state lock (%s): %w", b.leaseWhere(), err)
	}
	if holder(l) == "" {
		return nil, nil
	}
	exp := b.expiry(l).UTC().Format(time.RFC3339)
	st := &state.LockStatus{Holder: holderInfo(l), Alive: b.live(l)}
	if st.Alive {
		st.Detail = fmt.Sprintf("%s is being renewed: it expires at %s unless its holder renews it", b.leaseWhere(), exp)
	} else {
		st.Detail = fmt.Sprintf("%s expired at %s: its holder stopped renewing it", b.leaseWhere(), exp)
	}
	return st, nil
}
