package acceptance

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// podReplacer puts every evicted pod of the fleet back, standing in for the ReplicaSet
// behind it and the scheduler, neither of which the control plane of acceptance/k8senv
// runs: the moment a pod of the fleet's namespaces is being deleted (or gone without that
// being seen), it creates a pod like it — same namespace, labels (so the same
// PodDisruptionBudget) and spec — bound, as the fleet's pods are, to the schedulable node
// with the fewest live pods (kube-scheduler's default scoring, least allocated, where every
// pod requests the same), the first such node after the last one chosen. kwok then makes
// it Running and Ready, and the disruption controller counts it. A replacement may land on
// a node not yet drained, and be evicted again: the run's evictions per pod count that.
type podReplacer struct {
	client kubernetes.Interface
	reqs   requestCounter
	b      *testing.B

	mu       sync.Mutex
	live     map[string]string // namespace/name → node, of the pods bound and not being deleted
	perNode  map[string]int    // node → its live pods
	nodes    []string          // every node, in name order
	cordoned map[string]bool
	next     int
	// line: a replacement made in this run → how many evictions of its line led to it.
	line map[string]int
	// made: replacements made in this run by the evictions of their line.
	made map[int]int
}

// startReplacer starts kr.replacer once, with watches of the pods and the nodes.
func (kr *kubeRollout) startReplacer(b *testing.B) {
	if kr.replacer != nil {
		return
	}
	rp := &podReplacer{b: b, live: map[string]string{}, perNode: map[string]int{}, cordoned: map[string]bool{},
		line: map[string]int{}, made: map[int]int{}}
	for i := range kr.fleet.nodes {
		name, _, _ := kr.fleet.node(i)
		rp.nodes = append(rp.nodes, name)
	}
	slices.Sort(rp.nodes)
	rc := rest.CopyConfig(kr.env.RESTConfig)
	rc.QPS, rc.Burst = 5000, 10000
	c, err := countedClient(rc, &rp.reqs)
	if err != nil {
		b.Fatal(err)
	}
	rp.client = c
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	pods := cache.NewListWatchFromClient(c.CoreV1().RESTClient(), "pods", metav1.NamespaceAll, fields.Everything())
	_, pc := cache.NewInformerWithOptions(cache.InformerOptions{ListerWatcher: pods, ObjectType: &corev1.Pod{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { rp.pod(ctx, o, false) },
			UpdateFunc: func(_, o any) { rp.pod(ctx, o, false) },
			DeleteFunc: func(o any) {
				if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
					o = t.Obj
				}
				rp.pod(ctx, o, true)
			},
		}})
	nodes := cache.NewListWatchFromClient(c.CoreV1().RESTClient(), "nodes", metav1.NamespaceAll, fields.Everything())
	_, nc := cache.NewInformerWithOptions(cache.InformerOptions{ListerWatcher: nodes, ObjectType: &corev1.Node{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    rp.node,
			UpdateFunc: func(_, o any) { rp.node(o) },
		}})
	go pc.RunWithContext(ctx)
	go nc.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), pc.HasSynced, nc.HasSynced) {
		b.Fatal("the pod replacer's watches did not sync")
	}
	kr.replacer = rp
}

func (rp *podReplacer) node(o any) {
	n, ok := o.(*corev1.Node)
	if !ok {
		return
	}
	rp.mu.Lock()
	rp.cordoned[n.Name] = n.Spec.Unschedulable
	rp.mu.Unlock()
}

// pod follows one pod's event; a fleet pod that stops being live is replaced.
func (rp *podReplacer) pod(ctx context.Context, o any, deleted bool) {
	p, ok := o.(*corev1.Pod)
	if !ok || p.Spec.NodeName == "" || !slices.Contains(kubeBenchNS, p.Namespace) {
		return
	}
	key := p.Namespace + "/" + p.Name
	alive := !deleted && p.DeletionTimestamp == nil
	rp.mu.Lock()
	defer rp.mu.Unlock()
	node, was := rp.live[key]
	switch {
	case alive && !was:
		rp.live[key] = p.Spec.NodeName
		rp.perNode[p.Spec.NodeName]++
	case !alive && was:
		delete(rp.live, key)
		rp.perNode[node]--
		to := rp.placeLocked()
		n := rp.line[key] + 1
		delete(rp.line, key)
		go rp.replace(ctx, p, to, n)
	}
}

// placeLocked is the schedulable node with the fewest live pods, the first such after the
// last one chosen, so that replacements made together spread over nodes as empty.
func (rp *podReplacer) placeLocked() string {
	best := -1
	for i := range rp.nodes {
		j := (rp.next + i) % len(rp.nodes)
		n := rp.nodes[j]
		if rp.cordoned[n] {
			continue
		}
		if best < 0 || rp.perNode[n] < rp.perNode[rp.nodes[best]] {
			best = j
		}
	}
	if best < 0 {
		best = rp.next % len(rp.nodes) // every node cordoned: a pod stays Pending-like, bound anyway
	}
	rp.next = best + 1
	return rp.nodes[best]
}

// replace creates old's replacement on node, the n-th of its line in this run.
func (rp *podReplacer) replace(ctx context.Context, old *corev1.Pod, node string, n int) {
	spec := *old.Spec.DeepCopy()
	spec.NodeName = node
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: old.Labels["app"] + "-", Namespace: old.Namespace,
		Labels: old.Labels}, Spec: spec}
	var made *corev1.Pod
	var err error
	for try := 0; try < 10; try++ {
		if made, err = rp.client.CoreV1().Pods(old.Namespace).Create(ctx, p, metav1.CreateOptions{}); err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		if ctx.Err() == nil {
			rp.b.Errorf("putting back %s/%s on %s: %v", old.Namespace, old.Name, node, err)
		}
		return
	}
	rp.mu.Lock()
	rp.line[made.Namespace+"/"+made.Name] = n
	rp.made[n]++
	rp.mu.Unlock()
}

// takeStats returns the replacements made since the last call, by the evictions of their
// line, and starts counting anew.
func (rp *podReplacer) takeStats() map[int]int {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	m := rp.made
	rp.made, rp.line = map[int]int{}, map[string]int{}
	return m
}

// waitLive waits until want pods are live (bound, not being deleted), or fails.
func (rp *podReplacer) waitLive(b *testing.B, want int) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		rp.mu.Lock()
		n := len(rp.live)
		rp.mu.Unlock()
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of the fleet's %d pods live 2 minutes after the rollout", n, want)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
