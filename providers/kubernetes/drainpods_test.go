package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mcpfleet/mcp/providers"
)

// evictionLog is a fake cluster whose eviction API accepts every eviction (the pod is
// deleted) and records which pods were evicted, with the request.
type evictionLog struct {
	mu        sync.Mutex
	evictions []*policyv1.Eviction
}

func (l *evictionLog) names() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.evictions {
		out = append(out, e.Namespace+"/"+e.Name)
	}
	slices.Sort(out)
	return out
}

func evictingCluster(t *testing.T, objs ...runtime.Object) (*fake.Clientset, *evictionLog) {
	t.Helper()
	c := fake.NewClientset(objs...)
	c.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{
		GroupVersion: "v1",
		APIResources: []metav1.APIResource{{Name: "pods/eviction", Kind: "Eviction", Group: "policy", Version: "v1"}},
	}}
	log := &evictionLog{}
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ev := log.record(a)
		if ev == nil {
			return false, nil, nil
		}
		return true, nil, c.Tracker().Delete(podsR, ev.Namespace, ev.Name)
	})
	return c, log
}

// record logs a's eviction and returns it, or returns nil when a is not an eviction.
func (l *evictionLog) record(a k8stesting.Action) *policyv1.Eviction {
	if a.GetVerb() != "create" || a.GetSubresource() != "eviction" {
		return nil
	}
	ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
	l.mu.Lock()
	l.evictions = append(l.evictions, ev)
	l.mu.Unlock()
	return ev
}

// TestDrainChoosesPodsAsKubectl: the pods evicted and kept are kubectl drain's with
// --ignore-daemonsets --force --delete-emptydir-data.
func TestDrainChoosesPodsAsKubectl(t *testing.T) {
	finished := func(p *corev1.Pod) *corev1.Pod { p.Status.Phase = corev1.PodSucceeded; return p }
	mirror := kPod("kube-system", "etcd-w-0", "w-0", "", nil)
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "abc"}
	oldDS := kPod("demo", "old-ds", "w-0", "DaemonSet/legacy", nil)
	oldDS.OwnerReferences[0].APIVersion = "extensions/v1beta1" // kubectl: not a DaemonSet's pod, though one of that name exists
	cache := kPod("demo", "cache", "w-0", "ReplicaSet/cache", nil)
	cache.Spec.Volumes = []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}

	c, log := evictingCluster(t,
		kNode("w-0", "a", true, nil), kNode("w-1", "a", true, nil),
		kDaemonSet("kube-system", "agent"), kDaemonSet("demo", "legacy"),
		kPod("kube-system", "agent-w-0", "w-0", "DaemonSet/agent", nil),            // kept: its DaemonSet exists
		finished(kPod("kube-system", "agent-done", "w-0", "DaemonSet/agent", nil)), // evicted: finished
		kPod("kube-system", "orphan", "w-0", "DaemonSet/gone", nil),                // evicted: its DaemonSet is gone
		mirror,                               // kept: the kubelet's
		oldDS,                                // evicted
		cache,                                // evicted: emptyDir allowed by default
		kPod("demo", "bare", "w-0", "", nil), // evicted: no controller
		kPod("demo", "web-0", "w-0", "ReplicaSet/web", nil), // evicted
		kPod("demo", "web-1", "w-1", "ReplicaSet/web", nil), // another node's
	)
	if err := NewForClient(c, Options{}).Drain(context.Background(), "w-0", providers.DrainOptions{Timeout: 10 * time.Second, RetryDelay: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	want := []string{"demo/bare", "demo/cache", "demo/old-ds", "demo/web-0", "kube-system/agent-done", "kube-system/orphan"}
	if got := log.names(); !slices.Equal(got, want) {
		t.Errorf("evicted %v\nwant    %v", got, want)
	}
	if got := podsOn(t, c, "w-0"); !slices.Equal(got, []string{"kube-system/agent-w-0", "kube-system/etcd-w-0"}) {
		t.Errorf("left on w-0: %v, want the DaemonSet's pod and the mirror pod", got)
	}
	for _, ev := range log.evictions {
		if ev.DeleteOptions == nil || ev.DeleteOptions.GracePeriodSeconds != nil || len(ev.DeleteOptions.DryRun) != 0 {
			t.Errorf("eviction of %s/%s with %+v; want the pod's own grace period", ev.Namespace, ev.Name, ev.DeleteOptions)
		}
	}
}

// With DeleteEmptyDirData false a running emptyDir pod stops the drain before anything is
// evicted, named with the others refused for the same reason; a finished one is evicted.
func TestDrainEmptyDirRefusalNamesEveryPod(t *testing.T) {
	withTmp := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Volumes = []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		return p
	}
	done := withTmp(kPod("demo", "job", "w-0", "Job/job", nil))
	done.Status.Phase = corev1.PodFailed
	c, log := evictingCluster(t, kNode("w-0", "a", true, nil),
		withTmp(kPod("demo", "a", "w-0", "ReplicaSet/a", nil)), withTmp(kPod("demo", "b", "w-0", "", nil)), done,
		kPod("demo", "web", "w-0", "ReplicaSet/web", nil))
	err := NewForClient(c, Options{DeleteEmptyDirData: ptr(false)}).Drain(context.Background(), "w-0", providers.DrainOptions{Timeout: time.Second})
	want := "drain node w-0: cannot evict pods with emptyDir volumes (the provider's delete_emptydir_data is false): demo/a, demo/b"
	if err == nil || err.Error() != want {
		t.Errorf("drain error:\n got %v\nwant %s", err, want)
	}
	if got := log.names(); len(got) != 0 {
		t.Errorf("a refused drain evicted %v", got)
	}
}

