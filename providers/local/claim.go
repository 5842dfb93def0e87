package local

import (
	"context"
	"fmt"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

var _ providers.Claimer = (*Provider)(nil)

// Claim takes node for c in node.json ("claim"), under the node's lock: the claim there is
// read, judged and replaced in one write (updateNode), so of two applies only one gets it.
// The claim is written at once, with or without the state lock.
func (p *Provider) Claim(ctx context.Context, node string, c model.Claim, live providers.ClaimLive) (*model.Claim, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var prev *model.Claim
	_, err := p.updateNode(node, func(r *record) ([]Event, error) {
		prev = r.Claim
		if held := r.Claim; held.Held() && held.Apply != c.Apply {
			if ok, why := live(*held); ok {
				return nil, &providers.ClaimedError{Node: node, Holder: *held, Why: why}
			}
		}
		r.Claim = &c
		return nil, nil
	})
	return prev, err
}

// Intend keeps c, this apply's claim with a new intent, for the node's next action — its
// cordon, its uncordon, or its agent's first report on a hand-over — which writes it in the
// same write of node.json, under the node's lock, only while the node's claim is still c's
// apply's (carryIntent).
func (p *Provider) Intend(ctx context.Context, node string, c model.Claim) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.intentMu.Lock()
	defer p.intentMu.Unlock()
	if p.intents == nil {
		p.intents = map[string]model.Claim{}
	}
	p.intents[node] = c
	return nil
}

// carryIntent puts into r the claim Intend kept for node, if any: a node whose claim is no
// longer that apply's (another took it over) refuses the action with a *ClaimedError.
func (p *Provider) carryIntent(node string, r *record) error {
	p.intentMu.Lock()
	c, ok := p.intents[node]
	delete(p.intents, node)
	p.intentMu.Unlock()
	if !ok {
		return nil
	}
	if r.Claim == nil || r.Claim.Apply != c.Apply {
		holder := model.Claim{}
		if r.Claim != nil {
			holder = *r.Claim
		}
		return &providers.ClaimedError{Node: node, Holder: holder, Why: "it took the node over from this apply"}
	}
	if r.Claim.Expires.After(c.Expires) {
		c.Expires = r.Claim.Expires // renewed since the intent was kept
	}
	r.Claim = &c
	return nil
}

// Release replaces c in node.json by leave, if node.json still has c's apply's claim; an
// intent kept for an action that did not come is dropped.
func (p *Provider) Release(ctx context.Context, node string, c model.Claim, leave *model.Claim) error {
	p.intentMu.Lock()
	if kept, ok := p.intents[node]; ok && kept.Apply == c.Apply {
		delete(p.intents, node)
	}
	p.intentMu.Unlock()
	_, err := p.updateNode(node, func(r *record) ([]Event, error) {
		if r.Claim != nil && r.Claim.Apply == c.Apply {
			r.Claim = leave
		}
		return nil, nil
	})
	return err
}

// Clear replaces held in node.json by leave, if node.json still has held: under the node's
// lock, as Claim. The node's event log gets the release of held's apply.
func (p *Provider) Clear(ctx context.Context, node string, held, leave model.Claim) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := p.updateNode(node, func(r *record) ([]Event, error) {
		if !r.Claim.Same(&held) {
			return nil, fmt.Errorf("node %s: %w", node, providers.ErrClaimChanged)
		}
		r.Claim = &leave
		return nil, nil
	})
	return err
}
