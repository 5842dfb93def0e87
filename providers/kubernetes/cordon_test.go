package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
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

// The cordon and uncordon are kubectl's: a strategic merge patch of spec.unschedulable
// alone, and no request when the node is already so.
func TestCordonPatchIsKubectls(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset(kNode("w-0", "a", true, nil))
	var patches []string
	c.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pa := a.(k8stesting.PatchAction)
		patches = append(patches, fmt.Sprintf("%s %s", pa.GetPatchType(), pa.GetPatch()))
		return false, nil, nil
	})
	p := NewForClient(c, Options{})
	for _, step := range []func(context.Context, string) error{p.Cordon, p.Cordon, p.Uncordon, p.Uncordon} {
		if err := step(ctx, "w-0"); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		`application/strategic-merge-patch+json {"spec":{"unschedulable":true}}`,
		`application/strategic-merge-patch+json {"spec":{"unschedulable":null}}`,
	}
	if !slices.Equal(patches, want) {
		t.Errorf("patches:\n%s\nwant\n%s", strings.Join(patches, "\n"), strings.Join(want, "\n"))
	}
}

// cordonPatch is what kubectl computes: the two-way strategic merge patch between the Node
// before and after (k8s.io/kubectl/pkg/drain's CordonHelper), whatever else the Node holds.
func TestCordonPatchIsTheTwoWayMergePatch(t *testing.T) {
	for _, desired := range []bool{true, false} {
		before := kNode("w-0", "a", true, map[string]string{"mcp.example/state": "Done"})
		before.Spec.Unschedulable = !desired
		before.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}
		after := before.DeepCopy()
		after.Spec.Unschedulable = desired
		old, err := json.Marshal(before)
		if err != nil {
			t.Fatal(err)
		}
		cur, err := json.Marshal(after)
		if err != nil {
			t.Fatal(err)
		}
		want, err := strategicpatch.CreateTwoWayMergePatch(old, cur, &corev1.Node{})
		if err != nil {
			t.Fatal(err)
		}
		if got := cordonPatch(desired); string(got) != string(want) {
			t.Errorf("cordon to %v: patch %s, kubectl's %s", desired, got, want)
		}
	}
}
