package providers

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpfleet/mcp/model"
)

// Claimer is implemented by providers that can record on a node which apply works on it
// (model.Claim): the local fleet in node.json, Kubernetes in an annotation of the Node.
// Apply claims a node before its first step and releases it when the node ends, so that a
// second apply — one run with -lock=false, or one beside it — never starts a node a live
// apply works on. Refresh and ObserveNodes report each node's claim (model.Node.Claim).
type Claimer interface {
	// Claim takes node for c, checking and taking in one atomic step: when the node's claim
	// is held by another apply that live says still runs, the node is left as it is and the
	// error is a *ClaimedError naming that apply; else c replaces it (a claim of c's own
	// apply is renewed). prev is the claim c replaced (nil: none).
	//
	// Without the state lock (c.Lock ""), c is on the node, and seen by ObserveNodes,
	// before Claim returns. With it, a provider may instead write c with its next write to
	// the node (its cordon, its hand-over), made only if the node's claim is still the one
	// Claim judged: that write then fails with a *ClaimedError when another apply took the
	// node meanwhile.
	Claim(ctx context.Context, node string, c model.Claim, live ClaimLive) (prev *model.Claim, err error)
	// Intend records c — the claim this apply holds on node (Claim), with a new intent
	// (model.Intent) — before the apply's next action on the node: in the write of that
	// action (Cordon, Uncordon, the hand-over of RunNodeSteps) where the provider can, made
	// only if the node's claim is still this apply's, else at once. The action's write
	// then fails with a *ClaimedError when another apply took the node meanwhile. An
	// action that has nothing of its own to write still writes the intent.
	Intend(ctx context.Context, node string, c model.Claim) error
	// Release ends c on node, if the node still has it: c is replaced by leave (c released,
	// kept as the node's record; or, when c did nothing, the claim it replaced). A claim
	// taken under the state lock may instead be left as it is: it ends with that lock.
	Release(ctx context.Context, node string, c model.Claim, leave *model.Claim) error
	// Clear ends held, another apply's claim on node, by hand (mcp unclaim): if the node's
	// claim is still held (model.Claim.Same), it is replaced by leave (held, released) in
	// one atomic step, with or without the state lock; a claim that changed since it was
	// read is left as it is, and the error wraps ErrClaimChanged.
	Clear(ctx context.Context, node string, held, leave model.Claim) error
}

// ErrClaimChanged is Clear's refusal of a claim that is no longer the one judged
// (model.ErrClaimChanged, for those below providers that swap claims).
var ErrClaimChanged = model.ErrClaimChanged

// ClaimLive judges whether the apply that holds a claim still runs, and says how it judged
// (for people): "process 4242 runs on this machine".
type ClaimLive func(held model.Claim) (live bool, why string)

// ErrClaimed is wrapped by *ClaimedError.
var ErrClaimed = errors.New("claimed by another apply")

// ClaimedError is a node that another live apply works on.
type ClaimedError struct {
	Node   string
	Holder model.Claim
	Why    string // how the holder was judged alive
}

func (e *ClaimedError) Error() string {
	return fmt.Sprintf("node %s is claimed by %s, which still runs (%s)", e.Node, e.Holder.String(), e.Why)
}

func (e *ClaimedError) Is(target error) bool { return target == ErrClaimed }
