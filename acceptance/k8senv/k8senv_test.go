package k8senv_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mcpfleet/mcp/acceptance/k8senv"
)

// TestControlPlane: the real plane starts; kwok makes two nodes Ready and their pods Running
// and Ready; the real disruption controller computes a PDB (minAvailable 2 of 2 →
// disruptionsAllowed 0) and the apiserver refuses an eviction with 429; RBAC denies an
// impersonated nobody and a service-account token authenticates.
func TestControlPlane(t *testing.T) {
	env := k8senv.Start(t, k8senv.Options{})
	t.Logf("control plane up in %s (binaries %s)", env.StartupTime.Round(1e6), env.BinDir)
	ctx := context.Background()

	for _, n := range []string{"worker-0", "worker-1"} {
		node := env.AddNode(t, n, map[string]string{"node-role.kubernetes.io/worker": ""})
		if !k8senv.NodeReady(node) {
			t.Fatalf("node %s not Ready", n)
		}
	}
	web := map[string]string{"app": "web"}
	env.AddPod(t, "demo", "web-0", "worker-0", web, false)
	env.AddPod(t, "demo", "web-1", "worker-1", web, false)
	env.AddPod(t, "demo", "agent-0", "worker-0", map[string]string{"app": "agent"}, true)
	env.AddPDB(t, "demo", "web-pdb", web, 2)
	pdb := env.WaitPDB(t, "demo", "web-pdb", func(p *policyv1.PodDisruptionBudget) bool {
		return p.Status.CurrentHealthy == 2 && p.Status.ExpectedPods == 2
	})
	if pdb.Status.DisruptionsAllowed != 0 || pdb.Status.DesiredHealthy != 2 {
		t.Fatalf("PDB status = %+v, want disruptionsAllowed 0, desiredHealthy 2", pdb.Status)
	}

	err := env.Client.PolicyV1().Evictions("demo").Evict(ctx, &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "demo"},
	})
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Code != http.StatusTooManyRequests {
		t.Fatalf("eviction of demo/web-0 under a PDB with 0 disruptions allowed: got %v, want HTTP 429", err)
	}
	t.Logf("eviction refused as expected: %v %v", err, se.ErrStatus.Details)

	// An eviction no PDB covers is accepted, and kwok (playing the kubelet) deletes the pod.
	if err := env.Client.PolicyV1().Evictions("demo").Evict(ctx, &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-0", Namespace: "demo"},
	}); err != nil {
		t.Fatalf("evicting demo/agent-0: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := env.Client.CoreV1().Pods("demo").Get(ctx, "agent-0", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("evicted pod demo/agent-0 still there after 30s (err %v): kwok did not delete it", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// RBAC is on: an impersonated user with no bindings may not list nodes.
	_, err = env.ClientAs(t, "nobody").CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("listing nodes as nobody: got %v, want Forbidden", err)
	}
	// A service-account kubeconfig authenticates (Forbidden, not Unauthorized) as that account.
	kc := env.KubeconfigFor(t, "mcp-system", "mcp")
	rc, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	sa := kubernetes.NewForConfigOrDie(rc)
	_, err = sa.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("listing nodes as mcp-system/mcp: got %v, want Forbidden", err)
	}
	if want := "system:serviceaccount:mcp-system:mcp"; !strings.Contains(err.Error(), want) {
		t.Fatalf("forbidden error %q does not name %s", err, want)
	}

	if rss, err := env.RSS(); err == nil {
		var total uint64
		for name, b := range rss {
			t.Logf("RSS %-24s %4d MiB", name, b>>20)
			total += b
		}
		t.Logf("RSS total %d MiB", total>>20)
	}
}
