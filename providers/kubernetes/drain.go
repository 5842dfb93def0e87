package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mcpfleet/mcp/providers"
)

// Drain evicts the node's pods as `kubectl drain --ignore-daemonsets --force
// --delete-emptydir-data` would (the last two per Options.EvictUnreplicated and
// Options.DeleteEmptyDirData; the pods are chosen in drainpods.go), each pod with its own
// grace period. Evictions the API server refuses (429: a PodDisruptionBudget allows
// no disruption now) are retried every opts.RetryDelay until opts.Timeout; the drain then
// waits for the evicted pods to be gone, within the same timeout. Pods are evicted side by
// side. The error names the node, each pod that blocked it and the PodDisruptionBudget that
// refused it, with the budget's numbers.
func (p *Provider) Drain(ctx context.Context, node string, opts providers.DrainOptions) error {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultDrainTimeout
	}
	if opts.RetryDelay <= 0 {
		opts.RetryDelay = DefaultRetryDelay
	}
	parent := ctx
	ctx, cancel := context.WithTimeoutCause(ctx, opts.Timeout, drainTimeout(opts.Timeout))
	defer cancel()
	pods, err := p.drainPods(ctx, node)
	if err != nil {
		return fmt.Errorf("drain node %s: %w", node, err)
	}
	if len(pods) == 0 {
		return nil
	}
	gv, err := p.evictionVersion()
	if err != nil {
		return fmt.Errorf("drain node %s: finding the eviction API: %w", node, err)
	}

	errs := make([]error, len(pods))
	evicted := make([]bool, len(pods))
	var wg sync.WaitGroup
	for i := range pods {
		wg.Go(func() { evicted[i], errs[i] = p.evict(ctx, gv, &pods[i], opts.RetryDelay) })
	}
	wg.Wait()

	// Explaining a refusal reads the pod's PDBs: it gets a few seconds of its own, as the
	// drain's context has usually ended by now.
	dctx, dcancel := context.WithTimeout(context.WithoutCancel(parent), 10*time.Second)
	defer dcancel()
	for i, err := range errs {
		if r, ok := err.(*refusedError); ok {
			errs[i] = fmt.Errorf("%s: %w", p.describeRefusal(dctx, r), r.cause)
		}
	}
	var gone []corev1.Pod
	for i := range pods {
		if evicted[i] {
			gone = append(gone, pods[i])
		}
	}
	errs = append(errs, p.waitGone(ctx, dctx, node, gone, min(time.Second, opts.RetryDelay)))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("drain node %s: %w", node, err)
	}
	return nil
}

// drainTimeout is the cause of a drain's context ending at its timeout. It reads as kubectl
// drain's own message and is a context.DeadlineExceeded.
type drainTimeout time.Duration

func (d drainTimeout) Error() string {
	return fmt.Sprintf("global timeout reached: %s", time.Duration(d))
}
func (d drainTimeout) Is(target error) bool { return target == context.DeadlineExceeded }

// refusedError is an eviction still refused when the drain's context ended.
type refusedError struct {
	pod   *corev1.Pod
	last  error // the API server's last refusal
	cause error // why the drain stopped (drainTimeout, or the caller's cancellation)
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("eviction of %s/%s refused: %v: %v", e.pod.Namespace, e.pod.Name, e.last, e.cause)
}