// A DaemonSet that cannot be read (here: forbidden) is not taken for gone: the drain stops,
// naming the pod and why.
func TestDrainDaemonSetUnreadable(t *testing.T) {
	c, log := evictingCluster(t, kNode("w-0", "a", true, nil), kPod("kube-system", "agent-w-0", "w-0", "DaemonSet/agent", nil))
	c.PrependReactor("get", "daemonsets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "daemonsets"}, "agent", errors.New("no RBAC"))
	})
	err := NewForClient(c, Options{}).Drain(context.Background(), "w-0", providers.DrainOptions{Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "kube-system/agent-w-0") || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("drain error %v; want the pod and the forbidden GET", err)
	}
	if got := log.names(); len(got) != 0 {
		t.Errorf("evicted %v", got)
	}
}

// A refusal is retried every RetryDelay; when the budget allows it the drain finishes.
func TestDrainRetriesRefusalUntilAllowed(t *testing.T) {
	c, evictions := drainFleet(t)
	// The budget allows the eviction from the fourth attempt on.
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "eviction" && evictions.Load() >= 3 {
			ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
			evictions.Add(1)
			return true, nil, c.Tracker().Delete(podsR, ev.Namespace, ev.Name)
		}
		return false, nil, nil
	})
	start := time.Now()
	err := NewForClient(c, Options{}).Drain(context.Background(), "w-2", providers.DrainOptions{Timeout: 10 * time.Second, RetryDelay: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if n := evictions.Load(); n != 4 {
		t.Errorf("%d eviction requests, want 3 refused and 1 accepted", n)
	}
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Errorf("three refusals retried in %v: the retry delay of 50ms was not waited", took)
	}
	if got := podsOn(t, c, "w-2"); !slices.Equal(got, []string{"kube-system/agent-w-2"}) {
		t.Errorf("left on w-2: %v", got)
	}
}

// An evicted pod counts as gone once a pod of the same name has another UID (a StatefulSet
// put it back); one still there with its UID keeps the drain waiting until its timeout,
// which names it.
func TestDrainWaitsForEvictedPodsToGo(t *testing.T) {
	for _, replace := range []bool{true, false} {
		c, log := evictingCluster(t, kNode("w-0", "a", true, nil), kPod("demo", "db-0", "w-0", "StatefulSet/db", nil))
		c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			ev := log.record(a)
			if ev == nil {
				return false, nil, nil
			}
			if !replace { // accepted, but the pod is still terminating
				return true, nil, nil
			}
			if err := c.Tracker().Delete(podsR, ev.Namespace, ev.Name); err != nil {
				return true, nil, err
			}
			again := kPod("demo", "db-0", "w-0", "StatefulSet/db", nil)
			again.UID = "uid-demo-db-0-again"
			return true, nil, c.Tracker().Create(podsR, again, "demo")
		})
		err := NewForClient(c, Options{}).Drain(context.Background(), "w-0", providers.DrainOptions{Timeout: 300 * time.Millisecond, RetryDelay: 10 * time.Millisecond})
		if replace && err != nil {
			t.Errorf("pod replaced with a new UID: %v", err)
		}
		want := "drain node w-0: evicted pods still terminating: [demo/db-0]: global timeout reached: 300ms"
		if !replace && (err == nil || err.Error() != want) {
			t.Errorf("pod still there:\n got %v\nwant %s", err, want)
		}
		if got := log.names(); !slices.Equal(got, []string{"demo/db-0"}) {
			t.Errorf("replace=%v: evictions %v, want one of demo/db-0", replace, got)
		}
	}
}

