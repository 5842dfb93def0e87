package kubernetes

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Objects for fake clientsets.

var created = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func kNode(name, zone string, ready bool, ann map[string]string) *corev1.Node {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created), Annotations: ann,
			Labels: map[string]string{"node-role.kubernetes.io/worker": "", ZoneLabel: zone}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
				{Type: corev1.NodeReady, Status: st}},
			NodeInfo: corev1.NodeSystemInfo{BootID: "boot-" + name},
		},
	}
}

// kPod is a running, ready pod on node; owner is "ReplicaSet/x", "DaemonSet/x" or "".
func kPod(ns, name, node, owner string, lbl map[string]string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbl, UID: types.UID("uid-" + ns + "-" + name)},
		Spec:       corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	if owner != "" {
		kind, oname, _ := cut(owner)
		apiVersion := "apps/v1"
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: oname,
			UID: types.UID("uid-" + oname), Controller: ptr(true)}}
	}
	return p
}

func kDaemonSet(ns, name string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)}}
}

func kPDB(ns, name string, sel map[string]string, minAvailable intstr.IntOrString, current, desired, allowed int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: sel}, MinAvailable: &minAvailable},
		Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, CurrentHealthy: current,
			DesiredHealthy: desired, DisruptionsAllowed: allowed, ExpectedPods: current},
	}
}

func cut(s string) (string, string, bool) {
	for i := range s {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func ptr[T any](v T) *T { return &v }
