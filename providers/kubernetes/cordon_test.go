package kubernetes

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestCordonUncordon(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset(kNode("w-0", "a", true, nil))
	p := NewForClient(c, Options{})
	unschedulable := func() bool {
		n, err := c.CoreV1().Nodes().Get(ctx, "w-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n.Spec.Unschedulable
	}
	if err := p.Cordon(ctx, "w-0"); err != nil {
		t.Fatal(err)
	}
	if !unschedulable() {
		t.Error("cordon left w-0 schedulable")
	}
	if err := p.Cordon(ctx, "w-0"); err != nil { // again: nothing to do
		t.Fatal(err)
	}
	if err := p.Uncordon(ctx, "w-0"); err != nil {
		t.Fatal(err)
	}
	if unschedulable() {
		t.Error("uncordon left w-0 unschedulable")
	}
	if err := p.Cordon(ctx, "nope"); err == nil || !strings.Contains(err.Error(), "cordon node nope") {
		t.Errorf("cordon of a missing node: %v", err)
	}
}
