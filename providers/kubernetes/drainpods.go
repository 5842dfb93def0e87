package kubernetes

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// The pods a drain evicts are chosen as k8s.io/kubectl/pkg/drain (v0.34) chooses them for
// `kubectl drain --ignore-daemonsets [--force] [--delete-emptydir-data]`, its filters
// applied in its order, the first that does not evict deciding:
//
//  1. a pod whose controller is an apps/v1 DaemonSet and that has not finished stays (the
//     DaemonSet would put it back), unless that DaemonSet is gone: then it is evicted when
//     the provider's EvictUnreplicated allows (kubectl's --force), and blocks the drain
//     otherwise; a DaemonSet that cannot be read blocks it too;
//  2. a mirror pod (the kubelet's own copy of a static pod) stays;
//  3. a pod with an emptyDir volume that has not finished blocks the drain when the
//     provider's DeleteEmptyDirData is false (kubectl's --delete-emptydir-data);
//  4. a pod without a controller that has not finished blocks the drain when the
//     provider's EvictUnreplicated is false (kubectl's --force);
//  5. everything else is evicted, a finished pod too.
//
// A drain that pods block evicts nothing, and its error names them all, by reason.
// docs/decisions.md ("Binary size") says why this is not kubectl's package.

// podVerdict is what a drain does with one pod of its node.
type podVerdict int

const (
	evictPod  podVerdict = iota
	keepPod              // left on the node
	refusePod            // the drain may not evict it, and cannot finish
)

// drainPods lists the pods bound to node and returns those the drain evicts. Pods it may
// not evict make an error that names them, by reason.
func (p *Provider) drainPods(ctx context.Context, node string) ([]corev1.Pod, error) {
	pods, err := p.podsBoundTo(ctx, node)
	if err != nil {
		return nil, err
	}
	var evict []corev1.Pod
	refused := map[string][]string{} // reason → namespace/name
	for _, pod := range pods {
		v, why := p.drainVerdict(ctx, &pod)
		switch v {
		case evictPod:
			evict = append(evict, pod)
		case refusePod:
			refused[why] = append(refused[why], pod.Namespace+"/"+pod.Name)
		}
	}
	if len(refused) > 0 {
		var msgs []string
		for _, why := range slices.Sorted(maps.Keys(refused)) {
			msgs = append(msgs, fmt.Sprintf("cannot evict %s: %s", why, strings.Join(refused[why], ", ")))
		}
		return nil, fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return evict, nil
}

// podsBoundTo lists the pods bound to node in one unpaged LIST by spec.nodeName. A node
// holds a few hundred pods at most, and an unpaged LIST is answered from the API server's
// watch cache, by its index of pods by node, consistently (consistent reads from the cache,
// Kubernetes 1.31 and later); a paged one (limit=500) went to etcd, a range over every pod
// of the cluster: 200 nodes draining at once over 15,000 pods timed out (docs/benchmarks.md).
func (p *Provider) podsBoundTo(ctx context.Context, node string) ([]corev1.Pod, error) {
	list, err := p.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx,
		metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	pods := list.Items[:0]
	for _, pod := range list.Items {
		if pod.Spec.NodeName == node { // a real API server selects; a fake may not
			pods = append(pods, pod)
		}
	}
	return pods, nil
}

// drainVerdict applies the filters above to one pod; why says why a pod is refused.
func (p *Provider) drainVerdict(ctx context.Context, pod *corev1.Pod) (v podVerdict, why string) {
	finished := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	ref := metav1.GetControllerOf(pod)
	if ref != nil && !finished && isDaemonSet(ref) {
		_, err := p.client.AppsV1().DaemonSets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case err == nil:
			return keepPod, ""
		case !apierrors.IsNotFound(err): // an orphan may be evicted; anything else is not known
			return refusePod, fmt.Sprintf("pods whose DaemonSet cannot be read (%v)", err)
		case !p.o.evictUnreplicated():
			return refusePod, "pods whose DaemonSet is gone (the provider's evict_unreplicated is false)"
		}
	}
	if _, ok := pod.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return keepPod, ""
	}
	if !finished && !p.o.deleteEmptyDirData() && slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.EmptyDir != nil }) {
		return refusePod, "pods with emptyDir volumes (the provider's delete_emptydir_data is false)"
	}
	if !finished && ref == nil && !p.o.evictUnreplicated() {
		return refusePod, "pods that declare no controller (the provider's evict_unreplicated is false)"
	}
	return evictPod, ""
}

// isDaemonSet reports whether a controller reference names an apps/v1 DaemonSet (kubectl
// compares the API version too: an extensions/v1beta1 owner is not one).
func isDaemonSet(ref *metav1.OwnerReference) bool {
	return ref.Kind == "DaemonSet" && ref.APIVersion == appsv1.SchemeGroupVersion.String()
}
