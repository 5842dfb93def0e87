package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

var _ providers.WatchSharer = (*Provider)(nil)

// ShareWatches starts one list and watch of every node, shared by the waits of an apply
// until stop: the start-of-node observations (ObserveNodes), the waits for agents
// (RunNodeSteps) and the Ready gates (WaitHealthy) read it instead of each listing and
// watching on its own, so they cost no request per node. Without it each wait watches its
// one node. The Ready gates' DaemonSet pods come likewise from one list and watch of the
// pods bound to nodes (podwatch.go), made by the first gate. A shared watch is dropped, and
// made anew by the next wait, once every list and watch of it has failed for RequestTimeout.
func (p *Provider) ShareWatches(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.hubMu.Lock()
	p.hubCtx = ctx
	p.hubMu.Unlock()
	return func() {
		p.hubMu.Lock()
		hubs := []*watchHub{p.hub, p.podHub}
		p.hub, p.podHub, p.hubCtx = nil, nil, nil
		p.hubMu.Unlock()
		cancel()
		for _, h := range hubs {
			if h != nil {
				<-h.done
			}
		}
	}
}

// nodes is the hub for node: the shared one while ShareWatches is on, else one of its own
// that watches only node, to be stopped by the caller (release).
func (p *Provider) nodes(ctx context.Context, node string) (h *watchHub, release func()) {
	if h := p.sharedHub(); h != nil {
		return h, func() {}
	}
	h = p.startHub(ctx, node)
	return h, h.stop
}

// sharedHub is the shared hub of the nodes while ShareWatches is on (made anew when the
// last one was lost), else nil.
func (p *Provider) sharedHub() *watchHub {
	return p.shared(&p.hub, func(ctx context.Context) *watchHub { return p.startHub(ctx, "") })
}

// shared is the hub in *slot while ShareWatches is on, made by start when there is none or
// the last one was lost; nil while ShareWatches is off.
func (p *Provider) shared(slot **watchHub, start func(context.Context) *watchHub) *watchHub {
	p.hubMu.Lock()
	defer p.hubMu.Unlock()
	if p.hubCtx == nil {
		return nil
	}
	if *slot == nil || (*slot).dead() {
		*slot = start(p.hubCtx)
	}
	return *slot
}

// currentHub is the shared hub when what it holds is current: it has its first list and
// its lists and watches are not failing. Else nil, and the caller asks the API server.
func (p *Provider) currentHub(ctx context.Context) *watchHub {
	return current(ctx, p.sharedHub())
}

// current is h when it is not nil and what it holds is current (as currentHub), else nil.
func current(ctx context.Context, h *watchHub) *watchHub {
	if h != nil && h.sync(ctx) == nil && !h.failingNow() {
		return h
	}
	return nil
}

// readNode is the node as it is now: from the shared watch while it works (a copy: the
// caller may change it), else a GET.
func (p *Provider) readNode(ctx context.Context, node string) (*corev1.Node, error) {
	if h := p.currentHub(ctx); h != nil {
		if n := h.get(node); n != nil {
			return n.DeepCopy(), nil
		}
	}
	return p.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
}

// watchHub is one list and watch — of nodes (all, or one by name), or of the pods bound to
// nodes — kept in a store; waiters are woken when an object they wait on changes (a node,
// or a pod on that node: waits are keyed by node name) and read its latest version from
// the store.
type watchHub struct {
	store  cache.Store
	synced cache.InformerSynced
	stop   func()
	done   chan struct{}
	limit  time.Duration

	mu      sync.Mutex
	waiters map[string]map[chan struct{}]bool
	failing time.Time // when the failing lists and watches began; zero after a success
	lost    error     // set once they have failed for limit: the hub is dead
	lostC   chan struct{}

	// models is each node's model as of a version of it (model), made once per version:
	// apply's budget look reads every node of a pool before each start, and making a model
	// decodes the agent's JSON reports (remade each time, half of apply's CPU at 2,000 nodes).
	modelsMu sync.Mutex
	models   map[string]nodeModel
}

// hubSource is what a hub lists and watches, and the node an object's waits are keyed by.
type hubSource struct {
	list  func(context.Context, metav1.ListOptions) (runtime.Object, error) // one page
	watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
	// collect makes the list the reflector reads from the transformed items of every page.
	collect   func(items []runtime.Object, resourceVersion string) runtime.Object
	object    runtime.Object
	transform cache.TransformFunc
	node      func(any) (string, bool)
	indexers  cache.Indexers
}

