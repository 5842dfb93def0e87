// Package kubeclient is the part of client-go's typed Clientset that mcp uses: discovery
// and the API groups core/v1, apps/v1, coordination/v1, policy/v1 and policy/v1beta1.
// The provider, the state backend and the boot server's source take an Interface; client-go's
// Clientset and its fake satisfy it, and New builds the groups named and no other.
//
// Why not the Clientset itself: the Butane translator mcp links runs text/template, which
// calls methods by a name known only at run time, so the linker keeps every exported
// method of every type the binary holds (docs/decisions.md, "Binary size"). A Clientset
// holds a client for each of the ~50 API groups, and each client's methods reach its own
// request and apply types: 10 MB of the stripped mcp binary (65 MB → 54 MB), for groups it
// never asks for.
package kubeclient

import (
	"fmt"

	"k8s.io/client-go/discovery"
	appsv1 "k8s.io/client-go/kubernetes/typed/apps/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	policyv1 "k8s.io/client-go/kubernetes/typed/policy/v1"
	policyv1beta1 "k8s.io/client-go/kubernetes/typed/policy/v1beta1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Interface is the subset of k8s.io/client-go/kubernetes.Interface mcp uses.
type Interface interface {
	Discovery() discovery.DiscoveryInterface
	CoreV1() corev1.CoreV1Interface
	AppsV1() appsv1.AppsV1Interface
	CoordinationV1() coordinationv1.CoordinationV1Interface
	PolicyV1() policyv1.PolicyV1Interface
	PolicyV1beta1() policyv1beta1.PolicyV1beta1Interface
}

// Clientset holds the clients of Interface, sharing one HTTP client and one rate limiter
// as client-go's Clientset does.
type Clientset struct {
	discovery      *discovery.DiscoveryClient
	coreV1         *corev1.CoreV1Client
	appsV1         *appsv1.AppsV1Client
	coordinationV1 *coordinationv1.CoordinationV1Client
	policyV1       *policyv1.PolicyV1Client
	policyV1beta1  *policyv1beta1.PolicyV1beta1Client
}

var _ Interface = (*Clientset)(nil)

// New builds the clients for cfg as kubernetes.NewForConfig does: client-go's default
// user agent when cfg has none, and a token-bucket rate limiter of cfg's QPS and Burst
// when cfg has QPS but no limiter.
func New(cfg *rest.Config) (*Clientset, error) {
	c := *cfg
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if c.RateLimiter == nil && c.QPS > 0 {
		if c.Burst <= 0 {
			return nil, fmt.Errorf("burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0")
		}
		c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(c.QPS, c.Burst)
	}
	hc, err := rest.HTTPClientFor(&c)
	if err != nil {
		return nil, err
	}
	var cs Clientset
	if cs.coreV1, err = corev1.NewForConfigAndClient(&c, hc); err != nil {
		return nil, err
	}
	if cs.appsV1, err = appsv1.NewForConfigAndClient(&c, hc); err != nil {
		return nil, err
	}
	if cs.coordinationV1, err = coordinationv1.NewForConfigAndClient(&c, hc); err != nil {
		return nil, err
	}
	if cs.policyV1, err = policyv1.NewForConfigAndClient(&c, hc); err != nil {
		return nil, err
	}
	if cs.policyV1beta1, err = policyv1beta1.NewForConfigAndClient(&c, hc); err != nil {
		return nil, err
	}
	if cs.discovery, err = discovery.NewDiscoveryClientForConfigAndClient(&c, hc); err != nil {
		return nil, err
	}
	return &cs, nil
}

// Discovery is the discovery client.
func (c *Clientset) Discovery() discovery.DiscoveryInterface { return c.discovery }

// CoreV1 is the core/v1 client.
func (c *Clientset) CoreV1() corev1.CoreV1Interface { return c.coreV1 }

// AppsV1 is the apps/v1 client.
func (c *Clientset) AppsV1() appsv1.AppsV1Interface { return c.appsV1 }

// CoordinationV1 is the coordination.k8s.io/v1 client.
func (c *Clientset) CoordinationV1() coordinationv1.CoordinationV1Interface {
	return c.coordinationV1
}

// PolicyV1 is the policy/v1 client.
func (c *Clientset) PolicyV1() policyv1.PolicyV1Interface { return c.policyV1 }

// PolicyV1beta1 is the policy/v1beta1 client (evictions on API servers older than 1.22).
func (c *Clientset) PolicyV1beta1() policyv1beta1.PolicyV1beta1Interface { return c.policyV1beta1 }
