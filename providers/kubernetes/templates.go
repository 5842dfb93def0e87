package kubernetes

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
)

// Machine templates are the objects that create nodes, read through the dynamic client
// (their types are CRDs, not client-go's): OpenShift MachineSets, and the infrastructure
// templates that Cluster API MachineDeployments name. A cluster that does not serve their
// resources has none of them; that is not an error.

var (
	machineSetGVR        = schema.GroupVersionResource{Group: "machine.openshift.io", Version: "v1beta1", Resource: "machinesets"}
	machineDeploymentGVR = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "machinedeployments"}
)

const (
	machineSetImageBase    = "spec.template.spec.providerSpec.value"
	infraTemplateImageBase = "spec.template.spec"
	// An OpenShift MachineSet's user-data secret, NAME-user-data, is the ignition stub of
	// the machine config pool NAME, whose kubelet labels the node node-role.kubernetes.io/NAME.
	userDataSuffix  = "-user-data"
	roleLabelPrefix = "node-role.kubernetes.io/"
	// infraGets bounds the infrastructure templates read at once.
	infraGets = 8
)

// templates observes the machine templates, sorted by ID: MachineSets in all namespaces
// (one paged LIST), and the infrastructure template of each MachineDeployment (one paged
// LIST of them, one GET per template they name). Without a dynamic client (NewForClient),
// none.
func (p *Provider) templates(ctx context.Context) ([]model.MachineTemplate, error) {
	if p.dyn == nil {
		return nil, nil
	}
	var sets, infra []model.MachineTemplate
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { sets, err = p.machineSets(ctx); return err })
	g.Go(func() (err error) { infra, err = p.infrastructureTemplates(ctx); return err })
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := append(sets, infra...)
	slices.SortFunc(out, func(a, b model.MachineTemplate) int { return strings.Compare(a.ID(), b.ID()) })
	return out, nil
}

func (p *Provider) machineSets(ctx context.Context) ([]model.MachineTemplate, error) {
	var out []model.MachineTemplate
	err := p.listAll(ctx, machineSetGVR, func(u *unstructured.Unstructured) {
		out = append(out, machineSetOf(u))
	})
	return out, err
}

// listAll runs fn on every object of gvr in all namespaces (paged). A resource the API
// server does not serve has no objects. A refused list is an error naming the RBAC rule
// that is missing; but without the rule the API server refuses to list a resource it does
// not serve too (authorization comes first), so a refusal is checked against discovery.
func (p *Provider) listAll(ctx context.Context, gvr schema.GroupVersionResource, fn func(*unstructured.Unstructured)) error {
	err := p.each(ctx, resourceName(gvr), metav1.ListOptions{},
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return p.dyn.Resource(gvr).Namespace(metav1.NamespaceAll).List(ctx, o)
		},
		func(obj runtime.Object) error {
			fn(obj.(*unstructured.Unstructured))
			return nil
		})
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case apierrors.IsForbidden(err):
		if served, derr := p.serves(gvr); derr == nil && !served {
			return nil
		}
		return fmt.Errorf("%w; mcp reads machine templates: the identity needs \"list\" on %s in all namespaces (deploy/04-rbac-apply.yaml grants it)",
			err, resourceName(gvr))
	}
	return err
}

// serves reports whether the API server serves gvr, by discovery (which every
// authenticated identity may read).
func (p *Provider) serves(gvr schema.GroupVersionResource) (bool, error) {
	list, err := p.client.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			return true, nil
		}
	}
	return false, nil
}

// resourceName is "machinesets.machine.openshift.io", as RBAC and kubectl name it.
func resourceName(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource
	}
	return gvr.Resource + "." + gvr.Group
}

