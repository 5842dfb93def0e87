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
// One that fails refuses the whole snapshot, rather than being skipped: Follow logs the
// error naming the Secret and keeps the snapshot in service, the local source (which reads
// through localstate.Local) does the same, and a changed config in the state's namespace is
// something to look at, not to route around.
func (s *Source) Load(ctx context.Context) (*bootsrv.Snapshot, error) {
	rs, err := s.lister.List(kubestate.RenderedSelector())
	if err != nil {
		return nil, err
	}
	rendered := make(map[string]*model.Rendered, len(rs))
	for _, sec := range rs {
		r, err := kubestate.DecodeRendered(sec)
		if err != nil {
			return nil, fmt.Errorf("not serving the new state: %w", err)
		}
		rendered[r.Name] = r
	}
	head, err := s.lister.Get(protocol.StateSecret)
	if apierrors.IsNotFound(err) {
		return bootsrv.BuildWith(0, nil, rendered, s.Options)
	}
	if err != nil {
		return nil, err
	}
	st, err := kubestate.Decode(head, func(name string) ([]byte, error) {
		c, err := s.lister.Get(name)
		if err != nil {
			return nil, err
		}
		return c.Data[kubestate.KeyChunk], nil
	})
	if err != nil {
		return nil, fmt.Errorf("state in secret %s/%s: %w", s.ns, protocol.StateSecret, err)
	}
	return bootsrv.BuildWith(st.Serial, st.Pointers, rendered, s.Options)
}
