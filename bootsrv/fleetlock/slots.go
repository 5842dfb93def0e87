package fleetlock

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/state"
)

// Store is the fleet as the slots read and claim it (the kubernetes provider's Nodes).
type Store interface {
	// FleetLockNodes are every node now, from a read as new as any write made before it,
	// with each node's machine id by name.
	FleetLockNodes(ctx context.Context) ([]model.Node, map[string]string, error)
	// SwapClaim replaces node's claim by next (nil: none) only if it is still old (nil:
	// none), in one atomic step; else the error wraps model.ErrClaimChanged (providers.ErrClaimChanged).
	SwapClaim(ctx context.Context, node string, old, next *model.Claim) error
}

// Slots is the Locker of mcp serve -fleetlock: a reboot slot is a claim on the client's
// Node (model.Claim, Apply "fleetlock:" and the id, Expires its lease), granted only when
// the node's pool stays within max_unavailable counting its nodes out of service and the
// live claims of applies and other clients (planner.RoomFor, the rule apply uses). Like
// an apply without the state lock, it writes the claim and then looks at the pool again,
// giving the claim back when there is no room; and it grants nothing while an apply that
// holds the state lock runs (docs/decisions.md, "One budget with the OS's own updater").
type Slots struct {
	Store Store
	// Pools are the configuration's pools: a group names one; "default" is the node's own.
	Pools []model.Pool
	// Lease is how long a slot lives unless its client reports steady state.
	Lease time.Duration
	// StateLock is the state lock (nil: none to look at), and Lineage reads the lineage of
	// the state it locks ("": none yet).
	StateLock state.LockInspector
	Lineage   func(context.Context) (string, error)
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	mu sync.Mutex // one decision at a time in this server
}

var _ Locker = (*Slots)(nil)

func (s *Slots) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// Lock takes a slot for p (or renews the one p holds).
func (s *Slots) Lock(ctx context.Context, p Params) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	nodes, n, err := s.client(ctx, p.ID)
	if err != nil {
		return err
	}
	pool, err := s.poolOf(n, p.Group)
	if err != nil {
		return err
	}
	now := s.now()
	mine := model.Claim{Apply: model.FleetLockPrefix + p.ID, Host: "mcp serve -fleetlock", Since: now, Expires: now.Add(s.Lease)}
	if cur := n.Claim; cur.Held() && cur.Apply == mine.Apply && s.live(cur, now, nil, "") {
		// Recursive: the slot held is renewed, no second one taken.
		mine.Since = cur.Since
		return s.swap(ctx, n.Name, cur, &mine)
	}
	if err := s.room(ctx, nodes, pool, n.Name, mine.Apply, now); err != nil {
		return err
	}
	if err := s.swap(ctx, n.Name, ownClaim(n), &mine); err != nil {
		return err
	}
	// Another claimer (an apply without the lock, another server) may have claimed in the
	// pool at this moment: of two, at least one sees the other now.
	nodes, _, err = s.Store.FleetLockNodes(ctx)
	if err == nil {
		err = s.room(ctx, nodes, pool, n.Name, mine.Apply, now)
	}
	if err != nil {
		if berr := s.Store.SwapClaim(context.WithoutCancel(ctx), n.Name, &mine, ownClaim(n)); berr != nil {
			return fmt.Errorf("%w; and giving node %s's claim back: %v", err, n.Name, berr)
		}
		return err
	}
	return nil
}

// Unlock gives back p's slot: its claim is kept on the node as a record, released.
func (s *Slots) Unlock(ctx context.Context, p Params) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, n, err := s.client(ctx, p.ID)
	var e *Error
	if errors.As(err, &e) && e.Kind == KindUnknownNode {
		return nil // nothing held
	} else if err != nil {
		return err
	}
	cur := n.Claim
	if !cur.Held() || cur.Apply != model.FleetLockPrefix+p.ID {
		return nil
	}
	done := *cur
	done.Released = s.now()
	return s.swap(ctx, n.Name, cur, &done)
}

// swap writes next over old, a claim that changed meanwhile refused as a full semaphore:
// the client tries again.
func (s *Slots) swap(ctx context.Context, node string, old, next *model.Claim) error {
	err := s.Store.SwapClaim(ctx, node, old, next)
	if errors.Is(err, model.ErrClaimChanged) {
		return &Error{http.StatusConflict, KindSemaphore, fmt.Sprintf("node %s's claim changed while the slot was decided: try again", node)}
	}
	return err
}

