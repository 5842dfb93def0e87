package kubernetes

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/mcpfleet/mcp/providers"
)

func TestHealthGatesFromTheWatch(t *testing.T) {
	t.Run("own watches", func(t *testing.T) { testHealthGates(t, false) })
	t.Run("shared watches", func(t *testing.T) { testHealthGates(t, true) })
}

// testHealthGates: with shared, the gates read the apply's shared watches of the nodes and
// the pods (ShareWatches).
func testHealthGates(t *testing.T, shared bool) {
	notReadyPod := kPod("kube-system", "agent-w-1", "w-1", "DaemonSet/agent", nil)
	notReadyPod.Status.Conditions[0].Status = corev1.ConditionFalse
	addressed := kNode("w-2", "a", true, nil)
	addressed.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "w-2"}, {Type: corev1.NodeInternalIP, Address: "10.0.0.2"}}
	web := kPod("demo", "web-1", "w-1", "ReplicaSet/web", nil)
	web.Status.Conditions[0].Status = corev1.ConditionFalse // not a DaemonSet's: not gated
	c := fake.NewClientset(kNode("w-0", "a", false, nil), kNode("w-1", "a", true, nil), addressed,
		kPod("kube-system", "agent-w-0", "w-0", "DaemonSet/agent", nil), notReadyPod, web)
	p := NewForClient(c, Options{})
	ctx := context.Background()
	if shared {
		defer p.ShareWatches(ctx)()
	}
	for node, want := range map[string]struct{ gate, output string }{
		"w-0": {providers.GateReady, "node w-0 is not Ready (Ready=False"},
		"w-1": {providers.GateDaemonSets, "DaemonSet pods on node w-1 not Ready: kube-system/agent-w-1 (Running, Ready=False"},
	} {
		err := p.WaitHealthy(ctx, node, 500*time.Millisecond)
		var ge *providers.GateError
		if !errors.As(err, &ge) || ge.Gate != want.gate || !strings.Contains(ge.Output, want.output) {
			t.Errorf("%s: err = %v, want gate %s saying %q", node, err, want.gate, want.output)
		}
	}

	// w-0 turns Ready while the gate waits: the watch brings it.
	done := make(chan error, 1)
	go func() { done <- p.WaitHealthy(ctx, "w-0", 10*time.Second) }()
	time.Sleep(200 * time.Millisecond)
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, kNode("w-0", "a", true, nil), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("w-0 turned Ready: %v", err)
	}

	// agent-w-1 turns Ready while the gate of w-1 waits: the pods' watch brings it.
	go func() { done <- p.WaitHealthy(ctx, "w-1", 10*time.Second) }()
	time.Sleep(200 * time.Millisecond)
	if _, err := c.CoreV1().Pods("kube-system").UpdateStatus(ctx, kPod("kube-system", "agent-w-1", "w-1", "DaemonSet/agent", nil), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("agent-w-1 turned Ready: %v", err)
	}

	if a, err := p.NodeAddress(ctx, "w-2"); err != nil || a != "10.0.0.2" {
		t.Errorf("address of w-2 = %q, %v; want its InternalIP 10.0.0.2", a, err)
	}
	if _, err := p.NodeAddress(ctx, "w-1"); err == nil || !strings.Contains(err.Error(), "node w-1 reports no address") {
		t.Errorf("address of w-1 (none) = %v", err)
	}
}

// A gate that ends before its watch saw any pod (the API server stopped answering) still
// names the pods the first list saw not Ready — never an empty list.
func TestNotReadyPodsNamesWhatWasSeen(t *testing.T) {
	listed := map[string]string{"kube-system/ds-a": "(Running, Ready=False ContainersNotReady)", "kube-system/ds-b": ""}
	if got := notReadyPods("w-0", map[string]string{}, listed); got != "DaemonSet pods on node w-0 not Ready: kube-system/ds-a (Running, Ready=False ContainersNotReady)" {
		t.Errorf("after a list and no watch: %q", got)
	}
	if got := notReadyPods("w-0", map[string]string{"kube-system/ds-c": "(Pending, no Ready condition)"}, listed); !strings.Contains(got, "ds-c") || strings.Contains(got, "ds-a") {
		t.Errorf("the watch's view comes first: %q", got)
	}
	if got := notReadyPods("w-0", nil, nil); !strings.Contains(got, "not confirmed Ready: the API server gave no list") {
		t.Errorf("nothing seen: %q", got)
	}
}
