package acceptance

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/mcpfleet/mcp/acceptance/k8senv"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
	"github.com/mcpfleet/mcp/providers/kubernetes"
	"github.com/mcpfleet/mcp/providers/providertest"
)

// TestKubeProviderConformance runs the provider conformance suite, which the local provider
// passes too, against the Kubernetes provider on a real apiserver: the disruption
// controller's PDB status, the eviction API's refusals, and real agents answering the
// hand-over and running the command checks apply published.
//
// One control plane of its own for the suite's promises, one after another, each fleet
// removed before the next is made: the fixtures name their Nodes and namespaces (w-0,
// demo, mcp-system), and the template promises install CRDs and MachineSets that every
// refresh on the cluster would list.
func TestKubeProviderConformance(t *testing.T) {
	waiting(t)
	bin := mcpBinary(t)
	env := k8senv.Start(t, k8senv.Options{})
	providertest.Run(t, func(t *testing.T, f providertest.Fixture) providers.Provider {
		t.Cleanup(func() { removeFixture(t, env, f) }) // after the agents stop
		for _, n := range f.Nodes {
			if n.Ready {
				env.AddNode(t, n.Name, n.Labels)
			} else {
				addNotReadyNode(t, env, n.Name, n.Labels)
			}
		}
		for _, p := range f.Pods {
			env.AddPod(t, p.Namespace, p.Name, p.Node, p.Labels, p.DaemonSet)
		}
		for _, b := range f.PDBs {
			env.AddPDB(t, b.Namespace, b.Name, b.Selector, b.MinAvailable)
			want := 0
			for _, p := range f.Pods {
				if p.Namespace == b.Namespace && matches(b.Selector, p.Labels) {
					want++
				}
			}
			env.WaitPDB(t, b.Namespace, b.Name, func(p *policyv1.PodDisruptionBudget) bool {
				return int(p.Status.CurrentHealthy) == want
			})
		}
		env.EnsureNamespace(t, kubernetes.DefaultNamespace) // where the command checks' Secret goes
		env.EnsureNamespace(t, providertest.Namespace)      // the user-data Secrets'
		addTemplates(t, env, f.Templates)
		p, err := kubernetes.New(env.RESTConfig, kubernetes.Options{})
		if err != nil {
			t.Fatal(err)
		}
		store := newRenderedStore(t)
		c := &kubeCluster{env: env, bin: bin, server: store.url, kc: map[string]string{"mcp-agent": env.Kubeconfig},
			agents: map[string]*kubeAgent{}}
		for _, n := range f.Nodes {
			c.startAgent(t, n.Name)
		}
		return publishing{Provider: p, store: store}
	})
}

// removeFixture deletes what a promise's fixture made, and what the promise wrote, so the
// next one finds the cluster as new: its Nodes, its namespaces' pods, their owners and
// PDBs, the Secrets of mcp-system (command checks, user data) and the MachineSets. It
// waits until the Nodes and pods are gone (their names come back in the next fixture).
func removeFixture(t *testing.T, env *k8senv.Env, f providertest.Fixture) {
	ctx := context.Background()
	now := metav1.DeleteOptions{GracePeriodSeconds: new(int64)}
	all := metav1.ListOptions{}
	cs := env.Client
	for _, n := range f.Nodes {
		if err := cs.CoreV1().Nodes().Delete(ctx, n.Name, now); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("removing node %s: %v", n.Name, err)
		}
	}
	namespaces := map[string]bool{}
	for _, p := range f.Pods {
		namespaces[p.Namespace] = true
	}
	for ns := range namespaces {
		cs.CoreV1().Pods(ns).DeleteCollection(ctx, now, all)
		cs.AppsV1().ReplicaSets(ns).DeleteCollection(ctx, now, all)
		cs.AppsV1().DaemonSets(ns).DeleteCollection(ctx, now, all)
		cs.PolicyV1().PodDisruptionBudgets(ns).DeleteCollection(ctx, now, all)
	}
	cs.CoreV1().Secrets(providertest.Namespace).DeleteCollection(ctx, now, all)
	if len(f.Templates) > 0 {
		if dyn, err := dynamic.NewForConfig(env.RESTConfig); err == nil {
			dyn.Resource(machineSets).Namespace(providertest.TemplateNamespace).DeleteCollection(ctx, now, all)
		}
	}
	waitUntil(t, 60*time.Second, func() bool {
		nodes, err1 := cs.CoreV1().Nodes().List(ctx, all)
		pods, err2 := cs.CoreV1().Pods("").List(ctx, all)
		return err1 == nil && err2 == nil && len(nodes.Items) == 0 && len(pods.Items) == 0
	}, func() string { return "the fixture's nodes and pods were not gone after 60s" })
}

// addNotReadyNode creates a Node that kwok does not manage, and reports it NotReady, as
// a node whose kubelet stopped would be (no node lifecycle controller runs to change it).
func addNotReadyNode(t *testing.T, env *k8senv.Env, name string, labels map[string]string) {
	t.Helper()
	ctx := context.Background()
	n, err := env.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse,
		Reason: "KubeletNotReady", Message: "the conformance suite's NotReady node", LastHeartbeatTime: metav1.Now()}}
	if _, err := env.Client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// addTemplates installs the machine-template CRDs and creates the fixture's AWS
// MachineSets (none: nothing).
func addTemplates(t *testing.T, env *k8senv.Env, templates []providertest.FixtureTemplate) {
	t.Helper()
	if len(templates) == 0 {
		return
	}
	installTemplateCRDs(t, env)
	env.EnsureNamespace(t, providertest.TemplateNamespace)
	dyn, err := dynamic.NewForConfig(env.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, tm := range templates {
		u := awsMachineSet(tm.Name, nil, nil, "worker-user-data", tm.Image)
		u.SetNamespace(providertest.TemplateNamespace)
		if _, err := dyn.Resource(machineSets).Namespace(providertest.TemplateNamespace).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating MachineSet %s: %v", tm.Name, err)
		}
	}
}

func matches(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

// publishing stores the rendered configs a hand-over or an observation names before the
// provider asks the agent, as the engine does (it publishes them to the state the boot
// server follows). It keeps
// the provider's health gates (kubernetes.Provider is a providers.HealthGater).
type publishing struct {
	*kubernetes.Provider
	store *renderedStore
}

func (p publishing) RunNodeSteps(ctx context.Context, node string, from, target *model.Rendered, steps []model.Step, done func(model.Step)) error {
	p.store.put(from)
	p.store.put(target)
	return p.Provider.RunNodeSteps(ctx, node, from, target, steps, done)
}

// ObserveConfig publishes target before the provider asks an agent about it, as the
// engine's refresh does (state.RenderedPublisher): the agent fetches it from the store.
func (p publishing) ObserveConfig(ctx context.Context, node string, target *model.Rendered) (model.Observation, error) {
	p.store.put(target)
	return p.Provider.ObserveConfig(ctx, node, target)
}

// renderedStore serves /rendered/<name> from configs put into it.
type renderedStore struct {
	mu  sync.Mutex
	by  map[string][]byte
	url string
}

func newRenderedStore(t *testing.T) *renderedStore {
	s := &renderedStore{by: map[string][]byte{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		b, ok := s.by[strings.TrimPrefix(r.URL.Path, "/rendered/")]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func (s *renderedStore) put(r *model.Rendered) {
	if r == nil {
		return
	}
	b, _ := json.Marshal(r)
	s.mu.Lock()
	s.by[r.Name] = b
	s.mu.Unlock()
}
