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

// Release replaces c in node.json by leave, if node.json still has c's apply's claim.
func (p *Provider) Release(ctx context.Context, node string, c model.Claim, leave *model.Claim) error {
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
