package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
)

// TestRefreshFleetSelector: with fleet_selector, the fleet is the Nodes it selects and the
// pods bound to them, asked of the API server as a label selector; every PDB stays (a
// budget counts its pods on any node).
func TestRefreshFleetSelector(t *testing.T) {
	blue, green := map[string]string{"fleet": "blue"}, map[string]string{"fleet": "green"}
	a, b, c := kNode("a-0", "a", true, nil), kNode("b-0", "a", true, nil), kNode("c-0", "a", true, nil)
	a.Labels, b.Labels = blue, green
	cs := fake.NewClientset(a, b, c,
		kPod("demo", "web-a", "a-0", "", nil), kPod("demo", "web-b", "b-0", "", nil), kPod("demo", "web-c", "c-0", "", nil),
		kPDB("demo", "web-pdb", map[string]string{"app": "web"}, intstr.FromInt32(1), 1, 1, 0))
	var asked []string
	cs.PrependReactor("list", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		asked = append(asked, a.(k8stesting.ListAction).GetListRestrictions().Labels.String())
		return false, nil, nil
	})
	for _, tc := range []struct {
		selector    string
		nodes, pods string
	}{
		{"fleet=blue", "a-0", "demo/web-a"},
		{"fleet", "a-0 b-0", "demo/web-a demo/web-b"},
		{"", "a-0 b-0 c-0", "demo/web-a demo/web-b demo/web-c"},
	} {
		sel, err := fleetSelector(tc.selector)
		if err != nil {
			t.Fatal(err)
		}
		p := NewForClient(cs, Options{FleetSelector: sel})
		asked = nil
		for name, refresh := range map[string]func(context.Context) (*model.Fleet, error){"Refresh": p.Refresh, "RefreshNodes": p.RefreshNodes} {
			f, err := refresh(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var nodes, pods []string
			for _, n := range f.Nodes {
				nodes = append(nodes, n.Name)
			}
			for _, p := range f.Pods {
				pods = append(pods, p.Namespace+"/"+p.Name)
			}
			if name == "RefreshNodes" {
				pods = strings.Fields(tc.pods) // it lists no pods
			}
			if strings.Join(nodes, " ") != tc.nodes || strings.Join(pods, " ") != tc.pods || name == "Refresh" && len(f.PDBs) != 1 {
				t.Errorf("fleet_selector %q, %s: nodes %v, pods %v, %d PDBs; want nodes %s, pods %s, the one PDB", tc.selector, name, nodes, pods, len(f.PDBs), tc.nodes, tc.pods)
			}
		}
		if want := []string{tc.selector, tc.selector}; !slices.Equal(asked, want) {
			t.Errorf("fleet_selector %q: the node LISTs asked for label selectors %q, want %q", tc.selector, asked, want)
		}
	}
}

