package k8senv

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// waitTimeout bounds each wait of the helpers below.
const waitTimeout = 60 * time.Second

// DaemonSetName is the DaemonSet that owns the pods AddPod creates with ownerDaemonSet.
const DaemonSetName = "k8senv-daemon"

// ClientAs returns a clientset that impersonates user with groups (system:authenticated is
// added by the apiserver), for RBAC checks.
func (e *Env) ClientAs(t testing.TB, user string, groups ...string) kubernetes.Interface {
	t.Helper()
	rc := rest.CopyConfig(e.RESTConfig)
	rc.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// KubeconfigFor writes a kubeconfig that authenticates as the ServiceAccount ns/name with a
// token from the TokenRequest API (valid one hour) and returns its path, so a subprocess
// can run as that service account. The namespace and service account are created if absent.
func (e *Env) KubeconfigFor(t testing.TB, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	e.EnsureNamespace(t, ns)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if _, err := e.Client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating service account %s/%s: %v", ns, name, err)
	}
	secs := int64(3600)
	tr, err := e.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for service account %s/%s: %v", ns, name, err)
	}
	cfg := kubeconfig(e.RESTConfig.Host, e.pki.caPEM, &clientcmdapi.AuthInfo{Token: tr.Status.Token})
	cfg.Contexts["k8senv"].Namespace = ns
	path := filepath.Join(t.TempDir(), fmt.Sprintf("sa-%s-%s.kubeconfig", ns, name))
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// KubeconfigForPod writes a kubeconfig that authenticates as the ServiceAccount ns/sa with
// a token bound to a pod of that service account on node, as a pod's projected token is:
// the API server adds the node to the user (extra authentication.kubernetes.io/node-name),
// and the token dies with the pod. The pod, named SA-NODE, is created bound to the node
// (no scheduler), owned by owner when given (a DaemonSet, so that a drain leaves it), and
// made Running by kwok. The service account must exist.
func (e *Env) KubeconfigForPod(t testing.TB, ns, sa, node string, owner *metav1.OwnerReference) string {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: sa + "-" + node, Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName:           node,
			ServiceAccountName: sa,
			Containers:         []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	if owner != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	got, err := e.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s/%s: %v", ns, pod.Name, err)
	}
	secs := int64(3600)
	tr, err := e.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs,
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: got.Name, UID: got.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for %s/%s bound to pod %s: %v", ns, sa, got.Name, err)
	}
	cfg := kubeconfig(e.RESTConfig.Host, e.pki.caPEM, &clientcmdapi.AuthInfo{Token: tr.Status.Token})
	cfg.Contexts["k8senv"].Namespace = ns
	path := filepath.Join(t.TempDir(), fmt.Sprintf("pod-%s-%s-%s.kubeconfig", ns, sa, node))
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// EnsureNamespace creates ns if it does not exist and waits for its default service account
// (needed to admit pods, when the serviceaccount controller runs).
func (e *Env) EnsureNamespace(t testing.TB, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	_, err := e.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
	if err := e.waitServiceAccount(ctx, ns, "default"); err != nil {
		t.Fatalf("waiting for service account %s/default: %v", ns, err)
	}
}

// AddNode creates a Node managed by kwok (annotated kwok.x-k8s.io/node=fake) with labels
// and waits until kwok has made it Ready.
func (e *Env) AddNode(t testing.TB, name string, labels map[string]string) *corev1.Node {
	t.Helper()
	l := map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok"}
	maps.Copy(l, labels)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Labels:      l,
		Annotations: map[string]string{FakeNodeAnnotation: "fake"},
	}}
	ctx := context.Background()
	if _, err := e.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating node %s: %v", name, err)
	}
	var got *corev1.Node
	e.waitFor(t, "node "+name+" Ready", func(ctx context.Context) (bool, error) {
		n, err := e.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		got = n
		return err == nil && NodeReady(n), err
	})
	return got
}

