// Package nodeclient is a client of the Kubernetes API for what the agent that runs on every
// node asks: Node objects, and one Secret by name (the pools' command health checks).
// client-go's typed Clientset registers every API group of Kubernetes at start-up, which
// costs each node about 10 MB of memory for types the agent never uses; this client knows
// core/v1 only and talks through client-go's REST client.
package nodeclient

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// Nodes is what the agent asks of the API: a subset of client-go's typed NodeInterface,
// so a Clientset's CoreV1().Nodes() (and its fake, in tests) is one too.
type Nodes interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Node, error)
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.NodeList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Node, error)
}

// Secrets is the agent's one other read: a Secret of one namespace by name. A Clientset's
// CoreV1().Secrets(namespace) (and its fake) is one too.
type Secrets interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error)
}

// Client is Nodes over a REST client that knows core/v1 alone.
type Client struct {
	rest   rest.Interface
	params runtime.ParameterCodec
}

var _ Nodes = (*Client)(nil)

// New builds a Client for the cluster cfg reaches (cfg is copied, not changed).
func New(cfg *rest.Config) (*Client, error) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		return nil, err
	}
	metav1.AddToGroupVersion(s, corev1.SchemeGroupVersion)
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.NegotiatedSerializer = serializer.NewCodecFactory(s).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, err
	}
	return &Client{rest: rc, params: runtime.NewParameterCodec(s)}, nil
}

func (c *Client) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Node, error) {
	n := &corev1.Node{}
	err := c.rest.Get().Resource("nodes").Name(name).VersionedParams(&opts, c.params).Do(ctx).Into(n)
	return n, err
}

func (c *Client) List(ctx context.Context, opts metav1.ListOptions) (*corev1.NodeList, error) {
	l := &corev1.NodeList{}
	err := c.rest.Get().Resource("nodes").VersionedParams(&opts, c.params).Timeout(timeout(opts)).Do(ctx).Into(l)
	return l, err
}

func (c *Client) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return c.rest.Get().Resource("nodes").VersionedParams(&opts, c.params).Timeout(timeout(opts)).Watch(ctx)
}

func (c *Client) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Node, error) {
	n := &corev1.Node{}
	err := c.rest.Patch(pt).Resource("nodes").Name(name).SubResource(subresources...).
		VersionedParams(&opts, c.params).Body(data).Do(ctx).Into(n)
	return n, err
}

// Secrets gives the Secrets of namespace (get only).
func (c *Client) Secrets(namespace string) Secrets { return secrets{c: c, ns: namespace} }

type secrets struct {
	c  *Client
	ns string
}

func (s secrets) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error) {
	sec := &corev1.Secret{}
	err := s.c.rest.Get().Namespace(s.ns).Resource("secrets").Name(name).VersionedParams(&opts, s.c.params).Do(ctx).Into(sec)
	return sec, err
}

// timeout is a list or watch's own server-side timeout, as the typed client sets it.
func timeout(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}