// room says whether node may take a slot of pool now for self (a claim's Apply): no apply
// holding the state lock runs, no live claim of another holds the node, and the pool stays within its budget.
func (s *Slots) room(ctx context.Context, nodes []model.Node, pool *model.Pool, node, self string, now time.Time) error {
	var st *state.LockStatus
	lineage := ""
	if s.StateLock != nil {
		var err error
		if st, err = s.StateLock.LockStatus(ctx); err != nil {
			return fmt.Errorf("reading the state lock: %w", err)
		}
		if s.Lineage != nil {
			if lineage, err = s.Lineage(ctx); err != nil {
				return fmt.Errorf("reading the state: %w", err)
			}
		}
		if st != nil && st.Alive && st.Holder.Operation == "apply" {
			return &Error{http.StatusConflict, KindApply, fmt.Sprintf("an mcp apply that holds the state lock runs (%s, lock ID %s): no reboot slot is granted beside it",
				st.Holder.Who, st.Holder.ID)}
		}
	}
	var members []model.Node
	busy := map[string]string{}
	for _, m := range nodes {
		if !model.SelectorMatches(pool.NodeSelector, m.Labels) {
			continue
		}
		members = append(members, m)
		if m.Claim.Held() && s.live(m.Claim, now, st, lineage) {
			if m.Name == node && m.Claim.Apply == self {
				continue // this client's own, written by this decision
			}
			if m.Name == node {
				return &Error{http.StatusConflict, KindClaimed, fmt.Sprintf("node %s is claimed by %s", node, m.Claim.Holder())}
			}
			busy[m.Name] = "claimed by " + m.Claim.Holder()
		}
	}
	max := pool.MaxUnavailable.Resolve(len(members))
	if ok, why := planner.RoomFor(max, node, members, busy); !ok {
		return &Error{http.StatusConflict, KindSemaphore, fmt.Sprintf("pool %s: %s", pool.Name, why)}
	}
	return nil
}

// live judges a claim as an apply without the state lock does (engine, claimJudge), as
// far as this server can look: a FleetLock slot until its lease ends (at most
// MaxFleetLockLease from its start); kured's lock until its TTL ends (model.Claim.KuredLive); an apply's claim taken under a lock of this state
// (lock: the lock now; lineage: the state's) while that lock is held — an apply leaves its claims on the nodes
// as records when it ends —; any other until its expiry, which its apply renews while it
// works on the node. An expiry far ahead keeps the slot taken (mcp unclaim clears it): a
// server in doubt grants nothing.
func (s *Slots) live(c *model.Claim, now time.Time, lock *state.LockStatus, lineage string) bool {
	switch u, _ := c.Updater(); u {
	case model.UpdaterFleetLock:
		return now.Before(c.Expires) && now.Before(c.Since.Add(model.MaxFleetLockLease))
	case model.UpdaterKured:
		live, _ := c.KuredLive(now)
		return live
	}
	if c.Lock != "" && s.StateLock != nil && (c.State == "" || c.State == lineage) {
		return lock != nil && lock.Alive && lock.Holder.ID == c.Lock
	}
	return now.Before(c.Expires)
}

// ownClaim is the claim written on n itself, which a slot replaces: kured's lock, laid
// over it where kured holds the node (model.Node.OwnClaim), is on kured's DaemonSet.
func ownClaim(n *model.Node) *model.Claim {
	if u, _ := n.Claim.Updater(); u == model.UpdaterKured {
		return n.OwnClaim
	}
	return n.Claim
}

// client reads the fleet's nodes now and finds the one of client id (find).
func (s *Slots) client(ctx context.Context, id string) ([]model.Node, *model.Node, error) {
	nodes, ids, err := s.Store.FleetLockNodes(ctx)
	if err != nil {
		return nil, nil, err
	}
	n, err := find(nodes, ids, id)
	return nodes, n, err
}

// find is the node whose machine id (or, failing that, name) is id.
func find(nodes []model.Node, ids map[string]string, id string) (*model.Node, error) {
	for i := range nodes {
		if ids[nodes[i].Name] == id {
			return &nodes[i], nil
		}
	}
	for i := range nodes {
		if nodes[i].Name == id {
			return &nodes[i], nil
		}
	}
	return nil, &Error{http.StatusNotFound, KindUnknownNode, fmt.Sprintf("no node has machine id or name %q", id)}
}

// poolOf is the pool group names for n: "default" is the one pool n is in; any other
// group must be a pool n is in.
func (s *Slots) poolOf(n *model.Node, group string) (*model.Pool, error) {
	var in []*model.Pool
	for i := range s.Pools {
		p := &s.Pools[i]
		if model.SelectorMatches(p.NodeSelector, n.Labels) {
			if p.Name == group {
				return p, nil
			}
			in = append(in, p)
		}
	}
	if group == "default" && len(in) == 1 {
		return in[0], nil
	}
	names := make([]string, len(in))
	for i, p := range in {
		names[i] = p.Name
	}
	return nil, &Error{http.StatusConflict, KindGroup, fmt.Sprintf("node %s is in pool(s) %v, not in a pool group %q names", n.Name, names, group)}
}
