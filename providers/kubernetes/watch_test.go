package kubernetes

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
)

// nodeReads counts the list and watch requests for nodes the clientset saw.
func nodeReads(c *fake.Clientset) (lists, watches int) { return reads(c, "nodes") }

// reads counts the list and watch requests for resource the clientset saw.
func reads(c *fake.Clientset, resource string) (lists, watches int) {
	for _, a := range c.Actions() {
		if a.GetResource().Resource != resource {
			continue
		}
		switch a.(type) {
		case k8stesting.ListAction:
			lists++
		case k8stesting.WatchAction:
			watches++
		}
	}
	return lists, watches
}

// With ShareWatches on, the observations and Ready gates of many nodes read one list and
// one watch of the nodes; without it each gate lists and watches its own node, and each
// observation lists.
func TestSharedWatchCostsNoRequestPerNode(t *testing.T) {
	names := []string{"w-0", "w-1", "w-2", "w-3"}
	ctx := context.Background()
	run := func(p *Provider) {
		for range 3 {
			obs, err := p.ObserveNodes(ctx, names)
			if err != nil || len(obs) != len(names) {
				t.Fatalf("observe: %d nodes, %v", len(obs), err)
			}
		}
		for _, n := range names {
			if err := p.WaitHealthy(ctx, n, 5*time.Second); err != nil {
				t.Fatalf("gate of %s: %v", n, err)
			}
		}
		if _, err := p.ObserveNodes(ctx, []string{"w-0", "nope"}); err == nil || !strings.Contains(err.Error(), "nope not found") {
			t.Errorf("observing a missing node: %v", err)
		}
	}
	fleet := func() *fake.Clientset {
		c := fake.NewClientset()
		for _, n := range names {
			if _, err := c.CoreV1().Nodes().Create(ctx, kNode(n, "a", true, nil), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		c.ClearActions()
		return c
	}

	c := fleet()
	p := NewForClient(c, Options{})
	stop := p.ShareWatches(ctx)
	run(p)
	stop()
	if l, w := nodeReads(c); l != 1 || w != 1 {
		t.Errorf("shared: %d lists and %d watches of nodes, want 1 and 1", l, w)
	}
	if l, w := reads(c, "pods"); l != 1 || w != 1 {
		t.Errorf("shared: %d lists and %d watches of pods, want 1 and 1", l, w)
	}

	c = fleet()
	run(NewForClient(c, Options{}))
	if l, w := nodeReads(c); l != 4+len(names) || w != len(names) {
		t.Errorf("unshared: %d lists and %d watches of nodes, want %d and %d", l, w, 4+len(names), len(names))
	}
	if l, w := reads(c, "pods"); l != len(names) || w != 0 {
		t.Errorf("unshared: %d lists and %d watches of pods, want %d and 0", l, w, len(names))
	}
}

// A change made while a wait is on reaches it through the shared watch.
func TestSharedWatchWakesWaiters(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset(kNode("w-0", "a", false, nil))
	p := NewForClient(c, Options{})
	defer p.ShareWatches(ctx)()
	done := make(chan error, 1)
	go func() { done <- p.WaitHealthy(ctx, "w-0", 10*time.Second) }()
	time.Sleep(100 * time.Millisecond)
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, kNode("w-0", "a", true, nil), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("w-0 turned Ready: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the Ready change did not reach the gate")
	}
}

// Observations through the shared watch make each node's model once per version of the
// node, and a new version is seen.
func TestSharedObserveFollowsVersions(t *testing.T) {
	ctx := context.Background()
	n := kNode("w-0", "a", true, nil)
	n.ResourceVersion = "1"
	c := fake.NewClientset(n)
	p := NewForClient(c, Options{})
	defer p.ShareWatches(ctx)()
	state := func() string {
		obs, err := p.ObserveNodes(ctx, []string{"w-0"})
		if err != nil || len(obs) != 1 {
			t.Fatalf("observe: %v, %v", obs, err)
		}
		return obs[0].State
	}
	if s := state(); s != "" {
		t.Fatalf("state %q before any report", s)
	}
	n = n.DeepCopy()
	n.ResourceVersion = "2"
	n.Annotations = map[string]string{protocol.State: model.StateDegraded}
	if _, err := c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); state() != model.StateDegraded; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the new version of the node was not observed")
		}
	}
}

// A hub's list goes page by page, each page's items transformed as it arrives.
func TestListSlimPages(t *testing.T) {
	var asked []metav1.ListOptions
	pages := []*corev1.PodList{
		{ListMeta: metav1.ListMeta{ResourceVersion: "7", Continue: "next"}, Items: []corev1.Pod{*kPod("a", "p-0", "w-0", "", nil)}},
		{ListMeta: metav1.ListMeta{ResourceVersion: "7"}, Items: []corev1.Pod{*kPod("a", "p-1", "w-1", "", nil)}},
	}
	src := hubSource{
		list: func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
			asked = append(asked, o)
			return pages[len(asked)-1], nil
		},
		collect: func(items []runtime.Object, rv string) runtime.Object {
			l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
			for _, obj := range items {
				l.Items = append(l.Items, *obj.(*corev1.Pod))
			}
			return l
		},
		transform: slimPod,
	}
	pages[0].Items[0].Spec.Containers = []corev1.Container{{Name: "big"}}
	obj, err := listSlim(context.Background(), src, metav1.ListOptions{ResourceVersion: "0"}, 500)
	if err != nil {
		t.Fatal(err)
	}
	l := obj.(*corev1.PodList)
	if len(l.Items) != 2 || l.ResourceVersion != "7" || l.Items[0].Spec.Containers != nil || l.Items[1].Spec.NodeName != "w-1" {
		t.Errorf("list: %+v", l)
	}
	if len(asked) != 2 || asked[0].Limit != 500 || asked[0].ResourceVersion != "" || asked[1].Continue != "next" {
		t.Errorf("asked %+v", asked)
	}
}