// AddPod creates a pod bound to node (spec.nodeName set, no scheduler involved) and waits
// until kwok has made it Running and Ready. Its controller is a real object, so kubectl's
// drain needs no Force: the namespace's DaemonSet k8senv-daemon when ownerDaemonSet, else a
// ReplicaSet of one replica named like the pod (so a percentage PDB also finds its scale).
// The owners are never reconciled: no replicaset or daemonset controller runs.
func (e *Env) AddPod(t testing.TB, ns, name, node string, labels map[string]string, ownerDaemonSet bool) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	e.EnsureNamespace(t, ns)
	owner := e.ownerFor(t, ns, name, ownerDaemonSet)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	if _, err := e.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s/%s: %v", ns, name, err)
	}
	var got *corev1.Pod
	e.waitFor(t, fmt.Sprintf("pod %s/%s Running and Ready on %s", ns, name, node), func(ctx context.Context) (bool, error) {
		p, err := e.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		got = p
		return err == nil && PodReady(p), err
	})
	return got
}

// ownerFor creates (or finds) the pod's controller and returns the owner reference to it.
func (e *Env) ownerFor(t testing.TB, ns, pod string, daemonSet bool) metav1.OwnerReference {
	t.Helper()
	ctx := context.Background()
	yes := true
	if daemonSet {
		sel := map[string]string{"k8senv/daemonset": DaemonSetName}
		ds := &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: DaemonSetName, Namespace: ns},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: sel},
				Template: podTemplate(sel),
			},
		}
		got, err := e.Client.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			got, err = e.Client.AppsV1().DaemonSets(ns).Get(ctx, DaemonSetName, metav1.GetOptions{})
		}
		if err != nil {
			t.Fatalf("creating daemonset %s/%s: %v", ns, DaemonSetName, err)
		}
		return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: got.Name, UID: got.UID, Controller: &yes, BlockOwnerDeletion: &yes}
	}
	one := int32(1)
	sel := map[string]string{"k8senv/replicaset": pod}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: podTemplate(sel),
		},
	}
	got, err := e.Client.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating replicaset %s/%s: %v", ns, pod, err)
	}
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: got.Name, UID: got.UID, Controller: &yes, BlockOwnerDeletion: &yes}
}

func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}},
	}
}

// AddPDB creates a PodDisruptionBudget with minAvailable over selector and waits until the
// disruption controller has observed it (status.observedGeneration == generation). Its
// counts follow the pods' readiness; wait for the numbers a test needs with WaitPDB.
func (e *Env) AddPDB(t testing.TB, ns, name string, selector map[string]string, minAvailable int) *policyv1.PodDisruptionBudget {
	t.Helper()
	e.EnsureNamespace(t, ns)
	minAv := intstr.FromInt(minAvailable)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &minAv,
			Selector:     &metav1.LabelSelector{MatchLabels: selector},
		},
	}
	if _, err := e.Client.PolicyV1().PodDisruptionBudgets(ns).Create(context.Background(), pdb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PodDisruptionBudget %s/%s: %v", ns, name, err)
	}
	return e.WaitPDB(t, ns, name, func(p *policyv1.PodDisruptionBudget) bool { return true })
}

// WaitPDB waits until the disruption controller has observed the PDB's current generation
// and ok accepts its status; it returns the PDB.
func (e *Env) WaitPDB(t testing.TB, ns, name string, ok func(*policyv1.PodDisruptionBudget) bool) *policyv1.PodDisruptionBudget {
	t.Helper()
	var got *policyv1.PodDisruptionBudget
	e.waitFor(t, fmt.Sprintf("PodDisruptionBudget %s/%s status", ns, name), func(ctx context.Context) (bool, error) {
		p, err := e.Client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = p
		return p.Status.ObservedGeneration == p.Generation && ok(p), nil
	})
	return got
}

// waitFor polls cond every 100ms for up to waitTimeout; on timeout it fails the test naming
// what, with the last observed object.
func (e *Env) waitFor(t testing.TB, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var last error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil && !apierrors.IsNotFound(err) {
			last = err
		}
		return ok, nil
	})
	if err != nil {
		if aerr := e.alive(); aerr != nil {
			t.Fatalf("k8senv: waiting for %s: %v", what, aerr)
		}
		t.Fatalf("k8senv: waiting for %s: %v (last error: %v)", what, err, last)
	}
}

// NodeReady reports whether the node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// PodReady reports whether the pod is Running and its Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
