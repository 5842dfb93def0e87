package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

var _ providers.Claimer = (*Provider)(nil)

// A claim is the Node's protocol.Claim annotation, written by a JSON patch whose first
// operation tests the annotation's value as it was judged: of two applies that judged the
// node free, the API server lets one write and refuses the other's patch, and the
// refused one reads the node again and judges the claim it finds (writeClaim). Under the
// state lock the claim rides on the node's first write apply makes anyway — its cordon,
// or its hand-over — so it costs no request; without the lock it is written at once (and
// released by a write of its own). Each intent (Intend) rides on the write of the action
// it names — the cordon, the hand-over, the uncordon — in the same patch: no request of
// its own either.

// heldClaim is a claim this provider took on a node.
type heldClaim struct {
	c    model.Claim
	raw  string  // the annotation's value for c
	old  *string // the annotation as last judged or written (nil: absent): what writing c tests
	bare bool    // the node had no annotations at all
	live providers.ClaimLive
	// pending: not written yet; the node's next write carries it.
	pending bool
	// mine is this apply's claim as last written to the node (nil: not written yet).
	mine *string
}

// Claim judges the node's claim as the node reads now (from the shared watch during an
// apply) and takes it for c: at once without the state lock, waiting until the shared
// watch shows it, so that what apply observes next is at least as new as the claim; under
// the lock, with the node's next write (cordon, hand-over).
func (p *Provider) Claim(ctx context.Context, node string, c model.Claim, live providers.ClaimLive) (*model.Claim, error) {
	if held := p.heldBy(node, c.Apply); held != nil && held.mine != nil {
		// A renewal: the node has this apply's claim as last written, unless another
		// apply took it since (then the test fails and the node is read again). A pending
		// intent is written with it: c is the apply's latest claim.
		h := &heldClaim{c: c, raw: protocol.EncodeClaim(c), old: held.mine, live: live}
		if err := p.writeClaim(ctx, node, h, nil); err != nil {
			return &held.c, err
		}
		p.keepClaim(node, h)
		return &held.c, nil
	}
	n, err := p.readNode(ctx, node)
	if err != nil {
		return nil, fmt.Errorf("node %s: reading its claim: %w", node, err)
	}
	h := &heldClaim{c: c, raw: protocol.EncodeClaim(c), live: live}
	prev, err := h.judge(node, n)
	if err != nil {
		return prev, err
	}
	if c.Lock != "" {
		h.pending = true
		p.keepClaim(node, h)
		return prev, nil
	}
	before := h.old
	if err := p.writeClaim(ctx, node, h, nil); err != nil {
		return prev, err
	}
	p.keepClaim(node, h)
	return prev, p.seen(ctx, node, before)
}

// judge reads n's claim into h (the value to test) and refuses a live other apply's.
func (h *heldClaim) judge(node string, n *corev1.Node) (*model.Claim, error) {
	cur, raw, ok := protocol.ReadClaim(n.Annotations)
	h.old, h.bare = nil, n.Annotations == nil
	if ok {
		h.old = &raw
	}
	if cur.Held() && cur.Apply != h.c.Apply {
		if live, why := h.live(*cur); live {
			return cur, &providers.ClaimedError{Node: node, Holder: *cur, Why: why}
		}
	}
	return cur, nil
}

// writeClaim patches h's claim onto the node together with ops, only if the claim
// annotation is still h.old. When the patch is refused and the claim has changed, the
// node is read again and its claim judged again: a live other apply's fails with a
// *ClaimedError, anything else is tested anew. A refusal with the claim unchanged is the
// error.
func (p *Provider) writeClaim(ctx context.Context, node string, h *heldClaim, ops []jsonOp) error {
	for attempt := 1; ; attempt++ {
		patch, err := json.Marshal(append(h.ops(), ops...))
		if err != nil {
			return err
		}
		_, err = p.client.CoreV1().Nodes().Patch(ctx, node, types.JSONPatchType, patch, metav1.PatchOptions{})
		if err == nil {
			p.claimMu.Lock() // takePending reads it for other nodes
			h.pending, h.mine, h.old, h.bare = false, &h.raw, &h.raw, false
			p.claimMu.Unlock()
			return nil
		}
		n, gerr := p.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if gerr != nil || attempt == 5 {
			return fmt.Errorf("node %s: writing its claim: %w", node, err)
		}
		cur, raw, ok := protocol.ReadClaim(n.Annotations)
		if ok == (h.old != nil) && (!ok || raw == *h.old) && (n.Annotations == nil) == h.bare {
			return fmt.Errorf("node %s: writing its claim: %w", node, err)
		}
		if h.mine != nil && (cur == nil || cur.Apply != h.c.Apply) {
			// This apply's claim was on the node, and another apply took it over since:
			// the node is that apply's now, whatever is judged of it.
			holder := model.Claim{}
			if cur != nil {
				holder = *cur
			}
			return &providers.ClaimedError{Node: node, Holder: holder, Why: "it took the node over from this apply"}
		}
		if _, err := h.judge(node, n); err != nil {
			return err
		}
	}
}