func TestRefreshMapping(t *testing.T) {
	drift, _ := protocol.EncodeDrift([]model.Drift{{Path: "/etc/x", Kind: model.DriftContent, Expected: "a", Found: "b"}})
	count := "7" // the agent found 7 and listed 1: 6 unlisted
	w1 := kNode("w-1", "b", false, map[string]string{
		protocol.CurrentConfig: "rendered-worker-1", protocol.DesiredConfig: "rendered-worker-2",
		protocol.State: model.StateDegraded, protocol.Reason: "disk full",
		protocol.Drift: drift, protocol.DriftCount: count,
		protocol.OSImage: "quay.io/os@sha256:1", protocol.KernelArgs: `["nosmt","quiet"]`,
	})
	w1.Spec.Unschedulable = true
	done := kPod("demo", "job-1", "w-0", "", nil)
	done.Status.Phase = corev1.PodSucceeded
	pending := kPod("demo", "unbound", "", "", nil)
	notReady := kPod("demo", "web-1", "w-1", "ReplicaSet/web", map[string]string{"app": "web"})
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	exprs := kPDB("demo", "exprs", nil, intstr.FromInt32(1), 1, 1, 0)
	exprs.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{
		{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "api"}}}
	all := kPDB("demo", "all", nil, intstr.FromInt32(1), 1, 1, 0)
	c := fake.NewClientset(exprs, all,
		w1, kNode("w-0", "a", true, nil),
		kPod("kube-system", "agent-w-0", "w-0", "DaemonSet/agent", map[string]string{"app": "agent"}),
		kPod("demo", "web-0", "w-0", "ReplicaSet/web", map[string]string{"app": "web"}),
		notReady, done, pending,
		kPDB("demo", "web-pdb", map[string]string{"app": "web"}, intstr.FromInt32(1), 1, 1, 0),
		kPDB("demo", "half", map[string]string{"app": "web"}, intstr.FromString("50%"), 1, 1, 0),
	)
	f, err := NewForClient(c, Options{}).Refresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	worker := func(z string) map[string]string {
		return map[string]string{"node-role.kubernetes.io/worker": "", ZoneLabel: z}
	}
	want := &model.Fleet{
		Nodes: []model.Node{
			{Name: "w-0", Labels: worker("a"), Zone: "a", Created: created, Ready: true, BootID: "boot-w-0"},
			{Name: "w-1", Labels: worker("b"), Zone: "b", Created: created, Unschedulable: true,
				CurrentConfig: "rendered-worker-1", DesiredConfig: "rendered-worker-2",
				OSImage: "quay.io/os@sha256:1", KernelArgs: []string{"nosmt", "quiet"}, BootID: "boot-w-1",
				State: model.StateDegraded, Reason: "disk full",
				Drift: []model.Drift{{Path: "/etc/x", Kind: model.DriftContent, Expected: "a", Found: "b"}}, DriftUnlisted: 6},
		},
		Pods: []model.Pod{
			{Namespace: "demo", Name: "web-0", Node: "w-0", Labels: map[string]string{"app": "web"}, Ready: true},
			{Namespace: "demo", Name: "web-1", Node: "w-1", Labels: map[string]string{"app": "web"}},
			{Namespace: "kube-system", Name: "agent-w-0", Node: "w-0", Labels: map[string]string{"app": "agent"}, DaemonSet: true, Ready: true},
		},
		PDBs: []model.PDB{
			{Namespace: "demo", Name: "all", Selector: map[string]string{}, SelectsAll: true, MinAvailable: 1, CurrentHealthy: 1, DesiredHealthy: 1},
			{Namespace: "demo", Name: "exprs", Selector: map[string]string{}, MinAvailable: 1, CurrentHealthy: 1, DesiredHealthy: 1,
				MatchExpressions: []model.SelectorRequirement{{Key: "app", Operator: "In", Values: []string{"web", "api"}}}},
			{Namespace: "demo", Name: "half", Selector: map[string]string{"app": "web"}, MinAvailable: 1, CurrentHealthy: 1, DesiredHealthy: 1},
			{Namespace: "demo", Name: "web-pdb", Selector: map[string]string{"app": "web"}, MinAvailable: 1, CurrentHealthy: 1, DesiredHealthy: 1},
		},
	}
	if diff := cmp.Diff(want, f); diff != "" {
		t.Errorf("Refresh (-want +got):\n%s", diff)
	}
}

// Refresh makes three LIST requests whatever the number of nodes (the fake clientset does
// not page).
func TestRefreshListsOnce(t *testing.T) {
	for _, n := range []int{1, 50, 1200} {
		var objs []runtime.Object
		for i := range n {
			name := fmt.Sprintf("w-%04d", i)
			objs = append(objs, kNode(name, "a", true, nil), kPod("demo", "p-"+name, name, "", nil))
		}
		c := fake.NewClientset(objs...)
		if _, err := NewForClient(c, Options{}).Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
		var verbs []string
		for _, a := range c.Actions() {
			verbs = append(verbs, a.GetVerb()+" "+a.GetResource().Resource)
		}
		if len(verbs) != 3 {
			t.Errorf("%d nodes: %d requests %v, want 3 lists", n, len(verbs), verbs)
		}
	}
}

// Against an HTTP server that pages as the API server does, Refresh asks for pages of 500
// and Requests counts every request: ceil(nodes/500) + ceil(pods/500) + 1, and one list
// each of MachineSets and MachineDeployments (which this server does not serve: 404, none).
func TestRefreshPagesAndCounts(t *testing.T) {
	srv := newPagingServer(1200, 1001)
	defer srv.Close()
	p, err := New(&rest.Config{Host: srv.URL}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := p.Refresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Nodes) != 1200 || len(f.Pods) != 1001 {
		t.Fatalf("refresh saw %d nodes, %d pods; want 1200, 1001", len(f.Nodes), len(f.Pods))
	}
	if got, want := p.Requests(), int64(3+3+1+2); got != want {
		t.Errorf("Requests() = %d, want %d", got, want)
	}
	if p.APIRequests() != p.Requests() {
		t.Error("APIRequests differs from Requests")
	}
	if limits := srv.limits(); strings.Trim(limits, "500,") != "" {
		t.Errorf("page sizes asked %q, want 500 each", limits)
	}
	if !strings.Contains(srv.podSelector, "status.phase!=Succeeded") || !strings.Contains(srv.podSelector, "spec.nodeName!=") {
		t.Errorf("pod list field selector %q", srv.podSelector)
	}
}

type pagingServer struct {
	*httptest.Server
	mu          sync.Mutex
	asked       []string
	podSelector string
}

func (s *pagingServer) limits() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.asked, ",")
}