// evict evicts one pod (deletes it when the server has no eviction API), retrying refusals
// every delay until ctx ends. It reports whether the pod is on its way out. A refusal is a
// 429 (a PodDisruptionBudget allows no disruption now), or a 403 for a pod in a namespace
// being deleted that is not itself being deleted yet — the cases kubectl drain retries.
func (p *Provider) evict(ctx context.Context, gv schema.GroupVersion, pod *corev1.Pod, delay time.Duration) (bool, error) {
	var last error
	for {
		err := p.evictOnce(ctx, gv, pod)
		switch {
		case err == nil || apierrors.IsNotFound(err):
			return true, nil
		case ctx.Err() != nil:
			if last == nil {
				return false, fmt.Errorf("eviction of %s/%s: %w", pod.Namespace, pod.Name, context.Cause(ctx))
			}
			return false, &refusedError{pod: pod, last: last, cause: context.Cause(ctx)}
		case apierrors.IsTooManyRequests(err):
			last = err
		case apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			if pod.DeletionTimestamp != nil {
				return true, nil // being deleted with its namespace: wait for it
			}
			last = err
		default:
			return false, fmt.Errorf("eviction of %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, &refusedError{pod: pod, last: last, cause: context.Cause(ctx)}
		case <-t.C:
		}
	}
}

// evictionVersion finds the eviction API's group version by discovery, once (an error is
// not kept: the next drain asks again). An empty version means the server has none, and
// pods are deleted instead.
func (p *Provider) evictionVersion() (schema.GroupVersion, error) {
	p.evictionMu.Lock()
	defer p.evictionMu.Unlock()
	if p.evictionKnown {
		return p.eviction, nil
	}
	// The pods/eviction subresource of core v1 names the group version of its Eviction kind.
	list, err := p.client.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		return schema.GroupVersion{}, err
	}
	var gv schema.GroupVersion
	for _, r := range list.APIResources {
		if r.Name == "pods/eviction" && r.Kind == "Eviction" && r.Group != "" && r.Version != "" {
			gv = schema.GroupVersion{Group: r.Group, Version: r.Version}
			break
		}
	}
	p.eviction, p.evictionKnown = gv, true
	return gv, nil
}

// evictOnce asks for pod's eviction in version gv of the policy group (policy/v1, or
// v1beta1 on an API server older than 1.22), or deletes the pod when gv is empty. The pod
// keeps its own terminationGracePeriodSeconds (kubectl's --grace-period=-1).
func (p *Provider) evictOnce(ctx context.Context, gv schema.GroupVersion, pod *corev1.Pod) error {
	meta := metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}
	switch gv {
	case schema.GroupVersion{}:
		return p.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{})
	case policyv1.SchemeGroupVersion:
		return p.client.PolicyV1().Evictions(pod.Namespace).Evict(ctx, &policyv1.Eviction{ObjectMeta: meta, DeleteOptions: &metav1.DeleteOptions{}})
	default:
		return p.client.PolicyV1beta1().Evictions(pod.Namespace).Evict(ctx, &policyv1beta1.Eviction{ObjectMeta: meta, DeleteOptions: &metav1.DeleteOptions{}})
	}
}

// waitGone waits for the evicted pods to be gone (deleted, or replaced by a pod of the same
// name with another UID): during an apply from its shared watch of the pods bound to nodes
// (no request; a pod's change wakes the wait), else, or once that watch is lost, polling
// the node's pods every interval until ctx ends. When ctx has already ended it looks once
// more, with last. The shared watch holds the pods that have not finished, so a pod whose
// containers have all stopped is gone there already.
func (p *Provider) waitGone(ctx, last context.Context, node string, pods []corev1.Pod, interval time.Duration) error {
	left := map[string]*corev1.Pod{}
	for i := range pods {
		left[pods[i].Namespace+"/"+pods[i].Name] = &pods[i]
	}
	// keep drops from left every pod not among present, as key → UID.
	keep := func(present map[string]types.UID) {
		for k, q := range left {
			if uid, ok := present[k]; !ok || uid != q.UID {
				delete(left, k)
			}
		}
	}
	if ph := p.currentPods(ctx); ph != nil {
		err := ph.waitOn(ctx, node, func() (bool, error) {
			present := map[string]types.UID{}
			for _, pod := range ph.podsOn(node) {
				present[pod.Namespace+"/"+pod.Name] = pod.UID
			}
			keep(present)
			return len(left) == 0, nil
		})
		if err == nil {
			return nil
		}
		// The watch was lost, or ctx ended: the loop below polls, or looks once more.
	}
	check := func(ctx context.Context) error {
		bound, err := p.podsBoundTo(ctx, node)
		if err != nil {
			return err
		}
		present := map[string]types.UID{}
		for _, pod := range bound {
			present[pod.Namespace+"/"+pod.Name] = pod.UID
		}
		keep(present)
		return nil
	}
	for len(left) > 0 {
		if ctx.Err() != nil {
			if err := check(last); err != nil || len(left) == 0 {
				return err
			}
			names := slices.Sorted(maps.Keys(left))
			return fmt.Errorf("evicted pods still terminating: %v: %w", names, context.Cause(ctx))
		}
		if err := check(ctx); err != nil && ctx.Err() == nil {
			return err
		}
		if len(left) == 0 {
			return nil
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
	return nil
}