// machineSetOf maps a MachineSet. Its nodes' labels are spec.template.spec.metadata.labels,
// and the role label of the pool its user-data secret names (worker-user-data:
// node-role.kubernetes.io/worker), which the node's kubelet sets from that pool's config.
func machineSetOf(u *unstructured.Unstructured) model.MachineTemplate {
	t := model.MachineTemplate{Kind: "MachineSet", APIVersion: machineSetGVR.GroupVersion().String(),
		Namespace: u.GetNamespace(), Name: u.GetName(), Labels: maps.Clone(u.GetLabels()),
		LastError: u.GetAnnotations()[protocol.BootImageError]}
	if v := u.GetAPIVersion(); v != "" {
		t.APIVersion = v
	}
	t.NodeLabels, _, _ = unstructured.NestedStringMap(u.Object, "spec", "template", "spec", "metadata", "labels")
	value, _, _ := unstructured.NestedMap(u.Object, "spec", "template", "spec", "providerSpec", "value")
	if secret, _, _ := unstructured.NestedString(value, "userDataSecret", "name"); strings.HasSuffix(secret, userDataSuffix) {
		role := roleLabelPrefix + strings.TrimSuffix(secret, userDataSuffix)
		if _, ok := t.NodeLabels[role]; !ok {
			if t.NodeLabels == nil {
				t.NodeLabels = map[string]string{}
			}
			t.NodeLabels[role] = ""
		}
	}
	kind, _ := value["kind"].(string)
	spec, known := providerSpecs[kind]
	switch {
	case kind == "":
		t.Unsupported = "its providerSpec has no value.kind (the platform's provider spec)"
	case !known:
		t.Unsupported = fmt.Sprintf("providerSpec kind %s: mcp knows where the image is in %s only", kind, knownKinds(providerSpecs))
	default:
		findImage(&t, u.Object, machineSetImageBase, spec)
	}
	return t
}

// infraRef is a MachineDeployment's spec.template.spec.infrastructureRef.
type infraRef struct {
	gk              schema.GroupKind
	version         string // "" when the reference gives only the group (Cluster API v1beta2)
	namespace, name string
}

// infraUse is what the MachineDeployments that name one infrastructure template say of it.
type infraUse struct {
	owners             []string
	labels, nodeLabels map[string]string
	conflict           string // why the template cannot be managed: its users disagree
}

// infrastructureTemplates lists the MachineDeployments (v1beta1) and reads each
// infrastructure template they name once. The template is the machine template: its
// Owner is the MachineDeployment, its Labels (what a partial selection matches) the
// MachineDeployment's labels, its NodeLabels the MachineDeployment's
// spec.template.metadata.labels. A template two MachineDeployments name is one entry;
// when they differ in labels it is not managed (one image field cannot follow both).
func (p *Provider) infrastructureTemplates(ctx context.Context) ([]model.MachineTemplate, error) {
	uses := map[infraRef]*infraUse{}
	var out []model.MachineTemplate
	err := p.listAll(ctx, machineDeploymentGVR, func(md *unstructured.Unstructured) {
		owner := "MachineDeployment/" + md.GetNamespace() + "/" + md.GetName()
		ref, ok := infraRefOf(md)
		if !ok {
			out = append(out, model.MachineTemplate{Kind: "MachineDeployment", APIVersion: md.GetAPIVersion(),
				Namespace: md.GetNamespace(), Name: md.GetName(), Labels: maps.Clone(md.GetLabels()),
				Unsupported: "it names no infrastructure template (spec.template.spec.infrastructureRef)"})
			return
		}
		nodeLabels, _, _ := unstructured.NestedStringMap(md.Object, "spec", "template", "metadata", "labels")
		u := uses[ref]
		if u == nil {
			uses[ref] = &infraUse{owners: []string{owner}, labels: maps.Clone(md.GetLabels()), nodeLabels: nodeLabels}
			return
		}
		if !maps.Equal(u.labels, md.GetLabels()) || !maps.Equal(u.nodeLabels, nodeLabels) {
			u.conflict = fmt.Sprintf("it is used by MachineDeployments with different labels (%s, %s); "+
				"mcp manages a template used by one MachineDeployment, or by several with the same labels", u.owners[0], owner)
		}
		u.owners = append(u.owners, owner)
	})
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(infraGets)
	for ref, u := range uses {
		g.Go(func() error {
			t, err := p.infraTemplate(ctx, ref, u)
			mu.Lock()
			out = append(out, t)
			mu.Unlock()
			return err
		})
	}
	return out, g.Wait()
}

