package record

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

// WaitHealthy waits until the node is Ready and every DaemonSet pod on it is, looking
// every 10ms, at most timeout; then a *providers.GateError.
func (p *Provider) WaitHealthy(ctx context.Context, node string, timeout time.Duration) error {
	p.mu.Lock()
	p.record("wait-healthy", node, "timeout %s", timeout)
	p.mu.Unlock()
	deadline := time.Now().Add(timeout)
	for {
		gate, out, err := p.unhealthy(node)
		if err != nil || gate == "" {
			return err
		}
		if time.Now().After(deadline) {
			return &providers.GateError{Gate: gate, Output: fmt.Sprintf("%s after %s", out, timeout)}
		}
		if err := wait(ctx, 10*time.Millisecond); err != nil {
			return &providers.GateError{Gate: gate, Output: fmt.Sprintf("%s when apply stopped waiting (%v)", out, err)}
		}
	}
}

func (p *Provider) unhealthy(node string) (gate, out string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, err := p.node(node)
	if err != nil {
		return "", "", err
	}
	if !n.Ready {
		return providers.GateReady, fmt.Sprintf("node %s is not ready", node), nil
	}
	for _, pod := range p.pods {
		if pod.Node == node && pod.DaemonSet && !pod.Ready {
			return providers.GateDaemonSets, fmt.Sprintf("DaemonSet pod %s/%s on node %s is not ready", pod.Namespace, pod.Name, node), nil
		}
	}
	return "", "", nil
}

// NodeAddress is the node's name: the record provider's nodes are reached by nothing.
func (p *Provider) NodeAddress(ctx context.Context, node string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record("node-address", node, "")
	if _, err := p.node(node); err != nil {
		return "", err
	}
	return node, nil
}

// MarkDegraded reports the node Degraded with reason until its next RunNodeSteps.
func (p *Provider) MarkDegraded(ctx context.Context, node, reason string) error {
	return p.change("mark-degraded", node, func(n *model.Node) { n.State, n.Reason = model.StateDegraded, reason })
}

// Claim takes the node for c unless another apply that live says runs holds it, checking
// and taking in one step.
func (p *Provider) Claim(ctx context.Context, node string, c model.Claim, live providers.ClaimLive) (*model.Claim, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record("claim", node, "%s", c.Apply)
	n, err := p.node(node)
	if err != nil {
		return nil, err
	}
	prev := n.Claim
	if held := n.Claim; held.Held() && held.Apply != c.Apply {
		if ok, why := live(*held); ok {
			return nil, &providers.ClaimedError{Node: node, Holder: *held, Why: why}
		}
	}
	n.Claim = &c
	return prev, nil
}

// Intend replaces the node's claim by c at once, if it is still c's apply's (a fleet in
// memory has no write of an action to carry it in).
func (p *Provider) Intend(ctx context.Context, node string, c model.Claim) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record("intend", node, "%s %s", c.Apply, intentWords(c.Intent))
	n, err := p.node(node)
	if err != nil {
		return err
	}
	if held := n.Claim; held == nil || held.Apply != c.Apply {
		return &providers.ClaimedError{Node: node, Holder: *orNone(held), Why: "it is not this apply's claim any more"}
	}
	n.Claim = &c
	return nil
}

func intentWords(i *model.Intent) string {
	if i == nil {
		return "-"
	}
	return string(i.Phase) + " " + i.Target
}

func orNone(c *model.Claim) *model.Claim {
	if c == nil {
		return &model.Claim{}
	}
	return c
}

// Release replaces c by leave, if the node still has c's apply's claim.
func (p *Provider) Release(ctx context.Context, node string, c model.Claim, leave *model.Claim) error {
	return p.change("release", node, func(n *model.Node) {
		if n.Claim != nil && n.Claim.Apply == c.Apply {
			n.Claim = leave
		}
	})
}

// Clear replaces held by leave, if the node's claim is still held.
func (p *Provider) Clear(ctx context.Context, node string, held, leave model.Claim) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record("clear", node, "%s", held.Apply)
	n, err := p.node(node)
	if err != nil {
		return err
	}
	if !n.Claim.Same(&held) {
		return fmt.Errorf("node %s: %w", node, providers.ErrClaimChanged)
	}
	n.Claim = &leave
	return nil
}

// ShareWatches is recorded: the fleet in memory is always current, with or without.
func (p *Provider) ShareWatches(ctx context.Context) (stop func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record("share-watches", "", "")
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.record("stop-sharing-watches", "", "")
	}
}

// APIRequests is the number of calls made to the provider so far.
func (p *Provider) APIRequests() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return int64(len(p.calls))
}

// SetTemplateImage sets the template's image, if it still holds from.
func (p *Provider) SetTemplateImage(ctx context.Context, t model.MachineTemplate, from, to string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record("set-template-image", "", "%s %s → %s", t.ID(), from, to)
	i := slices.IndexFunc(p.temps, func(m model.MachineTemplate) bool { return m.ID() == t.ID() })
	switch {
	case i < 0:
		return fmt.Errorf("machine template %s no longer exists", t.ID())
	case p.temps[i].Image != from:
		return fmt.Errorf("machine template %s changed since it was observed: it holds %q now, not %q; nothing was changed",
			t.ID(), p.temps[i].Image, from)
	}
	p.temps[i].Image = to
	return nil
}

// UserData is the key of the Secret namespace/name.
func (p *Provider) UserData(ctx context.Context, namespace, name, key string) ([]byte, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record("user-data", "", "%s/%s %s", namespace, name, key)
	v, ok := p.userData[[3]string{namespace, name, key}]
	return slices.Clone(v), ok, nil
}

// SetUserData sets the key if its value still has the digest from ("" for absent).
func (p *Provider) SetUserData(ctx context.Context, namespace, name, key string, value []byte, from string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record("set-user-data", "", "%s/%s %s", namespace, name, key)
	id := [3]string{namespace, name, key}
	now := ""
	if v, ok := p.userData[id]; ok {
		now = providers.Digest(v)
	}
	if now != from {
		return fmt.Errorf("secret %s/%s key %s changed since the plan: run mcp plan again", namespace, name, key)
	}
	p.userData[id] = slices.Clone(value)
	return nil
}
