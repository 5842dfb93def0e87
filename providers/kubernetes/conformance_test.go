package kubernetes

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mcpfleet/mcp/agent/kagent"
	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec"
	"github.com/mcpfleet/mcp/providers"
	"github.com/mcpfleet/mcp/providers/providertest"
)

// The conformance suite against a fake clientset that plays the parts of a cluster the
// provider relies on: the eviction API's PodDisruptionBudget check and the node agent. The
// real API server runs the same suite in acceptance/.
func TestConformanceFake(t *testing.T) {
	providertest.Run(t, func(t *testing.T, f providertest.Fixture) providers.Provider {
		var templates []runtime.Object
		for _, tm := range f.Templates {
			ms := kMachineSet(tm.Name, nil, nil, providerSpec("AWSMachineProviderConfig", map[string]any{"ami": map[string]any{"id": tm.Image}}))
			ms.SetNamespace(providertest.TemplateNamespace)
			templates = append(templates, ms)
		}
		dyn, mapper := fakeTemplateClients(templates...)
		return withoutObserver{NewForClients(fakeCluster(t, f), dyn, mapper, Options{NodeTimeout: 30 * time.Second})}
	})
}

// withoutObserver is the provider without providers.ConfigObserver (its ObserveConfig
// is shadowed): the fake agents answer hand-overs without a disk, so there is nothing to
// observe. The promise runs against real agents in acceptance TestKubeProviderConformance,
// and TestObserveConfigAsksTheAgent runs the agent's own code here.
type withoutObserver struct{ *Provider }

func (withoutObserver) ObserveConfig() {}

var (
	podsR = corev1.SchemeGroupVersion.WithResource("pods")
	pdbsR = policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")
)

func fakeCluster(t *testing.T, f providertest.Fixture) *fake.Clientset {
	var objs []runtime.Object
	for _, n := range f.Nodes {
		kn := kNode(n.Name, n.Zone, n.Ready, nil)
		kn.Labels = n.Labels
		objs = append(objs, kn)
	}
	daemonSets := map[string]bool{}
	for _, p := range f.Pods {
		owner := "ReplicaSet/" + p.Labels["app"]
		if p.DaemonSet {
			owner = "DaemonSet/" + p.Labels["app"]
			if !daemonSets[p.Namespace+"/"+p.Labels["app"]] {
				daemonSets[p.Namespace+"/"+p.Labels["app"]] = true
				objs = append(objs, kDaemonSet(p.Namespace, p.Labels["app"]))
			}
		}
		objs = append(objs, kPod(p.Namespace, p.Name, p.Node, owner, p.Labels))
	}
	for _, b := range f.PDBs {
		healthy := 0
		for _, p := range f.Pods {
			if p.Namespace == b.Namespace && labels.SelectorFromSet(b.Selector).Matches(labels.Set(p.Labels)) {
				healthy++
			}
		}
		objs = append(objs, kPDB(b.Namespace, b.Name, b.Selector, intstr.FromInt32(int32(b.MinAvailable)),
			int32(healthy), int32(b.MinAvailable), int32(max(0, healthy-b.MinAvailable))))
	}
	c := fake.NewClientset(objs...)
	c.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{
		GroupVersion: "v1",
		APIResources: []metav1.APIResource{{Name: "pods/eviction", Kind: "Eviction", Group: "policy", Version: "v1"}},
	}}
	var mu sync.Mutex // the API server's eviction check and PDB update are one step
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		return true, nil, fakeEvict(c, a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction))
	})
	c.PrependWatchReactor("nodes", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := c.Tracker().Watch(a.GetResource(), a.GetNamespace())
		if node, ok := a.(k8stesting.WatchAction).GetWatchRestrictions().Fields.RequiresExactMatch("metadata.name"); ok {
			go fakeAgent(t, c, node)  // RunNodeSteps watches after handing over: answer now
			go checkAgent(t, c, node) // as RunCheck does after asking
		}
		return true, w, err
	})
	return c
}

// fakeEvict is the API server's eviction: refused (429) while a PDB selecting the pod
// allows no disruption, else the pod goes and the PDBs count it.
func fakeEvict(c *fake.Clientset, ev *policyv1.Eviction) error {
	obj, err := c.Tracker().Get(podsR, ev.Namespace, ev.Name)
	if err != nil {
		return err
	}
	pod := obj.(*corev1.Pod)
	l, err := c.Tracker().List(pdbsR, policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), ev.Namespace)
	if err != nil {
		return err
	}
	var hit []*policyv1.PodDisruptionBudget
	for i := range l.(*policyv1.PodDisruptionBudgetList).Items {
		b := &l.(*policyv1.PodDisruptionBudgetList).Items[i]
		if sel, _ := metav1.LabelSelectorAsSelector(b.Spec.Selector); sel.Matches(labels.Set(pod.Labels)) {
			if b.Status.DisruptionsAllowed <= 0 {
				return tooManyRequests(b.Name)
			}
			hit = append(hit, b)
		}
	}
	for _, b := range hit {
		b.Status.DisruptionsAllowed--
		b.Status.CurrentHealthy--
		if err := c.Tracker().Update(pdbsR, b, b.Namespace); err != nil {
			return err
		}
	}
	return c.Tracker().Delete(podsR, pod.Namespace, pod.Name)
}

// fakeAgent answers the node's hand-over: Working, each step, Done on the desired config.
func fakeAgent(t *testing.T, c *fake.Clientset, node string) {
	nodes := c.CoreV1().Nodes()
	report := func(set map[string]string) bool {
		n, err := nodes.Get(context.Background(), node, metav1.GetOptions{})
		if err == nil {
			for k, v := range set {
				n.Annotations[k] = v
			}
			_, err = nodes.Update(context.Background(), n, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Errorf("agent on %s: %v", node, err)
		}
		return err == nil
	}
	n, err := nodes.Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Errorf("agent on %s: %v", node, err)
		return
	}
	h, ok, err := protocol.ReadHandover(n.Annotations)
	if err != nil || !ok || protocol.ReadReport(n.Annotations).ObservedUpdateID == h.UpdateID {
		return
	}
	base := map[string]string{protocol.ObservedUpdateID: h.UpdateID, protocol.State: model.StateWorking, protocol.Progress: "0"}
	if !report(base) {
		return
	}
	for i := range h.Steps {
		base[protocol.Progress] = strconv.Itoa(i + 1)
		if !report(base) {
			return
		}
	}
	base[protocol.State], base[protocol.CurrentConfig] = model.StateDone, h.Desired
	report(base)
}

// checkAgent answers a command check waiting on the node with the agent's own code
// (kagent's Check: the command looked up in the Secret the provider published, and run).
func checkAgent(t *testing.T, c *fake.Clientset, node string) {
	n, err := c.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Errorf("agent on %s: %v", node, err)
		return
	}
	a := kagent.New(c.CoreV1().Nodes(), node, t.TempDir(), "", &nodeexec.RecordingHost{})
	a.Checks = &kagent.Checker{Secrets: c.CoreV1().Secrets(DefaultNamespace), Namespace: DefaultNamespace}
	a.Check(context.Background(), n)
}