// listSlim lists src in pages of pageSize, a consistent read as Refresh's, transforming
// each page's items as it arrives: the reflector's own first list (resourceVersion 0, from
// the API server's cache) comes in one piece, and at 15,000 pods holding every full object
// at once before the transform drops most of each was the peak of apply's memory.
func listSlim(ctx context.Context, src hubSource, o metav1.ListOptions, pageSize int64) (runtime.Object, error) {
	o.ResourceVersion, o.ResourceVersionMatch, o.Limit, o.Continue = "", "", pageSize, ""
	var items []runtime.Object
	for {
		page, err := src.list(ctx, o)
		if err != nil {
			return nil, err
		}
		objs, err := meta.ExtractList(page)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			if src.transform != nil {
				t, err := src.transform(obj)
				if err != nil {
					return nil, err
				}
				obj = t.(runtime.Object)
			}
			items = append(items, obj)
		}
		lm, err := meta.ListAccessor(page)
		if err != nil {
			return nil, err
		}
		if lm.GetContinue() == "" {
			return src.collect(items, lm.GetResourceVersion()), nil
		}
		o.Continue = lm.GetContinue()
	}
}

// startHub starts a hub of every node, or of the one named.
func (p *Provider) startHub(parent context.Context, node string) *watchHub {
	sel := fields.Everything().String()
	if node != "" {
		sel = fields.OneTermEqualSelector("metadata.name", node).String()
	}
	return p.newHub(parent, typedSource(typedWatch[corev1.Node, *corev1.Node, *corev1.NodeList]{
		client:   p.client.CoreV1().Nodes(),
		selector: sel,
		list: func(rv string, items []corev1.Node) *corev1.NodeList {
			return &corev1.NodeList{ListMeta: metav1.ListMeta{ResourceVersion: rv}, Items: items}
		},
		node:      func(n *corev1.Node) string { return n.Name },
		transform: slimNode,
	}))
}

// typedClient is a typed client's list and watch of one resource (a clientset's Nodes(),
// Pods(namespace)): L is its list type.
type typedClient[L runtime.Object] interface {
	List(ctx context.Context, o metav1.ListOptions) (L, error)
	Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error)
}

// typedWatch is what a hub of T (PT is *T) lists and watches, said in T's own types:
// client's objects that selector (a field selector) picks; list makes T's list from the
// slimmed items of every page, node is the node an object's waits are keyed by.
type typedWatch[T any, PT interface {
	*T
	runtime.Object
}, L runtime.Object] struct {
	client    typedClient[L]
	selector  string
	list      func(resourceVersion string, items []T) L
	node      func(PT) string
	transform cache.TransformFunc
	indexers  cache.Indexers
}

// typedSource is the hubSource of w: the one place the hubs' untyped objects are turned
// into and out of T.
func typedSource[T any, PT interface {
	*T
	runtime.Object
}, L runtime.Object](w typedWatch[T, PT, L]) hubSource {
	return hubSource{
		list: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = w.selector
			return w.client.List(ctx, o)
		},
		watch: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = w.selector
			return w.client.Watch(ctx, o)
		},
		collect: func(items []runtime.Object, rv string) runtime.Object {
			ts := make([]T, 0, len(items))
			for _, obj := range items {
				ts = append(ts, *obj.(PT))
			}
			return w.list(rv, ts)
		},
		object:    PT(new(T)),
		transform: w.transform,
		node: func(obj any) (string, bool) {
			t, ok := obj.(PT)
			if !ok {
				return "", false
			}
			return w.node(t), true
		},
		indexers: w.indexers,
	}
}

func (p *Provider) newHub(parent context.Context, src hubSource) *watchHub {
	ctx, cancel := context.WithCancel(parent)
	h := &watchHub{done: make(chan struct{}), limit: p.o.RequestTimeout,
		waiters: map[string]map[chan struct{}]bool{}, lostC: make(chan struct{})}
	h.stop = func() { cancel(); <-h.done }
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			obj, err := listSlim(ctx, src, o, p.o.PageSize)
			h.note(ctx, err)
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := src.watch(ctx, o)
			h.note(ctx, err)
			return w, err
		},
	}
	wake := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if node, ok := src.node(obj); ok {
			h.wake(node)
		}
	}
	store, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    src.object,
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    wake,
			UpdateFunc: func(_, obj any) { wake(obj) },
			DeleteFunc: wake,
		},
		Transform: src.transform,
		Indexers:  src.indexers,
	})
	h.store, h.synced = store, ctrl.HasSynced
	go func() {
		defer close(h.done)
		// The reflector logs every failed list and watch through klog, into apply's output;
		// note counts them instead and, when they last, the waits end with the last one.
		ctrl.RunWithContext(klog.NewContext(ctx, logr.Discard()))
	}()
	return h
}