func newPagingServer(nodes, pods int) *pagingServer {
	s := &pagingServer{}
	page := func(w http.ResponseWriter, r *http.Request, total int, item func(i int) any, list func(items []any, cont string) any) {
		q := r.URL.Query()
		limit, _ := strconv.Atoi(q.Get("limit"))
		from, _ := strconv.Atoi(q.Get("continue"))
		s.mu.Lock()
		s.asked = append(s.asked, q.Get("limit"))
		s.mu.Unlock()
		if limit == 0 {
			limit = total
		}
		var items []any
		for i := from; i < total && i < from+limit; i++ {
			items = append(items, item(i))
		}
		cont := ""
		if from+limit < total {
			cont = strconv.Itoa(from + limit)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(list(items, cont))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/nodes", func(w http.ResponseWriter, r *http.Request) {
		page(w, r, nodes, func(i int) any { return kNode(fmt.Sprintf("w-%04d", i), "a", true, nil) },
			func(items []any, cont string) any {
				return map[string]any{"kind": "NodeList", "apiVersion": "v1", "metadata": map[string]any{"continue": cont}, "items": items}
			})
	})
	mux.HandleFunc("/api/v1/pods", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.podSelector = r.URL.Query().Get("fieldSelector")
		s.mu.Unlock()
		page(w, r, pods, func(i int) any { return kPod("demo", fmt.Sprintf("p-%04d", i), "w-0000", "", nil) },
			func(items []any, cont string) any {
				return map[string]any{"kind": "PodList", "apiVersion": "v1", "metadata": map[string]any{"continue": cont}, "items": items}
			})
	})
	mux.HandleFunc("/apis/policy/v1/poddisruptionbudgets", func(w http.ResponseWriter, r *http.Request) {
		page(w, r, 0, nil, func(items []any, cont string) any {
			return &policyv1.PodDisruptionBudgetList{TypeMeta: metav1.TypeMeta{Kind: "PodDisruptionBudgetList", APIVersion: "policy/v1"}}
		})
	})
	s.Server = httptest.NewServer(mux)
	return s
}

// TestDriftPastTheAnnotationLimit: an agent that finds more drift than the annotation
// carries lists the first protocol.MaxDrift paths, and the refresh counts the rest.
func TestDriftPastTheAnnotationLimit(t *testing.T) {
	var found []model.Drift
	for i := range protocol.MaxDrift + 5 {
		found = append(found, model.Drift{Path: fmt.Sprintf("/etc/f%02d", i), Kind: model.DriftMissing})
	}
	drift, count := protocol.EncodeDrift(found)
	n := nodeOf(kNode("w-0", "a", true, map[string]string{protocol.Drift: drift, protocol.DriftCount: count}))
	if len(n.Drift) != protocol.MaxDrift || n.DriftUnlisted != 5 || n.Drift[0].Path != "/etc/f00" {
		t.Errorf("%d listed (first %v), %d unlisted; want %d and 5", len(n.Drift), n.Drift[:1], n.DriftUnlisted, protocol.MaxDrift)
	}
}

// A Node's mcpfleet.io/hold annotation (free text) or label holds it; the annotation's
// reason is the one shown, and an empty one still holds.
func TestHoldFromAnnotationOrLabel(t *testing.T) {
	for _, c := range []struct {
		ann, label map[string]string
		want       string
		held       bool
	}{
		{ann: map[string]string{model.HoldKey: "disk swap on Tuesday"}, want: "disk swap on Tuesday", held: true},
		{ann: map[string]string{model.HoldKey: ""}, want: "no reason given", held: true},
		{label: map[string]string{model.HoldKey: "kernel-debug"}, want: "kernel-debug", held: true},
		{ann: map[string]string{model.HoldKey: "annotated"}, label: map[string]string{model.HoldKey: "labelled"}, want: "annotated", held: true},
		{},
	} {
		kn := kNode("w-0", "a", true, c.ann)
		for k, v := range c.label {
			kn.Labels[k] = v
		}
		n := nodeOf(kn)
		if why, held := n.HoldReason(); why != c.want || held != c.held {
			t.Errorf("annotations %v, labels %v: hold %q %v, want %q %v", c.ann, c.label, why, held, c.want, c.held)
		}
	}
}

// A Node the MCO left (its currentConfig, desiredConfig and state annotations) and mcp
// never updated is read as running the MCO's rendered config, and says so; mcp's own
// annotation, once there, wins.
func TestRefreshReadsTheMCOCurrentConfig(t *testing.T) {
	mco := map[string]string{MCOCurrentConfig: "rendered-worker-b1e37c5d", "machineconfiguration.openshift.io/desiredConfig": "rendered-worker-b1e37c5d",
		"machineconfiguration.openshift.io/state": "Done"}
	both := maps.Clone(mco)
	both[protocol.CurrentConfig] = "rendered-worker-0123"
	c := fake.NewClientset(kNode("w-0", "a", true, mco), kNode("w-1", "a", true, both))
	f, err := NewForClient(c, Options{}).Refresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := [][3]string{}
	for _, n := range f.Nodes {
		got = append(got, [3]string{n.CurrentConfig, n.DesiredConfig + n.State, n.CurrentConfigFrom})
	}
	want := [][3]string{{"rendered-worker-b1e37c5d", "", "the MCO's annotation machineconfiguration.openshift.io/currentConfig"},
		{"rendered-worker-0123", "", ""}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
