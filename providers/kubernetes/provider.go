package kubernetes

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/mcpfleet/mcp/kubeapi/kubeclient"
	"github.com/mcpfleet/mcp/kubeapi/kubeconfig"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

// Defaults of Options.
const (
	DefaultNodeTimeout = 30 * time.Minute
	DefaultPageSize    = 500
	// DefaultDrainTimeout bounds a drain whose DrainOptions.Timeout is zero.
	DefaultDrainTimeout = 10 * time.Minute
	// DefaultRetryDelay is the pause after a refused eviction when DrainOptions.RetryDelay
	// is zero (kubectl drain's). Zero itself is never used: it would be a hot retry loop
	// against the API server.
	DefaultRetryDelay = 5 * time.Second
)

// DefaultRequestTimeout is Options.RequestTimeout's default.
const DefaultRequestTimeout = kubeconfig.DefaultRequestTimeout

// RequestTimeoutError is a request the API server did not answer within RequestTimeout.
type RequestTimeoutError = kubeconfig.RequestTimeoutError

// Options tune the provider. The zero value is the default.
type Options struct {
	// DeleteEmptyDirData lets a drain evict pods that use emptyDir volumes, losing that
	// data, as `kubectl drain --delete-emptydir-data` does. nil means true: an OS update
	// reboots the node, which loses nothing an emptyDir is meant to keep, and refusing such
	// pods would block most real drains. Set it to false to make a drain fail on them.
	DeleteEmptyDirData *bool
	// EvictUnreplicated lets a drain evict pods that no controller would put back — pods
	// without a controller, and pods of a DaemonSet that is gone —, as `kubectl drain
	// --force` does. nil means true, as the Machine Config Operator's drain has it: one bare
	// pod would otherwise stop every rollout over its node. Set it to false to make a
	// drain fail on them, naming them, so that their owners move them first.
	EvictUnreplicated *bool
	// NodeTimeout bounds how long RunNodeSteps waits for the node's agent to report Done
	// (DefaultNodeTimeout when zero). The caller's context bounds it too.
	NodeTimeout time.Duration
	// ObserveTimeout bounds how long ObserveConfig waits for a node's agent to say what the
	// node carries (DefaultObserveTimeout when zero).
	ObserveTimeout time.Duration
	// PageSize is the LIST page size of Refresh (DefaultPageSize when zero).
	PageSize int64
	// RequestTimeout bounds each request to the API server (DefaultRequestTimeout when
	// zero): a watch must start answering within it, any other request must be over within
	// it, so a server that stopped answering fails the request with a RequestTimeoutError
	// instead of holding it forever. RunNodeSteps also stops waiting for a node's agent when
	// every list and watch of the node has failed for this long: the agent's reports cannot
	// be read then. Only New's clients have the timeout (not NewForClient's).
	RequestTimeout time.Duration
	// Namespace is mcp's namespace (DefaultNamespace when empty), where the agents read
	// what the engine writes for them: the pools' command health checks
	// (protocol.HealthSecret).
	Namespace string
	// FleetSelector narrows the fleet to the Nodes it selects (nil: every Node). Refresh
	// lists only those, and only the pods bound to them; nodes outside it are not seen, so
	// no pool can select them and no step touches them. Several configurations can share a
	// cluster this way, each with its own state namespace and fleet (docs/kubernetes.md).
	FleetSelector labels.Selector
	// KuredDaemonSet is kured's DaemonSet, namespace/name, whose lock annotation
	// (KuredAnnotation) refresh and ObserveNodes read as claims (kured.go). "": none is
	// read — the zero value's, while the provider block's kured_daemonset defaults to
	// DefaultKuredDaemonSet. A DaemonSet that does not exist holds no lock.
	KuredDaemonSet string
	// KuredAnnotation is the annotation of kured's lock (DefaultKuredAnnotation when empty).
	KuredAnnotation string
}

func (o Options) kuredAnnotation() string {
	if o.KuredAnnotation == "" {
		return DefaultKuredAnnotation
	}
	return o.KuredAnnotation
}

// DefaultNamespace is Options.Namespace's default, the namespace of deploy/.
const DefaultNamespace = "mcp-system"

