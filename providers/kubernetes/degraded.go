package kubernetes

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

var _ providers.DegradedMarker = (*Provider)(nil)

// MarkDegraded sets the node's state annotation to Degraded with reason (a health gate it
// did not pass after its update), beside the agent's report of that update: the agent
// does not run the update again for it (it observed its id), and the next hand-over —
// the verify the next plan gives a Degraded node — replaces it with the agent's own word.
func (p *Provider) MarkDegraded(ctx context.Context, node, reason string) error {
	patch, err := protocol.AnnotationsPatch(map[string]any{protocol.State: model.StateDegraded, protocol.Reason: reason})
	if err != nil {
		return err
	}
	if _, err := p.client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("marking node %s Degraded: %w", node, err)
	}
	return nil
}