// ops are the patch operations that take the claim: test that the annotation is as
// judged (absent: null), then set it.
func (h *heldClaim) ops() []jsonOp {
	var ops []jsonOp
	if h.bare {
		ops = append(ops, jsonOp{Op: "test", Path: "/metadata/annotations"},
			jsonOp{Op: "add", Path: "/metadata/annotations", Value: map[string]string{}})
	}
	var old any
	if h.old != nil {
		old = *h.old
	}
	return append(ops, jsonOp{Op: "test", Path: claimPath, Value: old}, jsonOp{Op: "add", Path: claimPath, Value: h.raw})
}

// jsonOp is one operation of a JSON patch (RFC 6902). Value is always written: a test of
// null is a test that the member is absent.
type jsonOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// claimPath is the claim annotation's JSON pointer ("/" in a key is "~1").
var claimPath = "/metadata/annotations/" + strings.ReplaceAll(protocol.Claim, "/", "~1")

// annotationOps are the operations that set ann's annotations (the node has annotations).
func annotationOps(ann map[string]string) []jsonOp {
	ops := make([]jsonOp, 0, len(ann))
	for k, v := range ann {
		ops = append(ops, jsonOp{Op: "add", Path: "/metadata/annotations/" + strings.ReplaceAll(k, "/", "~1"), Value: v})
	}
	return ops
}

// seen waits until the shared watch shows the node's claim past before, its value before
// this apply's claim was written — so the watch has every change made before the claim —
// within the request timeout. Without a shared watch every observation is a fresh LIST,
// and nothing needs waiting for.
func (p *Provider) seen(ctx context.Context, node string, before *string) error {
	hub := p.sharedHub()
	if hub == nil {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, p.o.RequestTimeout)
	defer cancel()
	err := hub.wait(wctx, node, func(n *corev1.Node) (bool, error) {
		if n == nil {
			return false, nil
		}
		raw, ok := n.Annotations[protocol.Claim]
		return ok && (before == nil || raw != *before), nil
	})
	if err != nil {
		return fmt.Errorf("node %s: waiting for the watch of the nodes to show its claim: %w", node, err)
	}
	return nil
}

// keepClaim records h as this provider's claim on node for h's apply; takePending hands a
// pending one to the node's next write. (One provider serves one apply; tests play two
// applies with one.)
func (p *Provider) keepClaim(node string, h *heldClaim) {
	p.claimMu.Lock()
	defer p.claimMu.Unlock()
	if p.claims == nil {
		p.claims = map[[2]string]*heldClaim{}
	}
	p.claims[[2]string{node, h.c.Apply}] = h
}

// heldBy is the claim this provider took on node for apply, nil when none.
func (p *Provider) heldBy(node, apply string) *heldClaim {
	p.claimMu.Lock()
	defer p.claimMu.Unlock()
	return p.claims[[2]string{node, apply}]
}

func (p *Provider) takePending(node string) *heldClaim {
	p.claimMu.Lock()
	defer p.claimMu.Unlock()
	for k, h := range p.claims {
		if k[0] == node && h.pending {
			return h
		}
	}
	return nil
}

// Intend keeps c, this apply's claim with a new intent, for the node's next write (its
// cordon, hand-over or uncordon), which carries it in the same JSON patch, testing that the
// node's claim is still this apply's as last written (or, not yet written, as judged).
func (p *Provider) Intend(ctx context.Context, node string, c model.Claim) error {
	p.claimMu.Lock()
	defer p.claimMu.Unlock()
	key := [2]string{node, c.Apply}
	h := p.claims[key]
	if h == nil {
		return fmt.Errorf("node %s: apply %s holds no claim on it to record an intent in", node, c.Apply)
	}
	next := *h
	next.c, next.raw, next.pending = c, protocol.EncodeClaim(c), true
	p.claims[key] = &next
	return nil
}