func (o Options) withDefaults() Options {
	if o.NodeTimeout <= 0 {
		o.NodeTimeout = DefaultNodeTimeout
	}
	if o.ObserveTimeout <= 0 {
		o.ObserveTimeout = DefaultObserveTimeout
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	return o
}

func (o Options) deleteEmptyDirData() bool {
	return o.DeleteEmptyDirData == nil || *o.DeleteEmptyDirData
}

func (o Options) evictUnreplicated() bool {
	return o.EvictUnreplicated == nil || *o.EvictUnreplicated
}

// Provider is a Kubernetes cluster seen through its API server.
type Provider struct {
	client kubeclient.Interface
	// dyn reads and patches machine templates (CRDs); mapper finds the resource of an
	// infrastructure template's kind. Both nil: the provider sees no machine templates.
	dyn      dynamic.Interface
	mapper   meta.RESTMapper
	host     string // the API server's URL ("" for NewForClient)
	o        Options
	requests *atomic.Int64 // nil when the client was handed in (NewForClient)

	// eviction is the policy group version of the eviction API, found once by discovery.
	evictionMu    sync.Mutex
	evictionKnown bool
	eviction      schema.GroupVersion

	// The shared watches of the nodes (watch.go) and of the pods (podwatch.go): hubCtx is
	// set between ShareWatches and its stop, hub is made by the first wait, podHub by the
	// first Ready gate.
	hubMu  sync.Mutex
	hubCtx context.Context
	hub    *watchHub
	podHub *watchHub

	// The claims this provider took, by node and apply (claim.go).
	claimMu sync.Mutex
	claims  map[[2]string]*heldClaim
}

var (
	_ providers.Provider       = (*Provider)(nil)
	_ providers.RequestCounter = (*Provider)(nil)
)

// New builds the provider for the cluster cfg points at. cfg is copied; its transport is
// wrapped to count requests and to give each one opts.RequestTimeout. A cfg without rate
// limits gets QPS 200, burst 400: a rollout of 100 nodes at once makes a few requests per
// node in each wave (make bench-kube), which client-go's default of 5 — or 50 — would
// stretch into minutes; the API server's own priority and fairness guards it.
func New(cfg *rest.Config, opts Options) (*Provider, error) {
	opts = opts.withDefaults()
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS, cfg.Burst = 200, 400
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "mcp"
	}
	n := new(atomic.Int64)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt: rt, n: n} })
	kubeconfig.WithRequestTimeout(cfg, opts.RequestTimeout)
	c, err := kubeclient.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client for %s: %w", cfg.Host, err)
	}
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes dynamic client for %s: %w", cfg.Host, err)
	}
	// Discovery is asked only when a MachineDeployment names an infrastructure template,
	// once per command (the mapper caches it).
	m := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Discovery()))
	p := NewForClients(c, d, m, opts)
	p.requests, p.host = n, cfg.Host
	return p, nil
}

// NewForClient builds the provider on a client made elsewhere (a fake clientset in unit
// tests). Its requests are not counted, and it sees no machine templates.
func NewForClient(c kubeclient.Interface, opts Options) *Provider {
	return NewForClients(c, nil, nil, opts)
}

// NewForClients is NewForClient with the clients that read and patch machine templates:
// a dynamic client, and a RESTMapper for the kinds of Cluster API infrastructure templates.
func NewForClients(c kubeclient.Interface, d dynamic.Interface, m meta.RESTMapper, opts Options) *Provider {
	return &Provider{client: c, dyn: d, mapper: m, o: opts.withDefaults()}
}

// Spec declares the Kubernetes provider: provider "kubernetes" { kubeconfig, context,
// delete_emptydir_data, evict_unreplicated, node_timeout, request_timeout, namespace,
// fleet_selector, kured_daemonset, kured_lock_annotation }. Its cluster is found
// with client-go's usual rules: the kubeconfig named, else $KUBECONFIG, else
// ~/.kube/config; its current context unless context names another; and, when none of
// these exists and mcp runs in a pod, the pod's service account (in-cluster config).
var Spec = providers.Spec{
	BlockSpec: model.BlockSpec{Name: "kubernetes", Settings: append(slices.Clip(kubeconfig.Settings),
		model.SettingSpec{Name: "delete_emptydir_data", Kind: model.SettingBool, Default: true},
		model.SettingSpec{Name: "evict_unreplicated", Kind: model.SettingBool, Default: true},
		model.SettingSpec{Name: "node_timeout", Kind: model.SettingDuration, Default: DefaultNodeTimeout, Check: model.PositiveDuration},
		model.SettingSpec{Name: "request_timeout", Kind: model.SettingDuration, Default: DefaultRequestTimeout, Check: model.PositiveDuration},
		kubeconfig.NamespaceSetting(DefaultNamespace),
		model.SettingSpec{Name: "fleet_selector", Kind: model.SettingString, Check: checkFleetSelector},
		model.SettingSpec{Name: "kured_daemonset", Kind: model.SettingString, Default: DefaultKuredDaemonSet, Check: checkKuredDaemonSet},
		model.SettingSpec{Name: "kured_lock_annotation", Kind: model.SettingString, Default: DefaultKuredAnnotation, Check: checkKuredAnnotation},
	)},
	New: func(s model.Settings) (providers.Provider, error) {
		cfg, err := kubeconfig.FromSettings(s, "loading kubeconfig")
		if err != nil {
			return nil, err
		}
		empty, unreplicated := s.Bool("delete_emptydir_data"), s.Bool("evict_unreplicated")
		fleet, err := fleetSelector(s.Str("fleet_selector"))
		if err != nil {
			return nil, &model.SettingError{Setting: "fleet_selector", Err: err}
		}
		p, err := New(cfg, Options{DeleteEmptyDirData: &empty, EvictUnreplicated: &unreplicated, NodeTimeout: s.Duration("node_timeout"),
			RequestTimeout: s.Duration("request_timeout"), Namespace: s.Str("namespace"), FleetSelector: fleet,
			KuredDaemonSet: s.Str("kured_daemonset"), KuredAnnotation: s.Str("kured_lock_annotation")})
		if err != nil {
			return nil, err
		}
		return p, nil
	},
}

// Requests is the number of HTTP requests sent to the API server so far (each retry and
// each watch counts one; 0 for a provider from NewForClient).
func (p *Provider) Requests() int64 {
	if p.requests == nil {
		return 0
	}
	return p.requests.Load()
}

// APIRequests implements providers.RequestCounter; it is Requests.
func (p *Provider) APIRequests() int64 { return p.Requests() }

type countingTransport struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n.Add(1)
	return t.rt.RoundTrip(r)
}
