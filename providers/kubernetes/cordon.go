package kubernetes

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Cordon marks the node unschedulable (a no-op when it already is).
func (p *Provider) Cordon(ctx context.Context, node string) error {
	return p.cordon(ctx, node, true)
}

// Uncordon marks the node schedulable again (a no-op when it already is).
func (p *Provider) Uncordon(ctx context.Context, node string) error {
	return p.cordon(ctx, node, false)
}

func (p *Provider) cordon(ctx context.Context, node string, desired bool) error {
	verb := "cordon"
	if !desired {
		verb = "uncordon"
	}
	// The patch is computed from this copy, and sets only spec.unschedulable: a copy from
	// the shared watch (readNode) does as well as a fresh GET.
	n, err := p.readNode(ctx, node)
	if err != nil {
		return fmt.Errorf("%s node %s: %w", verb, node, err)
	}
	if h := p.takePending(node); h != nil {
		// The apply's claim and its intent ride on the cordon or the uncordon (claim.go).
		if err := p.writeClaim(ctx, node, h, []jsonOp{{Op: "add", Path: "/spec/unschedulable", Value: desired}}); err != nil {
			return fmt.Errorf("%s node %s: %w", verb, node, err)
		}
		return nil
	}
	if n.Spec.Unschedulable == desired {
		return nil
	}
	if _, err := p.client.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, cordonPatch(desired), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("%s node %s: %w", verb, node, err)
	}
	return nil
}

// cordonPatch is the strategic merge patch kubectl cordon and uncordon send (what
// k8s.io/kubectl/pkg/drain's RunCordonOrUncordon computes from the Node before and after):
// it sets spec.unschedulable, or removes it, and nothing else.
func cordonPatch(desired bool) []byte {
	if desired {
		return []byte(`{"spec":{"unschedulable":true}}`)
	}
	return []byte(`{"spec":{"unschedulable":null}}`)
}
