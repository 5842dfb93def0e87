package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mcpfleet/mcp/providers"
)

// drainFleet is a fake cluster whose eviction API refuses pods labelled app=db, the
// PodDisruptionBudget db-pdb allowing no disruption (the fake's stand-in for the API
// server's check), and deletes the others. It counts eviction requests.
func drainFleet(t *testing.T) (*fake.Clientset, *atomic.Int32) {
	t.Helper()
	c := fake.NewClientset(
		kNode("w-0", "a", true, nil), kNode("w-2", "c", true, nil),
		kDaemonSet("kube-system", "agent"),
		kPod("kube-system", "agent-w-0", "w-0", "DaemonSet/agent", map[string]string{"app": "agent"}),
		kPod("kube-system", "agent-w-2", "w-2", "DaemonSet/agent", map[string]string{"app": "agent"}),
		kPod("demo", "web-0", "w-0", "ReplicaSet/web", map[string]string{"app": "web"}),
		kPod("demo", "bare", "w-0", "", nil), // no controller: evicted (Force)
		kPod("demo", "db-0", "w-2", "StatefulSet/db", map[string]string{"app": "db"}),
		kPDB("demo", "db-pdb", map[string]string{"app": "db"}, intstr.FromInt32(1), 1, 1, 0),
		kPDB("demo", "other", map[string]string{"app": "other"}, intstr.FromInt32(1), 3, 1, 2),
	)
	c.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{
		GroupVersion: "v1",
		APIResources: []metav1.APIResource{{Name: "pods/eviction", Kind: "Eviction", Group: "policy", Version: "v1"}},
	}}
	var evictions atomic.Int32
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		evictions.Add(1)
		ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		pod, err := c.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), ev.Namespace, ev.Name)
		if err != nil {
			return true, nil, err
		}
		if pod.(*corev1.Pod).Labels["app"] == "db" {
			return true, nil, tooManyRequests("db-pdb")
		}
		return true, nil, c.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), ev.Namespace, ev.Name)
	})
	return c, &evictions
}

// tooManyRequests is the API server's refusal of an eviction by a PDB.
func tooManyRequests(pdb string) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: policyv1.DisruptionBudgetCause, Message: fmt.Sprintf("The disruption budget %s needs 1 healthy pods and has 1 currently", pdb)})
	return err
}

func podsOn(t *testing.T, c *fake.Clientset, node string) []string {
	t.Helper()
	l, err := c.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range l.Items {
		if p.Spec.NodeName == node {
			names = append(names, p.Namespace+"/"+p.Name)
		}
	}
	slices.Sort(names)
	return names
}

func TestDrainEvictsAndKeepsDaemonSets(t *testing.T) {
	c, _ := drainFleet(t)
	p := NewForClient(c, Options{})
	if err := p.Drain(context.Background(), "w-0", providers.DrainOptions{Timeout: 10 * time.Second, RetryDelay: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if got := podsOn(t, c, "w-0"); !slices.Equal(got, []string{"kube-system/agent-w-0"}) {
		t.Errorf("pods left on w-0: %v, want only the DaemonSet pod", got)
	}
	if got := podsOn(t, c, "w-2"); len(got) != 2 {
		t.Errorf("drain of w-0 touched w-2: %v", got)
	}
}

func TestDrainBlockedNamesNodePodAndPDB(t *testing.T) {
	c, evictions := drainFleet(t)
	p := NewForClient(c, Options{})
	err := p.Drain(context.Background(), "w-2", providers.DrainOptions{Timeout: 300 * time.Millisecond, RetryDelay: 20 * time.Millisecond})
	want := "drain node w-2: eviction of demo/db-0 refused by PodDisruptionBudget demo/db-pdb (needs 1 healthy, has 1): global timeout reached: 300ms"
	if err == nil || err.Error() != want {
		t.Fatalf("drain error:\n got %v\nwant %s", err, want)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Error("a drain timeout is not a context.DeadlineExceeded")
	}
	if n := evictions.Load(); n < 2 {
		t.Errorf("%d eviction attempts, want retries", n)
	}
}

// Without a matching PDB the API server's own reason is given.
func TestDrainRefusalWithoutPDB(t *testing.T) {
	c, _ := drainFleet(t)
	if err := c.Tracker().Delete(policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets"), "demo", "db-pdb"); err != nil {
		t.Fatal(err)
	}
	err := NewForClient(c, Options{}).Drain(context.Background(), "w-2", providers.DrainOptions{Timeout: 100 * time.Millisecond, RetryDelay: 20 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "eviction of demo/db-0 refused: Cannot evict pod") ||
		!strings.Contains(err.Error(), "The disruption budget db-pdb needs 1 healthy pods") {
		t.Errorf("drain error %v", err)
	}
}

func TestDrainCancelled(t *testing.T) {
	c, _ := drainFleet(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	err := NewForClient(c, Options{}).Drain(ctx, "w-2", providers.DrainOptions{Timeout: time.Minute, RetryDelay: 10 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "demo/db-pdb") || !strings.HasSuffix(err.Error(), context.Canceled.Error()) {
		t.Errorf("cancelled drain: %v", err)
	}
}

func TestDrainEmptyDirRefusedWhenNotAllowed(t *testing.T) {
	c, _ := drainFleet(t)
	pod := kPod("demo", "cache", "w-0", "ReplicaSet/cache", nil)
	pod.Spec.Volumes = []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	if _, err := c.CoreV1().Pods("demo").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := NewForClient(c, Options{DeleteEmptyDirData: ptr(false)}).Drain(context.Background(), "w-0", providers.DrainOptions{Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "drain node w-0") || !strings.Contains(err.Error(), "demo/cache") {
		t.Errorf("drain with an emptyDir pod and DeleteEmptyDirData false: %v", err)
	}
}

// During an apply (ShareWatches) the drain waits for its evicted pods on the shared watch
// of the pods: one LIST of the node's pods to choose them, none while a pod terminates
// (each drain polled the node's pods once a second before; 200 nodes draining over 15,000
// pods timed out).
func TestDrainWaitsOnTheSharedPodWatch(t *testing.T) {
	c, _ := drainFleet(t)
	// web-0's eviction is accepted and the pod terminates for a while.
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if ev, ok := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction); !ok || a.GetSubresource() != "eviction" || ev.Name != "web-0" {
			return false, nil, nil
		}
		time.AfterFunc(300*time.Millisecond, func() {
			c.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "demo", "web-0")
		})
		return true, nil, nil
	})
	var lists atomic.Int32
	c.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.ListAction).GetListRestrictions().Fields.String() == "spec.nodeName=w-0" {
			lists.Add(1)
		}
		return false, nil, nil
	})
	p := NewForClient(c, Options{})
	ctx := context.Background()
	defer p.ShareWatches(ctx)()
	start := time.Now()
	if err := p.Drain(ctx, "w-0", providers.DrainOptions{Timeout: 10 * time.Second, RetryDelay: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if got := podsOn(t, c, "w-0"); !slices.Equal(got, []string{"kube-system/agent-w-0"}) {
		t.Errorf("pods left on w-0 after the drain (took %s): %v", time.Since(start), got)
	}
	if n := lists.Load(); n != 1 {
		t.Errorf("%d LISTs of w-0's pods, want 1 (the choice; the wait reads the shared watch)", n)
	}
}
