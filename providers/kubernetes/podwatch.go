package kubernetes

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// podNodeIndex indexes the shared pod hub's pods by the node they are bound to.
const podNodeIndex = "node"

// sharedPods is the shared hub of the pods bound to nodes while ShareWatches is on (made by
// the first Ready gate that reads it, anew when the last one was lost), else nil: the Ready
// gates of an apply read their nodes' DaemonSet pods from it instead of each listing the
// pods of its node.
func (p *Provider) sharedPods() *watchHub {
	return p.shared(&p.podHub, p.startPodHub)
}

// currentPods is the shared pod hub when what it holds is current (as currentHub), else nil.
func (p *Provider) currentPods(ctx context.Context) *watchHub {
	return current(ctx, p.sharedPods())
}

// startPodHub lists and watches the pods bound to nodes that have not finished (those a
// Ready gate reads), keeping only what the gate reads of each.
func (p *Provider) startPodHub(parent context.Context) *watchHub {
	return p.newHub(parent, typedSource(typedWatch[corev1.Pod, *corev1.Pod, *corev1.PodList]{
		client:   p.client.CoreV1().Pods(metav1.NamespaceAll),
		selector: activePods,
		list: func(rv string, items []corev1.Pod) *corev1.PodList {
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: rv}, Items: items}
		},
		node:      func(pod *corev1.Pod) string { return pod.Spec.NodeName },
		transform: slimPod,
		indexers: cache.Indexers{podNodeIndex: func(obj any) ([]string, error) {
			if pod, ok := obj.(*corev1.Pod); ok {
				return []string{pod.Spec.NodeName}, nil
			}
			return nil, nil
		}},
	}))
}

// podsOn is the pods the hub holds bound to node. They are the store's: not to be changed.
func (h *watchHub) podsOn(node string) []*corev1.Pod {
	idx, ok := h.store.(cache.Indexer)
	if !ok {
		return nil
	}
	objs, _ := idx.ByIndex(podNodeIndex, node)
	out := make([]*corev1.Pod, 0, len(objs))
	for _, obj := range objs {
		if pod, ok := obj.(*corev1.Pod); ok {
			out = append(out, pod)
		}
	}
	return out
}

// slimPod keeps of a pod what the Ready gate reads — its name, controller, node, phase and
// Ready condition (without its message, which the gate does not show) — so that the shared
// store of 15,000 pods stays small, and each pod in it bounded.
func slimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	kept := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			ResourceVersion: pod.ResourceVersion},
		Spec:   corev1.PodSpec{NodeName: pod.Spec.NodeName},
		Status: corev1.PodStatus{Phase: pod.Status.Phase},
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		kept.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			c.Message = ""
			kept.Status.Conditions = append(kept.Status.Conditions, c)
		}
	}
	return kept, nil
}
