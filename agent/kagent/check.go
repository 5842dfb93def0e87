package kagent

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcpfleet/mcp/kubeapi/nodeclient"
	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec"
)

// Checker runs the engine's command health checks on the agent's node. The command comes
// from Secret protocol.HealthSecret, which only mcp's apply identity writes; the Node's
// annotation only names it.
type Checker struct {
	// Secrets are those of Namespace, mcp's namespace; the agent gets HealthSecret alone.
	Secrets   nodeclient.Secrets
	Namespace string
	// Chroot, when set, runs the commands chrooted there (the host's root mounted in the
	// agent's container); the node's root is then "/" for them. Else the node's root is
	// the agent's root directory.
	Chroot string
}

// Check answers the engine's request to run a command check (protocol.CheckRun) when one
// is waiting on node that is neither answered (protocol.CheckResult has its run id) nor
// run by this process: it reads the command from HealthSecret — never from the Node —,
// runs it (nodeexec.RunCheck) and reports under the request's run id. A request naming a
// check the Secret does not hold for that pool, a Secret that cannot be read and a request
// the engine would not write run nothing and are answered with why. It reports whether it
// answered a request.
func (a *Agent) Check(ctx context.Context, node *corev1.Node) bool {
	run, ok, rerr := protocol.ReadCheckRun(node.Annotations)
	if !ok {
		return false
	}
	rep, answered := protocol.ReadCheckReport(node.Annotations)
	if !a.takeUp("check request", run.RunID, rerr, answered && rep.RunID == run.RunID, &a.checked) {
		return false
	}
	res := a.runCheck(ctx, run, rerr)
	ann, err := protocol.CheckReport{RunID: run.RunID, Check: run.Check, CheckResult: res}.Annotations()
	if err == nil {
		a.Log.Info("check", "pool", run.Pool, "check", run.Check, "run", run.RunID, "exit", res.ExitCode, "error", res.Error)
		err = a.State.patch(map[string]any{protocol.CheckResult: ann[protocol.CheckResult]})
	}
	if err != nil {
		a.Log.Error("reporting a check", "run", run.RunID, "err", err.Error())
	}
	return true
}

// runCheck looks the requested check up in HealthSecret and runs it.
func (a *Agent) runCheck(ctx context.Context, run protocol.CheckRun, rerr error) model.CheckResult {
	notRun := func(format string, args ...any) model.CheckResult {
		return model.CheckResult{ExitCode: -1, Error: "not run: " + fmt.Sprintf(format, args...)}
	}
	if rerr != nil {
		return notRun("%v", rerr)
	}
	c := a.Checks
	if c == nil || c.Secrets == nil {
		return notRun("this agent was started without access to the pools' command checks")
	}
	where := fmt.Sprintf("Secret %s/%s", c.Namespace, protocol.HealthSecret)
	sec, err := c.Secrets.Get(ctx, protocol.HealthSecret, metav1.GetOptions{})
	switch {
	case apierrors.IsForbidden(err):
		return notRun("reading %s: %v (the agent's identity needs get on it: deploy/02-rbac-agent.yaml)", where, err)
	case apierrors.IsNotFound(err):
		return notRun("%s does not exist: no pool has a command check (has apply published them?)", where)
	case err != nil:
		return notRun("reading %s: %v", where, err)
	}
	pc, err := protocol.DecodeChecks(sec.Data[protocol.HealthKey])
	if err != nil {
		return notRun("%s: %v", where, err)
	}
	check, err := pc.Find(run)
	if err != nil {
		return model.CheckResult{ExitCode: -1, Error: err.Error()}
	}
	root := a.Agent.Exec.Root
	if c.Chroot != "" {
		root = "/"
	}
	return nodeexec.RunCheck(ctx, nodeexec.Check{Argv: check.Command, Timeout: check.TimeoutDuration(),
		Node: a.Node, Root: root, Chroot: c.Chroot})
}

// takeUp reports whether the engine's request id is one to answer now, and records it
// in *last (the id this process took up last) when it is: it has an id to answer under
// (else rerr, why it was refused, is logged), is not answered on the Node, and was not
// taken up by this process already.
func (a *Agent) takeUp(what, id string, rerr error, answered bool, last *string) bool {
	if id == "" {
		if rerr != nil {
			a.Log.Error(what, "err", rerr.Error())
		}
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if answered || *last == id {
		return false
	}
	*last = id
	return true
}
