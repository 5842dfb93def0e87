package kubernetes

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/klog/v2"

	"github.com/mcpfleet/mcp/providers"
)

var _ providers.HealthGater = (*Provider)(nil)

// WaitHealthy waits for the node's Ready condition to be True, then for every pod on the
// node whose controller is a DaemonSet to be Ready: each from a watch, not a poll — the
// node and its pods from the shared watches of an apply (ShareWatches); else a list and a
// watch of the node, and a list of the pods bound to it and, while one is not Ready, a watch.
func (p *Provider) WaitHealthy(ctx context.Context, node string, timeout time.Duration) error {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	quiet := klog.NewContext(tctx, logr.Discard()) // the reflector's retries are not apply's output
	last := fmt.Sprintf("node %s was not seen", node)
	hub, release := p.nodes(tctx, node)
	defer release()
	err := hub.wait(tctx, node, func(n *corev1.Node) (bool, error) {
		if n == nil {
			return false, fmt.Errorf("node %s was deleted", node)
		}
		ready, why := nodeReadiness(n)
		last = why
		return ready, nil
	})
	if err != nil {
		return gateError(ctx, tctx, providers.GateReady, last, err, timeout)
	}
	pods := map[string]string{} // namespace/name of the node's DaemonSet pods → why not Ready ("" when Ready)
	note := func(obj any, deleted bool) {
		pod, ok := obj.(*corev1.Pod)
		if !ok || pod.Spec.NodeName != node {
			return
		}
		ref := metav1.GetControllerOf(pod)
		if ref == nil || ref.Kind != "DaemonSet" {
			return
		}
		key := pod.Namespace + "/" + pod.Name
		if deleted {
			delete(pods, key)
			return
		}
		pods[key] = podReadiness(pod)
	}
	allReady := func() bool {
		for _, why := range pods {
			if why != "" {
				return false
			}
		}
		return true
	}
	// During an apply the pods come from its shared watch of the pods (ShareWatches): no
	// request per node, and a pod turning Ready wakes the gate.
	if ph := p.currentPods(tctx); ph != nil {
		err := ph.waitOn(tctx, node, func() (bool, error) {
			clear(pods)
			for _, pod := range ph.podsOn(node) {
				note(pod, false)
			}
			return allReady(), nil
		})
		if err != nil {
			return gateError(ctx, tctx, providers.GateDaemonSets, notReadyPods(node, pods, nil), err, timeout)
		}
		return nil
	}
	// Most nodes' DaemonSet pods are Ready by the time the node is: one list says so, and
	// only a node whose pods are not gets a watch (a list again, then the watch). The list
	// is served from the API server's watch cache (resourceVersion 0, as an informer's
	// first list is): as fresh as the watch that said the node is Ready, without the
	// round trip to etcd a consistent list waits for.
	lw := p.podListWatch(node)
	var listed map[string]string // what the first list saw, for the error if the watch sees nothing
	if obj, lerr := lw.ListWithContextFunc(tctx, metav1.ListOptions{ResourceVersion: "0"}); lerr == nil {
		list := obj.(*corev1.PodList)
		for i := range list.Items {
			note(&list.Items[i], false)
		}
		if allReady() {
			return nil
		}
		listed = maps.Clone(pods)
		clear(pods)
	}
	_, err = watchtools.UntilWithSync(quiet, lw, &corev1.Pod{},
		func(store cache.Store) (bool, error) {
			for _, obj := range store.List() {
				note(obj, false)
			}
			return allReady(), nil
		},
		func(ev watch.Event) (bool, error) {
			note(ev.Object, ev.Type == watch.Deleted)
			return allReady(), nil
		})
	if err != nil {
		return gateError(ctx, tctx, providers.GateDaemonSets, notReadyPods(node, pods, listed), err, timeout)
	}
	return nil
}

// notReadyPods names the node's DaemonSet pods last seen not Ready: as the watch saw them,
// else (it never synced: the API server stopped answering) as the first list did.
func notReadyPods(node string, pods, listed map[string]string) string {
	if len(pods) == 0 {
		pods = listed
	}
	var out []string
	for _, key := range slices.Sorted(maps.Keys(pods)) {
		if pods[key] != "" {
			out = append(out, key+" "+pods[key])
		}
	}
	if len(out) == 0 {
		return fmt.Sprintf("DaemonSet pods on node %s not confirmed Ready: the API server gave no list of the node's pods", node)
	}
	return fmt.Sprintf("DaemonSet pods on node %s not Ready: %s", node, strings.Join(out, ", "))
}

// gateError says why a wait of gate ended without passing.
func gateError(ctx, tctx context.Context, gate, last string, err error, timeout time.Duration) error {
	switch {
	case ctx.Err() != nil:
		return &providers.GateError{Gate: gate, Output: fmt.Sprintf("%s when apply stopped waiting (%v)", last, context.Cause(ctx))}
	case tctx.Err() != nil:
		return &providers.GateError{Gate: gate, Output: fmt.Sprintf("%s after %s", last, timeout)}
	}
	return &providers.GateError{Gate: gate, Output: fmt.Sprintf("%s: %v", last, err)}
}

// nodeReadiness says whether the node's Ready condition is True, and if not what it is.
func nodeReadiness(n *corev1.Node) (bool, string) {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				return true, ""
			}
			return false, fmt.Sprintf("node %s is not Ready (Ready=%s: %s %s)", n.Name, c.Status, c.Reason, c.Message)
		}
	}
	return false, fmt.Sprintf("node %s has no Ready condition", n.Name)
}

// podReadiness is "" for a Ready pod, else its phase and Ready condition.
func podReadiness(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			if c.Status == corev1.ConditionTrue {
				return ""
			}
			return fmt.Sprintf("(%s, Ready=%s %s)", pod.Status.Phase, c.Status, c.Reason)
		}
	}
	return fmt.Sprintf("(%s, no Ready condition)", pod.Status.Phase)
}

// podListWatch lists and watches the pods bound to node, in every namespace.
func (p *Provider) podListWatch(node string) *cache.ListWatch {
	sel := fields.OneTermEqualSelector("spec.nodeName", node).String()
	pods := p.client.CoreV1().Pods(metav1.NamespaceAll)
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return pods.Watch(ctx, o)
		},
	}
}

// NodeAddress is the node's InternalIP, else its ExternalIP, else its Hostname address.
func (p *Provider) NodeAddress(ctx context.Context, node string) (string, error) {
	n, err := p.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("node %s: reading its addresses: %w", node, err)
	}
	for _, t := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeHostName} {
		for _, a := range n.Status.Addresses {
			if a.Type == t && a.Address != "" {
				return a.Address, nil
			}
		}
	}
	return "", fmt.Errorf("node %s reports no address (status.addresses is empty)", node)
}
