package acceptance

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mcpfleet/mcp/acceptance/k8senv"
	"github.com/mcpfleet/mcp/deploy"
	"github.com/mcpfleet/mcp/kubeapi/protocol"
)

// TestKubeAgentPolicy: deploy/'s ValidatingAdmissionPolicy on the real apiserver. An agent
// whose token is bound to its pod on node A may patch its own report annotations on A; it
// is refused, with the policy's message, on node B, for a label, a taint,
// spec.unschedulable, an engine annotation, and with a token bound to no pod.
func TestKubeAgentPolicy(t *testing.T) {
	waiting(t)
	c := newFleet(t, sharedKube(t))
	env := c.env
	waitPolicyTypeChecked(t, env, "mcp-agent-own-node")
	nodeA, nodeB := c.name("node-a"), c.name("node-b")
	for _, n := range []string{"node-a", "node-b"} {
		c.addNode(t, n, "worker", "")
	}
	agentA := clientFrom(t, env.KubeconfigForPod(t, "mcp-system", "mcp-agent", nodeA, nil))

	// The bound token carries the node: the apiserver says so.
	ssr, err := agentA.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ssr.Status.UserInfo.Extra["authentication.kubernetes.io/node-name"]; len(got) != 1 || got[0] != nodeA {
		t.Fatalf("the pod-bound token's user %+v: want extra authentication.kubernetes.io/node-name=[%s]", ssr.Status.UserInfo, nodeA)
	}

	patch := func(c kubernetes.Interface, node string, body map[string]any) error {
		b, _ := json.Marshal(body)
		_, err := c.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, b, metav1.PatchOptions{})
		return err
	}
	ann := func(k, v string) map[string]any {
		return map[string]any{"metadata": map[string]any{"annotations": map[string]any{k: v}}}
	}
	// A policy takes effect a moment after it is created: wait until node B is refused.
	deadline := time.Now().Add(30 * time.Second)
	for err := patch(agentA, nodeB, ann(protocol.State, "Done")); err == nil; err = patch(agentA, nodeB, ann(protocol.State, "Done")) {
		if time.Now().After(deadline) {
			t.Fatal("agent of node-a may still patch node-b after 30s: the policy is not in force")
		}
		time.Sleep(200 * time.Millisecond)
	}

	if err := patch(agentA, nodeA, map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		protocol.State: "Done", protocol.CurrentConfig: "rendered-worker-0123", protocol.Progress: "3"}}}); err != nil {
		t.Errorf("agent of node-a patching its own report annotations: %v", err)
	}
	if err := patch(agentA, nodeA, ann(protocol.Reason, "")); err != nil {
		t.Errorf("agent of node-a clearing its reason: %v", err)
	}

	unbound := clientFrom(t, env.KubeconfigFor(t, "mcp-system", "mcp-agent"))
	refused := []struct {
		what   string
		client kubernetes.Interface
		node   string
		body   map[string]any
		msg    string
	}{
		{"another node", agentA, nodeB, ann(protocol.State, "Done"), "mcp-agent on node " + nodeA + " may change only its own Node, not " + nodeB},
		{"a label", agentA, nodeA, map[string]any{"metadata": map[string]any{"labels": map[string]any{"node-role.kubernetes.io/infra": ""}}}, "mcp-agent may not change a Node's labels"},
		{"a taint", agentA, nodeA, map[string]any{"spec": map[string]any{"taints": []any{map[string]any{"key": "x", "effect": "NoSchedule"}}}}, "mcp-agent may not change a Node's spec"},
		{"spec.unschedulable", agentA, nodeA, map[string]any{"spec": map[string]any{"unschedulable": true}}, "mcp-agent may not change a Node's spec"},
		{"an engine annotation", agentA, nodeA, ann(protocol.UpdateID, "u-1"), "mcp-agent may change only its report annotations (mcpfleet.io/state, ...), not " + protocol.UpdateID},
		{"another annotation", agentA, nodeA, ann("example.com/x", "y"), "not example.com/x"},
		{"a token bound to no pod", unbound, nodeA, ann(protocol.State, "Done"), "mcp-agent: the token names no node"},
	}
	for _, r := range refused {
		err := patch(r.client, r.node, r.body)
		if err == nil {
			t.Errorf("%s: allowed, want refused by the policy", r.what)
			continue
		}
		if !strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'mcp-agent-own-node'") || !strings.Contains(err.Error(), r.msg) {
			t.Errorf("%s: refused with %q, want the policy's %q", r.what, err, r.msg)
		}
	}
	// Nothing refused was written.
	n, err := env.Client.CoreV1().Nodes().Get(context.Background(), nodeA, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, label := n.Labels["node-role.kubernetes.io/infra"]; n.Spec.Unschedulable || slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == "x" }) || label || n.Annotations[protocol.UpdateID] != "" {
		t.Errorf("node-a changed by a refused patch: %+v %+v", n.Spec, n.Annotations)
	}
	if n.Annotations[protocol.State] != "Done" || n.Annotations[protocol.CurrentConfig] != "rendered-worker-0123" {
		t.Errorf("node-a annotations %v: want the allowed report", n.Annotations)
	}
	// An admin is not held by it (the match condition names the agent alone).
	if err := patch(env.Client, nodeB, map[string]any{"spec": map[string]any{"unschedulable": true}}); err != nil {
		t.Errorf("admin cordoning node-b: %v", err)
	}
}

// waitPolicyTypeChecked waits until the apiserver has type-checked the policy and fails on
// any warning (a misspelt field in an expression is a warning, not an error, at creation).
func waitPolicyTypeChecked(t *testing.T, env *k8senv.Env, name string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		p, err := env.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if tc := p.Status.TypeChecking; tc != nil {
			for _, w := range tc.ExpressionWarnings {
				t.Errorf("policy %s: %s: %s", name, w.FieldRef, w.Warning)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("policy %s not type-checked after 30s: %+v", name, p.Status)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func clientFrom(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(fmt.Errorf("client from %s: %w", kubeconfig, err))
	}
	return c
}

// TestKubeDeployRenderedApplies: the kustomization's render (deploy.Render, what `kubectl
// kustomize deploy/` gives) applies to the real apiserver by server-side apply, every
// object, and its workloads name the image by digest. On the shared plane, where deploy/'s
// manifests are: the render is the same objects, applied over them as an upgrade would.
func TestKubeDeployRenderedApplies(t *testing.T) {
	waiting(t)
	env := sharedKube(t)
	objs, err := deploy.Render()
	if err != nil {
		t.Fatal(err)
	}
	client, err := objectClients(env)
	if err != nil {
		t.Fatal(err)
	}
	_, images, _ := deploy.Kustomization()
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: o}
		gvk := u.GroupVersionKind()
		ri, err := client(u)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ri.Apply(context.Background(), u.GetName(), u, metav1.ApplyOptions{FieldManager: "mcp-install", Force: true})
		if err != nil {
			t.Fatalf("server-side apply of %s %s: %v", gvk.Kind, u.GetName(), err)
		}
		cs, _, _ := unstructured.NestedSlice(got.Object, "spec", "template", "spec", "containers")
		for _, c := range cs {
			if img := c.(map[string]any)["image"]; img != images[0].Ref() {
				t.Errorf("%s %s: image %v, want %s", gvk.Kind, u.GetName(), img, images[0].Ref())
			}
		}
	}
}
