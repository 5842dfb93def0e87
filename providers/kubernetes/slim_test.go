package kubernetes

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
)

// heavyNode is a node as a busy cluster makes one: other operators' annotations near the
// API server's 256 KiB, hundreds of images and volumes, conditions with long messages.
func heavyNode() *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "worker-0", ResourceVersion: "7", Labels: map[string]string{"zone": "a"},
			Annotations:   map[string]string{protocol.State: "Degraded", protocol.Reason: "write failed", model.HoldKey: "ticket 1"},
			ManagedFields: make([]metav1.ManagedFieldsEntry, 100)},
		Spec: corev1.NodeSpec{Unschedulable: true, ProviderID: strings.Repeat("p", 1000)},
	}
	for i := range 2000 {
		n.Annotations[fmt.Sprintf("other.example/a-%d", i)] = strings.Repeat("x", 120)
	}
	for i := range 500 {
		n.Status.Images = append(n.Status.Images, corev1.ContainerImage{Names: []string{strings.Repeat("i", 200)}, SizeBytes: int64(i)})
		n.Status.VolumesInUse = append(n.Status.VolumesInUse, corev1.UniqueVolumeName(strings.Repeat("v", 200)))
		n.Status.VolumesAttached = append(n.Status.VolumesAttached, corev1.AttachedVolume{Name: corev1.UniqueVolumeName(strings.Repeat("v", 200))})
	}
	long := strings.Repeat("m", 100<<10)
	for _, c := range []corev1.NodeConditionType{"MemoryPressure", "DiskPressure", "PIDPressure", "Vendor", corev1.NodeReady} {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: c, Status: corev1.ConditionFalse, Reason: "R", Message: long})
	}
	n.Status.NodeInfo.BootID = "boot-1"
	return n
}

// TestHubKeepsABoundedNode: what the shared watch keeps of a node is what mcp reads of it —
// its name, labels, mcp's own annotations, cordon, Ready condition (its message cut) and
// boot id — a few KiB however much else the node carries (here some 2 MiB).
func TestHubKeepsABoundedNode(t *testing.T) {
	n := heavyNode()
	before := nodeOf(n)
	whole := n.Size()
	obj, err := slimNode(n)
	if err != nil {
		t.Fatal(err)
	}
	kept := obj.(*corev1.Node)
	if size := kept.Size(); size > 8<<10 {
		t.Errorf("kept %d bytes of a node of %d, want at most 8 KiB", size, whole)
	}
	after := nodeOf(kept)
	before.Labels, after.Labels = nil, nil
	if d := cmp.Diff(before, after); d != "" {
		t.Errorf("the node's model changed (-whole +kept):\n%s", d)
	}
	if kept.Labels["zone"] != "a" || kept.Annotations == nil {
		t.Errorf("labels %v, annotations %v", kept.Labels, kept.Annotations)
	}
	if _, why := nodeReadiness(kept); !strings.Contains(why, "Ready=False: R mmm") || len(why) > 2<<10 {
		t.Errorf("readiness %.100q… (%d bytes), want the reason and the message cut", why, len(why))
	}
}

// TestHubKeepsABoundedPod: a pod is kept as the Ready gate reads it — its controller, its
// Ready condition without the message.
func TestHubKeepsABoundedPod(t *testing.T) {
	yes := true
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Annotations: map[string]string{"a": strings.Repeat("x", 200<<10)}},
		Spec: corev1.PodSpec{NodeName: "worker-0"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for i := range 1000 {
		pod.OwnerReferences = append(pod.OwnerReferences, metav1.OwnerReference{Kind: "Other", Name: fmt.Sprintf("o-%d", i)})
	}
	pod.OwnerReferences = append(pod.OwnerReferences, metav1.OwnerReference{Kind: "DaemonSet", Name: "ds", Controller: &yes})
	for _, c := range []corev1.PodConditionType{"Custom", corev1.PodReady} {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionFalse, Reason: "R", Message: strings.Repeat("m", 100<<10)})
	}
	obj, _ := slimPod(pod)
	kept := obj.(*corev1.Pod)
	if size := kept.Size(); size > 1<<10 {
		t.Errorf("kept %d bytes of a pod of %d, want at most 1 KiB", size, pod.Size())
	}
	if podOf(kept).DaemonSet != true || podReadiness(kept) != podReadiness(pod) {
		t.Errorf("kept pod %+v reads otherwise than the whole", kept)
	}
}
