package kagent

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
)

// AnswerObserve answers the engine's request to say what the node carries against a rendered
// config (protocol.ObserveRun) when one is waiting on node that is neither answered
// (protocol.Observed has its request id) nor taken up by this process: it fetches the
// config from the boot server as for an update (fetch; a 404 retried too, the config being
// published just before) and runs the verify step's check
// against it (nodeexec.Executor.Observe, the local provider's too), then answers under the
// request's id, bounded (protocol.ObserveReport). It changes nothing on the node. A request
// the engine would not write and a config the server does not give are answered with why.
// It reports whether it answered a request.
func (a *Agent) AnswerObserve(ctx context.Context, node *corev1.Node) bool {
	run, ok, rerr := protocol.ReadObserveRun(node.Annotations)
	if !ok {
		return false
	}
	last, answered := protocol.ReadObserveReport(node.Annotations)
	if !a.takeUp("observation request", run.RequestID, rerr, answered && last.RequestID == run.RequestID, &a.observed) {
		return false
	}
	rep := protocol.ObserveReport{RequestID: run.RequestID, Target: run.Target}
	if o, err := a.observeConfig(ctx, run, rerr); err != nil {
		rep.Reason = err.Error()
	} else {
		rep.Drift, rep.Unlisted = o.Drift, o.Unlisted
	}
	ann, err := rep.Annotations()
	if err == nil {
		a.Log.Info("observed", "request", run.RequestID, "target", run.Target, "drift", len(rep.Drift)+rep.Unlisted, "reason", rep.Reason)
		err = a.State.patch(map[string]any{protocol.Observed: ann[protocol.Observed]})
	}
	if err != nil {
		a.Log.Error("answering an observation request", "request", run.RequestID, "err", err.Error())
	}
	return true
}

func (a *Agent) observeConfig(ctx context.Context, run protocol.ObserveRun, rerr error) (model.Observation, error) {
	if rerr != nil {
		return model.Observation{}, rerr
	}
	target, err := a.fetchRetrying(ctx, run.Target, true) // published just before the request
	if err != nil {
		return model.Observation{}, err
	}
	return a.Agent.Exec.Observe(ctx, target)
}