// infraRefOf reads a MachineDeployment's infrastructureRef: apiVersion (v1beta1) or
// apiGroup (v1beta2), kind and name; the namespace is the MachineDeployment's.
func infraRefOf(md *unstructured.Unstructured) (infraRef, bool) {
	ref, _, _ := unstructured.NestedStringMap(md.Object, "spec", "template", "spec", "infrastructureRef")
	r := infraRef{namespace: md.GetNamespace(), name: ref["name"]}
	if gv, err := schema.ParseGroupVersion(ref["apiVersion"]); err == nil && ref["apiVersion"] != "" {
		r.gk, r.version = schema.GroupKind{Group: gv.Group, Kind: ref["kind"]}, gv.Version
	} else {
		r.gk = schema.GroupKind{Group: ref["apiGroup"], Kind: ref["kind"]}
	}
	if ns := ref["namespace"]; ns != "" {
		r.namespace = ns
	}
	return r, r.gk.Kind != "" && r.name != ""
}

// infraTemplate reads the template ref names. A kind mcp does not know is not read (the
// apply identity has no right to); a template that is not there, or whose kind the API
// server does not serve, is an entry that says so.
func (p *Provider) infraTemplate(ctx context.Context, ref infraRef, u *infraUse) (model.MachineTemplate, error) {
	t := model.MachineTemplate{Kind: ref.gk.Kind, APIVersion: schema.GroupVersion{Group: ref.gk.Group, Version: ref.version}.String(),
		Namespace: ref.namespace, Name: ref.name, Labels: u.labels, NodeLabels: u.nodeLabels, Owner: strings.Join(u.owners, ", ")}
	spec, known := infraTemplates[ref.gk.Kind]
	if !known {
		t.Unsupported = fmt.Sprintf("infrastructure template kind %s: mcp knows where the image is in %s only", ref.gk.Kind, knownKinds(infraTemplates))
		return t, nil
	}
	t.Platform = spec.platform
	gvr, err := p.resourceFor(ref.gk, ref.version)
	if meta.IsNoMatchError(err) {
		t.Unsupported = fmt.Sprintf("the API server does not serve %s (%s refers to it)", ref.gk, t.Owner)
		return t, nil
	} else if err != nil {
		return t, fmt.Errorf("finding the resource of %s: %w", ref.gk, err)
	}
	obj, err := p.dyn.Resource(gvr).Namespace(ref.namespace).Get(ctx, ref.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		t.Unsupported = fmt.Sprintf("it does not exist (%s refers to it)", t.Owner)
		return t, nil
	case apierrors.IsForbidden(err):
		return t, fmt.Errorf("reading %s: %w; the identity needs \"get\" on %s (deploy/04-rbac-apply.yaml grants it)", t.ID(), err, resourceName(gvr))
	case err != nil:
		return t, fmt.Errorf("reading %s: %w", t.ID(), err)
	}
	if v := obj.GetAPIVersion(); v != "" {
		t.APIVersion = v
	}
	t.LastError = obj.GetAnnotations()[protocol.BootImageError]
	findImage(&t, obj.Object, infraTemplateImageBase, spec)
	if u.conflict != "" {
		t.Unsupported = u.conflict
	}
	return t, nil
}

// resourceFor maps a kind to its resource, by discovery (the RESTMapper caches it).
func (p *Provider) resourceFor(gk schema.GroupKind, version string) (schema.GroupVersionResource, error) {
	if p.mapper == nil {
		return schema.GroupVersionResource{}, &meta.NoKindMatchError{GroupKind: gk}
	}
	var versions []string
	if version != "" {
		versions = []string{version}
	}
	m, err := p.mapper.RESTMapping(gk, versions...)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	return m.Resource, nil
}
