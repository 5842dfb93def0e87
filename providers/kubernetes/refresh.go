package kubernetes

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/pager"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
)

// ZoneLabel is the well-known label that gives a node's zone.
const ZoneLabel = "topology.kubernetes.io/zone"

// activePods selects bound pods that have not finished: the only ones a drain can move.
const activePods = "spec.nodeName!=,status.phase!=" + string(corev1.PodSucceeded) +
	",status.phase!=" + string(corev1.PodFailed)

// Refresh lists nodes, pods and PodDisruptionBudgets, one paged LIST each, and reads
// kured's lock (kured.go: a GET of its DaemonSet), all side by side, whatever the number of nodes — the fleet's nodes and the pods bound to them, when
// Options.FleetSelector narrows it; every PDB, as a budget counts pods on any node —, and the machine templates (templates.go: MachineSets
// and MachineDeployments, one paged LIST each, and a GET per infrastructure template).
// Nodes are sorted by name, pods by namespace/name, PDBs by namespace/name, templates by ID.
func (p *Provider) Refresh(ctx context.Context) (*model.Fleet, error) {
	f := &model.Fleet{Nodes: []model.Node{}}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return p.listNodes(ctx, f) })
	var kured map[string]model.Claim
	g.Go(func() (err error) {
		kured, err = p.kuredClaims(ctx)
		return err
	})
	g.Go(func() error {
		return p.each(ctx, "pods", metav1.ListOptions{FieldSelector: activePods},
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return p.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, o)
			},
			func(obj runtime.Object) error {
				// The field selector already does this on a real API server; fakes ignore it.
				if pod := obj.(*corev1.Pod); active(pod) {
					f.Pods = append(f.Pods, podOf(pod))
				}
				return nil
			})
	})
	g.Go(func() error {
		return p.each(ctx, "poddisruptionbudgets", metav1.ListOptions{},
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return p.client.PolicyV1().PodDisruptionBudgets(metav1.NamespaceAll).List(ctx, o)
			},
			func(obj runtime.Object) error {
				f.PDBs = append(f.PDBs, pdbOf(obj.(*policyv1.PodDisruptionBudget)))
				return nil
			})
	})
	g.Go(func() (err error) {
		f.Templates, err = p.templates(ctx)
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	withKured(f.Nodes, kured)
	if p.o.FleetSelector != nil {
		f.Pods = fleetPods(f.Pods, f.Nodes)
	}
	slices.SortFunc(f.Pods, func(a, b model.Pod) int {
		return cmp2(a.Namespace, b.Namespace, a.Name, b.Name)
	})
	slices.SortFunc(f.PDBs, func(a, b model.PDB) int {
		return cmp2(a.Namespace, b.Namespace, a.Name, b.Name)
	})
	return f, nil
}

// RefreshNodes lists the nodes alone (providers.NodesRefresher): what a drift run reads,
// with a get/list on nodes and nothing else (no kured lock: a drift run takes no budget).
func (p *Provider) RefreshNodes(ctx context.Context) (*model.Fleet, error) {
	f := &model.Fleet{Nodes: []model.Node{}}
	if err := p.listNodes(ctx, f); err != nil {
		return nil, err
	}
	return f, nil
}

// listNodes fills f.Nodes with every node of the fleet (Options.FleetSelector), sorted by
// name, from one paged LIST.
func (p *Provider) listNodes(ctx context.Context, f *model.Fleet) error {
	err := p.eachFleetNode(ctx, func(n *corev1.Node) { f.Nodes = append(f.Nodes, nodeOf(n)) })
	slices.SortFunc(f.Nodes, func(a, b model.Node) int { return strings.Compare(a.Name, b.Name) })
	return err
}

// eachFleetNode calls fn with every node of the fleet, from one paged LIST.
func (p *Provider) eachFleetNode(ctx context.Context, fn func(*corev1.Node)) error {
	return p.each(ctx, "nodes", p.fleetNodes(),
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return p.client.CoreV1().Nodes().List(ctx, o)
		},
		func(obj runtime.Object) error {
			if n := obj.(*corev1.Node); p.inFleet(n.Labels) {
				fn(n)
			}
			return nil
		})
}

func cmp2(a1, b1, a2, b2 string) int {
	if c := strings.Compare(a1, b1); c != 0 {
		return c
	}
	return strings.Compare(a2, b2)
}

// each runs fn on every item of a paged LIST (p.o.PageSize a page; a full LIST when the
// continue token expires half-way).
func (p *Provider) each(ctx context.Context, what string, opts metav1.ListOptions, list pager.ListPageFunc, fn func(runtime.Object) error) error {
	pg := pager.New(list)
	pg.PageSize = p.o.PageSize
	if err := pg.EachListItem(ctx, opts, fn); err != nil {
		return fmt.Errorf("listing %s: %w", what, err)
	}
	return nil
}

