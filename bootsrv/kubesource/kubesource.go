// Package kubesource is the boot server's source for the kubernetes state backend: it
// follows the mcp Secrets of the state namespace with an informer, so that any number of
// `mcp serve` replicas serve the same bytes without asking the apiserver per request.
// Token is an in-memory counter the informer's event handlers bump; Load builds the
// snapshot from the informer's cache (the head's pointers and the rendered configs).
package kubesource

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/mcpfleet/mcp/bootsrv"
	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/kubeapi/kubeclient"
	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state/kubestate"
)

// Source is a bootsrv.Source on the Secrets of one namespace.
type Source struct {
	ns       string
	informer cache.SharedIndexInformer
	synced   cache.InformerSynced
	lister   listersv1.SecretNamespaceLister
	gen      atomic.Int64
	// Options are the snapshots' (bootsrv.BuildWith); set before Start.
	Options ignition.ServeOptions
}

var _ bootsrv.Source = (*Source)(nil)

// New returns a source on the mcp Secrets (app.kubernetes.io/managed-by=mcp) of namespace.
// Start it before use. The informer is client-go's Secret informer, built here rather
// than by an informer factory, whose methods reach every API group's informers
// (kubeclient says why that matters).
func New(cs kubeclient.Interface, namespace string) (*Source, error) {
	secrets := cs.CoreV1().Secrets(namespace)
	managed := kubestate.ManagedSelector().String()
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = managed
			return secrets.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = managed
			return secrets.Watch(ctx, o)
		},
	}, &corev1.Secret{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	s := &Source{ns: namespace, informer: inf}
	bump := func(any) { s.gen.Add(1) }
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    bump,
		UpdateFunc: func(_, n any) { bump(n) },
		DeleteFunc: bump,
	})
	if err != nil {
		return nil, err
	}
	s.synced = reg.HasSynced
	s.lister = listersv1.NewSecretLister(inf.GetIndexer()).Secrets(namespace)
	return s, nil
}

// Start runs the informer until ctx ends and waits (at most timeout) for its first list.
func (s *Source) Start(ctx context.Context, timeout time.Duration) error {
	go s.informer.RunWithContext(ctx)
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if !cache.WaitForCacheSync(wctx.Done(), s.synced) {
		return fmt.Errorf("watching the mcp Secrets of namespace %s: no list within %s", s.ns, timeout)
	}
	return nil
}

// Token changes whenever a watched Secret is added, changed or deleted.
func (s *Source) Token() (string, error) {
	if !s.synced() {
		return "", errors.New("the informer on the state's Secrets has not synced yet")
	}
	return strconv.FormatInt(s.gen.Load(), 10), nil
}

// Load builds the snapshot from the cached head and rendered configs. The backend creates
// rendered configs and chunks before the head that names them, and one watch delivers
// the events of one namespace's Secrets in order, so the cache holds what a head names.
//
// Every rendered config is verified (kubestate.DecodeRendered: name, label and content agree).
// One that fails is not served, and is not routed around either: the pool pointing at it
// answers 503 naming the Secret and why (a server already serving that config keeps its
// copy: bootsrv.Snapshot.Keeping), /rendered/<name> answers 503 the same, and every other
// pool is served — one pool's damaged Secret does not stop the others' machines booting.
// The local source (localstate.Local.Served) does the same.
func (s *Source) Load(ctx context.Context) (*bootsrv.Snapshot, error) {
	rs, err := s.lister.List(kubestate.RenderedSelector())
	if err != nil {
		return nil, err
	}
	st := bootsrv.Stored{Rendered: make(map[string]*model.Rendered, len(rs)), Unreadable: map[string]error{}}
	for _, sec := range rs {
		r, err := kubestate.DecodeRendered(sec)
		if err != nil { // only a pool pointing at it fails: the others are served
			st.Unreadable[storedName(sec)] = err
			continue
		}
		st.Rendered[r.Name] = r
	}
	head, err := s.lister.Get(protocol.StateSecret)
	if apierrors.IsNotFound(err) {
		return bootsrv.BuildStored(st, s.Options)
	}
	if err != nil {
		return nil, err
	}
	state, err := kubestate.Decode(head, func(name string) ([]byte, error) {
		c, err := s.lister.Get(name)
		if err != nil {
			return nil, err
		}
		return c.Data[kubestate.KeyChunk], nil
	})
	if err != nil {
		return nil, fmt.Errorf("state in secret %s/%s: %w", s.ns, protocol.StateSecret, err)
	}
	st.Serial, st.Pointers, st.Machines = state.Serial, state.Pointers, state.Machines
	return bootsrv.BuildStored(st, s.Options)
}

// storedName is the rendered config a Secret that does not decode was stored as: its
// label's, or its name's (mcp-<name>).
func storedName(sec *corev1.Secret) string {
	if l := sec.Labels[protocol.RenderedLabel]; l != "" {
		return l
	}
	return strings.TrimPrefix(sec.Name, protocol.RenderedSecretName(""))
}
