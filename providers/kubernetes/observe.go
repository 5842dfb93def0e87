package kubernetes

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

var _ providers.ConfigObserver = (*Provider)(nil)

// DefaultObserveTimeout is Options.ObserveTimeout's default: an agent fetches the config
// (retrying a fetch that fails twice, 3 s in all) and checks its disk, usually in well
// under a second.
const DefaultObserveTimeout = 15 * time.Second

// ObserveConfig asks the node's agent what the node carries against target: one JSON merge
// patch of the node's annotations (protocol.ObserveRun: target's name and a fresh request
// id), then it waits for the agent's answer under that id (protocol.ObserveReport) on a
// watch of the node, at most Options.ObserveTimeout. The agent fetches target from the
// boot server, so the caller must have published it there first (engine: the state's
// rendered store). An agent of a protocol version before protocol.ObserveVersion is not
// asked; an agent that does not answer in time, a request the API server refuses (plan
// with read-only credentials) and an answer giving a reason are errors, which refresh
// turns into a plan without observation for the node, the error its reason.
func (p *Provider) ObserveConfig(ctx context.Context, node string, target *model.Rendered) (model.Observation, error) {
	cur, err := p.readNode(ctx, node)
	if err != nil {
		return model.Observation{}, fmt.Errorf("node %s: %w", node, err)
	}
	if v, err := protocol.ReadAgentProtocol(cur.Annotations); err != nil || v < protocol.ObserveVersion {
		if err == nil {
			err = fmt.Errorf("its agent speaks protocol version %d (annotation %s), and only agents of version %d or later say what the node carries: upgrade mcp-agent",
				v, protocol.AgentProtocol, protocol.ObserveVersion)
		}
		return model.Observation{}, fmt.Errorf("node %s: %w", node, err)
	}
	run := protocol.ObserveRun{Target: target.Name, RequestID: rand.Text()}
	ann, err := run.Annotations()
	if err != nil {
		return model.Observation{}, fmt.Errorf("node %s: %w", node, err)
	}
	patch, err := protocol.AnnotationsPatch(ann)
	if err != nil {
		return model.Observation{}, err
	}
	if _, err := p.client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return model.Observation{}, fmt.Errorf("node %s: asking its agent what it carries of %s: %w", node, target.Name, err)
	}
	rep, err := p.awaitObserved(ctx, node, run)
	if err != nil {
		return model.Observation{}, err
	}
	if rep.Reason != "" {
		return model.Observation{}, fmt.Errorf("node %s: its agent could not say what it carries of %s: %s", node, target.Name, rep.Reason)
	}
	if rep.Target != target.Name {
		return model.Observation{}, fmt.Errorf("node %s: its agent answered request %s about %q, not %s", node, run.RequestID, rep.Target, target.Name)
	}
	return model.Observation{Target: target.Name, Drift: rep.Drift, Unlisted: rep.Unlisted}, nil
}

// awaitObserved waits for the answer to run on a watch of node.
func (p *Provider) awaitObserved(ctx context.Context, node string, run protocol.ObserveRun) (protocol.ObserveReport, error) {
	wait := p.o.ObserveTimeout
	var rep protocol.ObserveReport
	err := p.awaitAgent(ctx, node, wait, "to say what it carries of "+run.Target, func(ann map[string]string) bool {
		r, ok := protocol.ReadObserveReport(ann)
		rep = r
		return ok && r.RequestID == run.RequestID
	})
	if errors.Is(err, errAgentSilent) {
		return rep, fmt.Errorf("node %s: its agent did not say what it carries of %s within %s (request %s; is mcp-agent running on the node?)",
			node, run.Target, wait, run.RequestID)
	}
	return rep, err
}