func active(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// MCOCurrentConfig is the annotation in which the MCO's daemon records the rendered
// config a node runs (rendered-<pool>-<hash>); a node without mcp's own current config is
// read as running it (docs/migrate-from-mco.md).
const MCOCurrentConfig = "machineconfiguration.openshift.io/currentConfig"

// nodeOf maps a Node; the agent's report comes from the protocol annotations.
func nodeOf(n *corev1.Node) model.Node {
	a := n.Annotations
	m := model.Node{
		Name:          n.Name,
		Labels:        maps.Clone(n.Labels),
		Zone:          n.Labels[ZoneLabel],
		Created:       n.CreationTimestamp.UTC(),
		Unschedulable: n.Spec.Unschedulable,
		CurrentConfig: a[protocol.CurrentConfig],
		DesiredConfig: a[protocol.DesiredConfig],
		State:         a[protocol.State],
		Reason:        a[protocol.Reason],
		Drift:         protocol.DecodeDrift(a[protocol.Drift]),
		OSImage:       a[protocol.OSImage],
		BootID:        n.Status.NodeInfo.BootID,
	}
	if m.CurrentConfig == "" && a[MCOCurrentConfig] != "" {
		// A node the MCO managed and mcp never updated: its config is the MCO's rendered
		// one, a name mcp did not make, and the plan observes the node against its target.
		m.CurrentConfig, m.CurrentConfigFrom = a[MCOCurrentConfig], "the MCO's annotation "+MCOCurrentConfig
	}
	if h, ok, err := protocol.ReadHandover(a); ok && err == nil && h.Desired == m.DesiredConfig {
		m.Staging = model.StageOnly(h.Steps)
	}
	m.Claim, _, _ = protocol.ReadClaim(a)
	// The annotation carries a reason in free text, which a label value cannot; a label of
	// the key holds too (model.Node.HoldReason).
	if why, ok := a[model.HoldKey]; ok {
		m.Hold = cmp.Or(why, "no reason given")
	}
	if count, err := strconv.Atoi(a[protocol.DriftCount]); err == nil && count > len(m.Drift) {
		m.DriftUnlisted = count - len(m.Drift)
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			m.Ready = c.Status == corev1.ConditionTrue
		}
	}
	if s := a[protocol.KernelArgs]; s != "" {
		// An unreadable value is left out rather than failing the refresh: it is the agent's
		// report, and the plan shows the node's kernel arguments as unknown.
		_ = json.Unmarshal([]byte(s), &m.KernelArgs)
	}
	if s := a[protocol.RolledOut]; s != "" {
		// Likewise: unreadable is not recorded, and nothing is compared with it.
		var r model.HostRecord
		if json.Unmarshal([]byte(s), &r) == nil {
			m.RolledOut = &r
		}
	}
	return m
}

func podOf(pod *corev1.Pod) model.Pod {
	m := model.Pod{Namespace: pod.Namespace, Name: pod.Name, Node: pod.Spec.NodeName, Labels: maps.Clone(pod.Labels)}
	if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "DaemonSet" {
		m.DaemonSet = true
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			m.Ready = c.Status == corev1.ConditionTrue
		}
	}
	return m
}

// pdbOf maps a PodDisruptionBudget. MinAvailable is the spec's number when it is one; a
// percentage or a maxUnavailable is given as the disruption controller resolved it
// (status.desiredHealthy). The selector is carried whole: matchLabels, matchExpressions, and
// whether an empty one selects the whole namespace.
func pdbOf(b *policyv1.PodDisruptionBudget) model.PDB {
	m := model.PDB{
		Namespace:          b.Namespace,
		Name:               b.Name,
		Selector:           map[string]string{},
		MinAvailable:       int(b.Status.DesiredHealthy),
		CurrentHealthy:     int(b.Status.CurrentHealthy),
		DesiredHealthy:     int(b.Status.DesiredHealthy),
		DisruptionsAllowed: int(b.Status.DisruptionsAllowed),
	}
	if ma := b.Spec.MinAvailable; ma != nil && ma.Type == intstr.Int {
		m.MinAvailable = ma.IntValue()
	}
	if sel := b.Spec.Selector; sel != nil {
		maps.Copy(m.Selector, sel.MatchLabels)
		for _, e := range sel.MatchExpressions {
			m.MatchExpressions = append(m.MatchExpressions, model.SelectorRequirement{
				Key: e.Key, Operator: string(e.Operator), Values: e.Values})
		}
		m.SelectsAll = len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0
	}
	return m
}

// ObserveNodes returns the named nodes as they are now: apply's live count of a pool's
// unavailable nodes before it starts each node. During an apply they come from the shared
// watch of the nodes (ShareWatches), with no request, each node's model made once per
// version of it; while that watch is failing, or without one, from a paged LIST of the nodes.
// kured's lock is laid over them (kured.go), from a GET of its DaemonSet each time.
func (p *Provider) ObserveNodes(ctx context.Context, names []string) ([]model.Node, error) {
	nodes, err := p.observeNodes(ctx, names)
	if err != nil {
		return nil, err
	}
	// kured's lock is read afresh each time (a GET of its DaemonSet): a lock kured takes
	// between two nodes' starts counts at once.
	if err := p.overlayKured(ctx, nodes); err != nil {
		return nil, err
	}
	return nodes, nil
}

func (p *Provider) observeNodes(ctx context.Context, names []string) ([]model.Node, error) {
	if h := p.currentHub(ctx); h != nil {
		return h.observe(names)
	}
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	var out []model.Node
	err := p.each(ctx, "nodes", metav1.ListOptions{},
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return p.client.CoreV1().Nodes().List(ctx, o)
		},
		func(obj runtime.Object) error {
			if n := obj.(*corev1.Node); want[n.Name] {
				out = append(out, nodeOf(n))
				delete(want, n.Name)
			}
			return nil
		})
	if err != nil {
		return nil, err
	}
	if len(want) > 0 {
		return nil, fmt.Errorf("observing nodes: %s not found", strings.Join(slices.Sorted(maps.Keys(want)), ", "))
	}
	return out, nil
}