// slimNode keeps of a node what mcp reads of it — its name, labels, mcp's own annotations
// (the API server holds all of a node's annotations under 256 KiB), cordon, the Ready
// condition with its message cut, its boot id — so what the shared store keeps of a node
// is bounded, however much else other parts of the cluster hang on it (images, volumes,
// their own annotations, conditions with long messages). The claim's patch tests whether
// the node has annotations at all: a node with only others' keeps an empty map.
func slimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	kept := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion,
			CreationTimestamp: n.CreationTimestamp, Labels: n.Labels},
		Spec:   corev1.NodeSpec{Unschedulable: n.Spec.Unschedulable},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{BootID: n.Status.NodeInfo.BootID}},
	}
	if n.Annotations != nil {
		kept.Annotations = map[string]string{}
		for k, v := range n.Annotations {
			if strings.HasPrefix(k, protocol.Prefix) {
				kept.Annotations[k] = v
			}
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			c.Message = cutMessage(c.Message)
			kept.Status.Conditions = append(kept.Status.Conditions, c)
		}
	}
	return kept, nil
}

// maxKeptMessage bounds a condition's message the shared store keeps (it is shown in a
// gate's error, where a paragraph is plenty).
const maxKeptMessage = 1 << 10

// cutMessage is s cut to at most maxKeptMessage bytes, marked as cut.
func cutMessage(s string) string {
	if len(s) <= maxKeptMessage {
		return s
	}
	return strings.ToValidUTF8(s[:maxKeptMessage], "") + "…"
}

// note follows whether the API server answers the hub's lists and watches: when every one
// has failed for limit, the hub is lost and its waits end with an unreachableError.
func (h *watchHub) note(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	switch {
	case err == nil:
		h.failing = time.Time{}
		return
	case h.failing.IsZero():
		h.failing = now
	}
	if h.lost == nil && now.Sub(h.failing) >= h.limit {
		h.lost = &unreachableError{since: now.Sub(h.failing), last: err}
		close(h.lostC)
		go h.stop()
	}
}

func (h *watchHub) dead() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lost != nil
}

// failingNow says whether the hub's lists and watches are failing (or it is lost): what it
// holds may be old then.
func (h *watchHub) failingNow() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.failing.IsZero() || h.lost != nil
}

func (h *watchHub) wake(node string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.waiters[node] {
		select {
		case c <- struct{}{}:
		default: // already woken: it reads the latest version anyway
		}
	}
}

// get is the node's latest version in the store, nil when there is none.
func (h *watchHub) get(node string) *corev1.Node {
	obj, ok, _ := h.store.GetByKey(node)
	if !ok {
		return nil
	}
	return obj.(*corev1.Node)
}

// errSyncStopped: the hub stopped before its first list completed.
var errSyncStopped = errors.New("the watch of the nodes stopped before its first list")

// wait calls check with the node's latest version (nil: the node does not exist) once the
// store holds the first list, then each time the node changes, until check says done or
// fails, ctx ends or the hub is lost. check must not keep the node: it is the store's.
func (h *watchHub) wait(ctx context.Context, node string, check func(*corev1.Node) (bool, error)) error {
	return h.waitOn(ctx, node, func() (bool, error) { return check(h.get(node)) })
}

// waitOn calls check once the store holds the first list, then each time an object keyed
// by node changes, until check says done or fails, ctx ends or the hub is lost.
func (h *watchHub) waitOn(ctx context.Context, node string, check func() (bool, error)) error {
	c := make(chan struct{}, 1)
	h.mu.Lock()
	if h.waiters[node] == nil {
		h.waiters[node] = map[chan struct{}]bool{}
	}
	h.waiters[node][c] = true
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.waiters[node], c)
		if len(h.waiters[node]) == 0 {
			delete(h.waiters, node)
		}
		h.mu.Unlock()
	}()
	if err := h.sync(ctx); err != nil {
		return err
	}
	for {
		ok, err := check()
		if ok || err != nil {
			return err
		}
		select {
		case <-c:
		case <-ctx.Done():
			return ctx.Err()
		case <-h.lostC:
			return h.lostErr()
		}
	}
}

// sync waits until the store holds the first list.
func (h *watchHub) sync(ctx context.Context) error {
	for !h.synced() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-h.lostC:
			return h.lostErr()
		case <-h.done:
			return errSyncStopped
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

func (h *watchHub) lostErr() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lost
}

type nodeModel struct {
	version string
	node    model.Node
}

// observe returns the named nodes' models from the store; an error names those it lacks.
// The models' maps and slices are shared with later observations of the same version.
func (h *watchHub) observe(names []string) ([]model.Node, error) {
	out := make([]model.Node, 0, len(names))
	var missing []string
	h.modelsMu.Lock()
	defer h.modelsMu.Unlock()
	if h.models == nil {
		h.models = map[string]nodeModel{}
	}
	for _, name := range names {
		n := h.get(name)
		if n == nil {
			missing = append(missing, name)
			continue
		}
		m, ok := h.models[name]
		// A node without a version (a fake clientset's) is made anew each time.
		if !ok || m.version != n.ResourceVersion || n.ResourceVersion == "" {
			m = nodeModel{version: n.ResourceVersion, node: nodeOf(n)}
			h.models[name] = m
		}
		out = append(out, m.node)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("observing nodes: %s not found", strings.Join(missing, ", "))
	}
	return out, nil
}