// The eviction's version is the one discovery names (policy/v1beta1 on an API server older
// than 1.22); without an eviction API pods are deleted.
func TestDrainEvictionVersions(t *testing.T) {
	for _, tc := range []struct {
		resources []metav1.APIResource
		verb      string
		version   string
	}{
		{[]metav1.APIResource{{Name: "pods/eviction", Kind: "Eviction", Group: "policy", Version: "v1beta1"}}, "create", "v1beta1"},
		{nil, "delete", ""},
	} {
		c := fake.NewClientset(kNode("w-0", "a", true, nil), kPod("demo", "web-0", "w-0", "ReplicaSet/web", nil))
		c.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: tc.resources}}
		var got []string
		c.PrependReactor("*", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			switch {
			case a.GetVerb() == "create" && a.GetSubresource() == "eviction":
				ev := a.(k8stesting.CreateAction).GetObject()
				got = append(got, "create "+evictionVersionOf(ev))
				return true, nil, c.Tracker().Delete(podsR, "demo", "web-0")
			case a.GetVerb() == "delete":
				got = append(got, "delete")
			}
			return false, nil, nil
		})
		if err := NewForClient(c, Options{}).Drain(context.Background(), "w-0", providers.DrainOptions{Timeout: 5 * time.Second}); err != nil {
			t.Fatal(err)
		}
		want := tc.verb
		if tc.version != "" {
			want += " " + tc.version
		}
		if !slices.Equal(got, []string{want}) {
			t.Errorf("requests %v, want [%s]", got, want)
		}
	}
}

// evictionVersionOf names an Eviction's version by its Go type (the fake keeps no
// apiVersion on the object).
func evictionVersionOf(o runtime.Object) string {
	switch o.(type) {
	case *policyv1.Eviction:
		return "v1"
	case *policyv1beta1.Eviction:
		return "v1beta1"
	}
	return fmt.Sprintf("%T", o)
}

// With EvictUnreplicated false (kubectl drain without --force) a running pod without a
// controller, and a DaemonSet's pod whose DaemonSet is gone, stop the drain before
// anything is evicted, each named under its reason; a finished bare pod is evicted.
func TestDrainUnreplicatedRefusedWhenNotAllowed(t *testing.T) {
	done := kPod("demo", "done", "w-0", "", nil)
	done.Status.Phase = corev1.PodSucceeded
	c, log := evictingCluster(t, kNode("w-0", "a", true, nil), done,
		kPod("demo", "bare", "w-0", "", nil),
		kPod("kube-system", "orphan", "w-0", "DaemonSet/gone", nil),
		kPod("demo", "web-0", "w-0", "ReplicaSet/web", nil))
	err := NewForClient(c, Options{EvictUnreplicated: ptr(false)}).Drain(context.Background(), "w-0", providers.DrainOptions{Timeout: time.Second})
	want := "drain node w-0: cannot evict pods that declare no controller (the provider's evict_unreplicated is false): demo/bare; " +
		"cannot evict pods whose DaemonSet is gone (the provider's evict_unreplicated is false): kube-system/orphan"
	if err == nil || err.Error() != want {
		t.Errorf("drain error:\n got %v\nwant %s", err, want)
	}
	if got := log.names(); len(got) != 0 {
		t.Errorf("a refused drain evicted %v", got)
	}

	// Without those two, the drain goes through: the finished bare pod is evicted.
	for _, name := range []string{"bare", "orphan"} {
		ns := "demo"
		if name == "orphan" {
			ns = "kube-system"
		}
		if err := c.Tracker().Delete(podsR, ns, name); err != nil {
			t.Fatal(err)
		}
	}
	if err := NewForClient(c, Options{EvictUnreplicated: ptr(false)}).Drain(context.Background(), "w-0", providers.DrainOptions{Timeout: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if got := log.names(); !slices.Equal(got, []string{"demo/done", "demo/web-0"}) {
		t.Errorf("evicted %v, want the finished bare pod and the ReplicaSet's", got)
	}
}

// namespaceTerminating is the API server's refusal of an eviction in a namespace being
// deleted.
func namespaceTerminating(ns, pod string) error {
	err := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, pod,
		fmt.Errorf("unable to create new content in namespace %s because it is being terminated", ns))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: corev1.NamespaceTerminatingCause, Message: "namespace " + ns + " is being terminated", Field: "metadata.namespace"})
	return err
}

