package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

// Unclaimed is a node Unclaim looked at.
type Unclaimed struct {
	Node string
	// Claim is the claim cleared; nil when the node had none held (nothing to clear).
	Claim *model.Claim
	// Why says how its apply was judged: gone, or live and cleared with force.
	Why string
	// Forced: its apply was judged live and the claim cleared all the same (force).
	Forced bool
}

// Unclaim clears by hand the claims other applies hold on nodes (mcp unclaim, mcp fleet
// set NODE claim-): a claim that nothing else ends soon enough — its apply killed on a
// machine whose processes cannot be checked from here, an expiry written far off. Each
// claim is judged as apply judges it (claimJudge), by one that does not hold the state
// lock, for the state of lineage (""; none read): a claim whose apply runs, as far as can
// be told, is refused unless force. A cleared claim stays on the node as a released
// record, and is replaced only if it is still the one judged (providers.Claimer.Clear).
// Every node is tried; the refusals are joined.
func (w *Workspace) Unclaim(ctx context.Context, lineage string, nodes []string, force bool) ([]Unclaimed, error) {
	p := w.provider()
	if !p.Has(providers.CapClaimer) {
		return nil, errors.New("this provider keeps no claims: there is nothing to clear")
	}
	observed, err := p.ObserveNodes(ctx, nodes)
	if err != nil {
		return nil, fmt.Errorf("reading the nodes' claims: %w", err)
	}
	j := newClaimJudge(w.Backend, lineage, Locking{NoLock: true})
	var out []Unclaimed
	var errs []error
	for _, name := range nodes {
		i := slices.IndexFunc(observed, func(n model.Node) bool { return n.Name == name })
		switch {
		case i < 0:
			errs = append(errs, fmt.Errorf("node %s: no such node", name))
			continue
		case !observed[i].Claim.Held():
			out = append(out, Unclaimed{Node: name})
			continue
		}
		u, err := j.clear(ctx, p, name, *observed[i].Claim, force)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, u)
	}
	return out, errors.Join(errs...)
}

// clear judges held, node's claim, and clears it unless its apply is live (or force).
func (j *claimJudge) clear(ctx context.Context, p providers.Claimer, node string, held model.Claim, force bool) (Unclaimed, error) {
	if u, _ := held.Updater(); u == model.UpdaterKured {
		// Not a claim on the node: kured's lock on its DaemonSet, which kured alone releases.
		return Unclaimed{}, fmt.Errorf("node %s: not cleared: it is held by %s, which is kured's to release "+
			"(kured removes it after the reboot; a lock kured will never release is removed from the DaemonSet's annotation by hand)", node, &held)
	}
	live, why := j.live(held)
	if live && !force {
		return Unclaimed{}, fmt.Errorf("node %s: not cleared: %s may still work on it (%s); "+
			"if you know it has stopped (its machine or container is gone), clear it with -force", node, &held, why)
	}
	leave := held
	leave.Released = time.Now().UTC()
	if err := p.Clear(ctx, node, held, leave); err != nil {
		if errors.Is(err, providers.ErrClaimChanged) {
			return Unclaimed{}, fmt.Errorf("%w (renewed by its apply, or taken by another): nothing cleared; look again", err)
		}
		return Unclaimed{}, err
	}
	return Unclaimed{Node: node, Claim: &held, Why: why, Forced: live}, nil
}
