package kubernetes

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

var _ providers.CommandChecker = (*Provider)(nil)

// checkGrace is how long past a check's timeout RunCheck waits for the agent's answer to one
// run: the agent kills the command at the timeout, then reports.
const checkGrace = 30 * time.Second

// PublishChecks writes the pools' command checks into Secret protocol.HealthSecret of
// Options.Namespace, the one place the agents read commands from: only mcp's apply
// identity may write it (deploy/04-rbac-apply.yaml), and an agent may get that Secret
// alone (deploy/02-rbac-agent.yaml). Each pool of checks gets its command checks, or none
// (removed); other pools' are kept. The Secret is updated only when that changes it, with
// its resourceVersion (retried on a conflict). When no pool has a command check, a Secret
// that does not exist or that this identity may not read is left alone: nothing needs it.
func (p *Provider) PublishChecks(ctx context.Context, checks map[string][]model.HealthCheck) error {
	want := protocol.PoolChecks{}
	for pool, cs := range checks {
		if cc := protocol.CommandChecks(cs); len(cc) > 0 {
			want[pool] = cc
		}
	}
	secrets := p.client.CoreV1().Secrets(p.o.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := secrets.Get(ctx, protocol.HealthSecret, metav1.GetOptions{})
		switch {
		case err != nil && len(want) == 0 && (apierrors.IsNotFound(err) || apierrors.IsForbidden(err)):
			return nil
		case apierrors.IsNotFound(err):
			data, err := want.Encode()
			if err != nil {
				return fmt.Errorf("encoding the command checks: %w", err)
			}
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: protocol.HealthSecret, Namespace: p.o.Namespace},
				Data: map[string][]byte{protocol.HealthKey: data}}
			setChecksLabels(s)
			_, err = secrets.Create(ctx, s, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) { // created meanwhile: read it again
				return apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, protocol.HealthSecret, err)
			}
			return p.checksError("creating", err)
		case err != nil:
			return p.checksError("reading", err)
		}
		merged, derr := protocol.DecodeChecks(cur.Data[protocol.HealthKey])
		if derr != nil {
			merged = protocol.PoolChecks{} // not what the engine writes: rewritten whole
		}
		for pool := range checks {
			delete(merged, pool)
		}
		maps.Copy(merged, want)
		data, err := merged.Encode()
		if err != nil {
			return fmt.Errorf("encoding the command checks: %w", err)
		}
		if derr == nil && bytes.Equal(data, cur.Data[protocol.HealthKey]) && len(cur.Data) == 1 && hasChecksLabels(cur) {
			return nil
		}
		cur.Data = map[string][]byte{protocol.HealthKey: data}
		setChecksLabels(cur)
		_, err = secrets.Update(ctx, cur, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return err
		}
		return p.checksError("writing", err)
	})
}

func setChecksLabels(s *corev1.Secret) {
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.Labels[protocol.ManagedByLabel] = protocol.ManagedByValue
	s.Labels[protocol.KindLabel] = protocol.KindHealthChecks
}

func hasChecksLabels(s *corev1.Secret) bool {
	return s.Labels[protocol.ManagedByLabel] == protocol.ManagedByValue && s.Labels[protocol.KindLabel] == protocol.KindHealthChecks
}

// checksError names the Secret and, when the API refused, what the apply identity needs.
func (p *Provider) checksError(doing string, err error) error {
	if err == nil {
		return nil
	}
	where := fmt.Sprintf("Secret %s/%s", p.o.Namespace, protocol.HealthSecret)
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s %s: %w (the identity running apply needs get, create and update on Secrets in namespace %s, as the Role mcp-apply of deploy/04-rbac-apply.yaml gives)",
			doing, where, err, p.o.Namespace)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s %s: %w (is mcp deployed in namespace %s? apply deploy/, or set the kubernetes provider's namespace)",
			doing, where, err, p.o.Namespace)
	}
	return fmt.Errorf("%s %s: %w", doing, where, err)
}

// RunCheck asks the node's agent to run check, a command check of pool, once: one JSON
// merge patch of the node's annotations (protocol.CheckRun: the pool, the check's name, a
// fresh run id — the command is in the Secret PublishChecks wrote), then it waits for the
// agent's answer under that run id (protocol.CheckReport) on a watch of the node, at most
// the check's timeout and checkGrace.
func (p *Provider) RunCheck(ctx context.Context, node, pool string, check model.HealthCheck) (model.CheckResult, error) {
	run := protocol.CheckRun{Pool: pool, Check: check.Name, RunID: rand.Text()}
	ann, err := run.Annotations()
	if err != nil {
		return model.CheckResult{}, fmt.Errorf("node %s: %w", node, err)
	}
	patch, err := protocol.AnnotationsPatch(ann)
	if err != nil {
		return model.CheckResult{}, err
	}
	if _, err := p.client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return model.CheckResult{}, fmt.Errorf("node %s: asking its agent to run check %q: %w", node, check.Name, err)
	}
	wait := check.Timeout + checkGrace
	var rep protocol.CheckReport
	err = p.awaitAgent(ctx, node, wait, fmt.Sprintf("to run check %q (run %s)", check.Name, run.RunID), func(ann map[string]string) bool {
		r, ok := protocol.ReadCheckReport(ann)
		rep = r
		return ok && r.RunID == run.RunID
	})
	if errors.Is(err, errAgentSilent) {
		return model.CheckResult{}, fmt.Errorf("node %s: its agent did not answer check %q (run %s) within %s (is mcp-agent running on the node?)", node, check.Name, run.RunID, wait)
	}
	return rep.CheckResult, err
}

// errAgentSilent: the agent did not answer within the wait (awaitAgent).
var errAgentSilent = errors.New("the agent did not answer")

// awaitAgent waits on a watch of node, at most wait, until answered holds for its
// annotations: nil then; errAgentSilent when the wait ran out; otherwise an error naming
// the node, "waiting for its agent", what.
func (p *Provider) awaitAgent(ctx context.Context, node string, wait time.Duration, what string, answered func(map[string]string) bool) error {
	tctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	hub, release := p.nodes(tctx, node)
	defer release()
	err := hub.wait(tctx, node, func(n *corev1.Node) (bool, error) {
		if n == nil {
			return false, fmt.Errorf("node %s was deleted", node)
		}
		return answered(n.Annotations), nil
	})
	var lost *unreachableError
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("node %s: waiting for its agent %s: %w", node, what, context.Cause(ctx))
	case errors.As(err, &lost):
		return fmt.Errorf("node %s: waiting for its agent %s: %w", node, what, lost)
	case tctx.Err() != nil:
		return errAgentSilent
	}
	return err
}