// writePending writes node's pending claim alone (a step that writes nothing to the node,
// such as an adopted hand-over, still needs the node claimed).
func (p *Provider) writePending(ctx context.Context, node string) error {
	if h := p.takePending(node); h != nil {
		return p.writeClaim(ctx, node, h, nil)
	}
	return nil
}

// Release ends c on node. A claim not written yet is dropped; one taken under the state
// lock is left on the node as the record of who worked on it last (it ends with the lock:
// the next holder of the lock takes it over at once), which costs no request — unless the
// apply failed the node: then, as one taken without the lock always is, it is replaced by
// leave, only if the node still has it, so the failure is on the node for status -nodes.
func (p *Provider) Release(ctx context.Context, node string, c model.Claim, leave *model.Claim) error {
	p.claimMu.Lock()
	h := p.claims[[2]string{node, c.Apply}]
	delete(p.claims, [2]string{node, c.Apply})
	p.claimMu.Unlock()
	if h == nil || h.mine == nil || c.Lock != "" && (leave == nil || leave.Failed == "") {
		return nil
	}
	ops := []jsonOp{{Op: "test", Path: claimPath, Value: *h.mine}, {Op: "remove", Path: claimPath}}
	if leave != nil {
		ops[1] = jsonOp{Op: "add", Path: claimPath, Value: protocol.EncodeClaim(*leave)}
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	if _, err := p.client.CoreV1().Nodes().Patch(ctx, node, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		n, gerr := p.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if gerr == nil && n.Annotations[protocol.Claim] != *h.mine {
			return nil // not ours any more: whoever has it keeps it
		}
		return fmt.Errorf("node %s: releasing its claim: %w", node, err)
	}
	return nil
}

// Clear replaces held, read from the Node just now, by leave (SwapClaim): a claim the
// holder renewed or another apply took meanwhile is left as it is (ErrClaimChanged).
func (p *Provider) Clear(ctx context.Context, node string, held, leave model.Claim) error {
	return p.SwapClaim(ctx, node, &held, &leave)
}

// SwapClaim replaces node's claim by next (nil: removes it) only if it is still old (nil:
// none): a JSON patch whose first operation tests that the annotation is still the value
// read, so that a claim changed meanwhile is left as it is (ErrClaimChanged).
func (p *Provider) SwapClaim(ctx context.Context, node string, old, next *model.Claim) error {
	changed := fmt.Errorf("node %s: %w", node, providers.ErrClaimChanged)
	n, err := p.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("node %s: reading its claim: %w", node, err)
	}
	cur, raw, ok := protocol.ReadClaim(n.Annotations)
	if !cur.Same(old) {
		return changed
	}
	var ops []jsonOp
	switch {
	case n.Annotations == nil:
		ops = []jsonOp{{Op: "test", Path: "/metadata/annotations"}, {Op: "add", Path: "/metadata/annotations", Value: map[string]string{}}}
	case ok:
		ops = []jsonOp{{Op: "test", Path: claimPath, Value: raw}}
	default:
		ops = []jsonOp{{Op: "test", Path: claimPath}}
	}
	switch {
	case next != nil:
		ops = append(ops, jsonOp{Op: "add", Path: claimPath, Value: protocol.EncodeClaim(*next)})
	case ok:
		ops = append(ops, jsonOp{Op: "remove", Path: claimPath})
	default:
		return nil
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	if _, err := p.client.CoreV1().Nodes().Patch(ctx, node, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		if n, gerr := p.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); gerr == nil && n.Annotations[protocol.Claim] != raw {
			return changed
		}
		return fmt.Errorf("node %s: writing its claim: %w", node, err)
	}
	return nil
}

// FleetLockNodes are the fleet's nodes now (Options.FleetSelector), from a LIST (a read
// as new as any write before it), each with its machine id (status.nodeInfo.machineID)
// by name, and kured's lock laid over them (kured.go): what mcp serve -fleetlock decides
// slots from.
func (p *Provider) FleetLockNodes(ctx context.Context) ([]model.Node, map[string]string, error) {
	var nodes []model.Node
	ids := map[string]string{}
	err := p.eachFleetNode(ctx, func(n *corev1.Node) {
		nodes = append(nodes, nodeOf(n))
		ids[n.Name] = n.Status.NodeInfo.MachineID
	})
	if err == nil {
		err = p.overlayKured(ctx, nodes)
	}
	return nodes, ids, err
}