// In a namespace being deleted evictions are refused with a 403. A pod already being
// deleted is not evicted again: the drain waits for it to go. One not yet being deleted
// is retried like a PDB's refusal (kubectl's), and the error gives the API server's
// reason, not a budget, even when a budget selects the pod.
func TestDrainNamespaceTerminating(t *testing.T) {
	for _, deleting := range []bool{true, false} {
		pod := kPod("old", "api-0", "w-0", "ReplicaSet/api", map[string]string{"app": "api"})
		if deleting {
			pod.DeletionTimestamp = ptr(metav1.Now())
		}
		c, _ := evictingCluster(t, kNode("w-0", "a", true, nil), pod,
			kPDB("old", "api-pdb", map[string]string{"app": "api"}, intstr.FromInt32(1), 1, 1, 0))
		var attempts atomic.Int32
		c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.GetSubresource() != "eviction" {
				return false, nil, nil
			}
			attempts.Add(1)
			return true, nil, namespaceTerminating("old", "api-0")
		})
		if deleting { // the kubelet finishes the pod off a little later
			time.AfterFunc(100*time.Millisecond, func() { _ = c.Tracker().Delete(podsR, "old", "api-0") })
		}
		err := NewForClient(c, Options{}).Drain(context.Background(), "w-0", providers.DrainOptions{Timeout: 2 * time.Second, RetryDelay: 20 * time.Millisecond})
		switch {
		case deleting && err != nil:
			t.Errorf("pod being deleted: %v", err)
		case deleting && attempts.Load() != 1:
			t.Errorf("pod being deleted: %d eviction requests, want 1 (then a wait)", attempts.Load())
		case !deleting && (err == nil || !strings.Contains(err.Error(), "eviction of old/api-0 refused: ") ||
			!strings.Contains(err.Error(), "being terminated") || strings.Contains(err.Error(), "PodDisruptionBudget")):
			t.Errorf("pod not being deleted: %v; want the API server's refusal, retried until the timeout", err)
		case !deleting && attempts.Load() < 2:
			t.Errorf("pod not being deleted: %d eviction requests, want retries", attempts.Load())
		}
	}
}

// An eviction failing otherwise (here a 500) is not retried: the drain fails at once,
// naming the pod, and the other pods' evictions still go through.
func TestDrainEvictionErrorNotRetried(t *testing.T) {
	c, log := evictingCluster(t, kNode("w-0", "a", true, nil),
		kPod("demo", "web-0", "w-0", "ReplicaSet/web", nil), kPod("demo", "broken", "w-0", "ReplicaSet/broken", nil))
	var attempts atomic.Int32
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" || a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction).Name != "broken" {
			return false, nil, nil
		}
		attempts.Add(1)
		return true, nil, apierrors.NewInternalError(errors.New("etcd is sad"))
	})
	err := NewForClient(c, Options{}).Drain(context.Background(), "w-0", providers.DrainOptions{Timeout: 10 * time.Second, RetryDelay: 10 * time.Millisecond})
	if err == nil || !strings.HasPrefix(err.Error(), "drain node w-0: eviction of demo/broken: ") || !strings.Contains(err.Error(), "etcd is sad") {
		t.Errorf("drain error %v", err)
	}
	if n := attempts.Load(); n != 1 { // a retry every 10ms for 10s would make hundreds
		t.Errorf("%d eviction requests for demo/broken, want 1", n)
	}
	if got := log.names(); !slices.Equal(got, []string{"demo/web-0"}) {
		t.Errorf("evicted %v, want demo/web-0", got)
	}
}
