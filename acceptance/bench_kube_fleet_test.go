package acceptance

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"

	"github.com/mcpfleet/mcp/acceptance/k8senv"
)

// kubeFleet is a fleet of kwok nodes for the rollout benchmarks: nodes round-robin over
// pools (zones in turn within a pool), podsPerNode pods bound to each (kwok makes them
// Running and Ready), pdbs PodDisruptionBudgets over them.
type kubeFleet struct {
	nodes       int
	pools       []string
	podsPerNode int
	pdbs        int
}

// node is the i-th node's name, pool and zone.
func (f kubeFleet) node(i int) (name, pool, zone string) {
	pool = f.pools[i%len(f.pools)]
	n := i / len(f.pools)
	return fmt.Sprintf("%s-%03d", pool, n), pool, kubeBenchZones[n%len(kubeBenchZones)]
}

// hcl is a configuration of every pool with max_unavailable k, rolling out chrony's server
// (restarting chronyd: in place) and, when tuning is not "", a sysctl file whose change
// reboots the node (cordon, drain, write, reboot, verify, uncordon).
func (f kubeFleet) hcl(k int, server, tuning string) string {
	var s strings.Builder
	s.WriteString("provider \"kubernetes\" {}\n\n# Only the refresh and the rollout talk to the apiserver.\nstate {\n  backend = \"local\"\n}\n")
	for _, p := range f.pools {
		fmt.Fprintf(&s, "\npool %q {\n  node_selector   = { \"node-role.kubernetes.io/%s\" = \"\" }\n  max_unavailable = %d\n}\n", p, p, k)
	}
	fmt.Fprintf(&s, "\nconfig \"50-chrony\" {\n  pools = [%s]\n  file \"/etc/chrony.conf\" {\n", `"`+strings.Join(f.pools, `", "`)+`"`)
	fmt.Fprintf(&s, "    content   = \"server %s iburst\\n\"\n    on_change = [\"restart:chronyd.service\"]\n  }\n}\n", server)
	if tuning != "" {
		fmt.Fprintf(&s, "\nconfig \"60-tuning\" {\n  pools = [%s]\n  file \"/etc/sysctl.d/60-tuning.conf\" {\n", `"`+strings.Join(f.pools, `", "`)+`"`)
		fmt.Fprintf(&s, "    content   = \"%s\\n\"\n    on_change = [\"reboot\"]\n  }\n}\n", tuning)
	}
	return s.String()
}

// create makes the fleet with kubeBenchWorkers workers and waits until kwok has made every
// node and pod Ready and the disruption controller has counted every PDB.
func (f kubeFleet) create(b *testing.B, env *k8senv.Env, c kubernetes.Interface) {
	b.Helper()
	for _, ns := range kubeBenchNS {
		env.EnsureNamespace(b, ns)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	work := make(chan int)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for range kubeBenchWorkers {
		wg.Go(func() {
			for i := range work {
				if ctx.Err() != nil {
					continue
				}
				if err := f.createNode(ctx, c, i); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		})
	}
	for i := range f.nodes {
		work <- i
	}
	close(work)
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
	one := intstr.FromInt32(1)
	for j := range f.pdbs {
		ns := kubeBenchNS[j%len(kubeBenchNS)]
		pdb := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%d", j), Namespace: ns},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("app-%d", j)}}},
		}
		if _, err := c.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
			b.Fatalf("creating PDB %s/%s: %v", ns, pdb.Name, err)
		}
	}
	f.waitReady(b, ctx, c)
}

func (f kubeFleet) createNode(ctx context.Context, c kubernetes.Interface, i int) error {
	name, pool, zone := f.node(i)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok",
			"node-role.kubernetes.io/" + pool: "", "topology.kubernetes.io/zone": zone},
		Annotations: map[string]string{k8senv.FakeNodeAnnotation: "fake"}}}
	if _, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating node %s: %w", name, err)
	}
	for k := range f.podsPerNode {
		m := i*f.podsPerNode + k
		ns := kubeBenchNS[m%len(kubeBenchNS)]
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, k), Namespace: ns,
				Labels: map[string]string{"app": fmt.Sprintf("app-%d", m%max(f.pdbs, 1))}},
			Spec: corev1.PodSpec{
				NodeName: name,
				Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}}},
			},
		}
		if _, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod %s/%s: %w", ns, pod.Name, err)
		}
	}
	return nil
}

// waitReady waits until kwok has made every node and pod Ready, then until the disruption
// controller has counted the pods of every PDB.
func (f kubeFleet) waitReady(b *testing.B, ctx context.Context, c kubernetes.Interface) {
	b.Helper()
	count := func(list pager.ListPageFunc, ready func(runtime.Object) bool) (n int, err error) {
		pg := pager.New(list)
		pg.PageSize = 500
		err = pg.EachListItem(ctx, metav1.ListOptions{ResourceVersion: "0"}, func(obj runtime.Object) error {
			if ready(obj) {
				n++
			}
			return nil
		})
		return n, err
	}
	for {
		nodes, err := count(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().Nodes().List(ctx, o)
		}, func(o runtime.Object) bool { return k8senv.NodeReady(o.(*corev1.Node)) })
		if err != nil {
			b.Fatal(err)
		}
		pods, err := count(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().Pods(metav1.NamespaceAll).List(ctx, o)
		}, func(o runtime.Object) bool { return k8senv.PodReady(o.(*corev1.Pod)) })
		if err != nil {
			b.Fatal(err)
		}
		if nodes == f.nodes && pods == f.nodes*f.podsPerNode {
			break
		}
		select {
		case <-ctx.Done():
			b.Fatalf("only %d of %d kwok nodes and %d of %d pods Ready", nodes, f.nodes, pods, f.nodes*f.podsPerNode)
		case <-time.After(2 * time.Second):
		}
	}
	for {
		list, err := c.PolicyV1().PodDisruptionBudgets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		counted := 0
		for _, p := range list.Items {
			if p.Status.ObservedGeneration == p.Generation && p.Status.ExpectedPods > 0 {
				counted++
			}
		}
		if counted == f.pdbs {
			return
		}
		select {
		case <-ctx.Done():
			b.Fatalf("only %d of %d PDBs counted by the disruption controller", counted, f.pdbs)
		case <-time.After(time.Second):
		}
	}
}
