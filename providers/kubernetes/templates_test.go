package kubernetes

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
)

// Objects for the fake dynamic client.

const (
	capiInfra = "infrastructure.cluster.x-k8s.io/v1beta1"
	msNS      = "openshift-machine-api"
)

func obj(apiVersion, kind, ns, name string, labels map[string]string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"namespace": ns, "name": name}, "spec": spec}}
	u.SetLabels(labels)
	return u
}

// kMachineSet is a MachineSet whose machines' providerSpec is value.
func kMachineSet(name string, labels, nodeLabels map[string]string, value map[string]any) *unstructured.Unstructured {
	tmplSpec := map[string]any{"providerSpec": map[string]any{"value": value}}
	if nodeLabels != nil {
		m := map[string]any{}
		for k, v := range nodeLabels {
			m[k] = v
		}
		tmplSpec["metadata"] = map[string]any{"labels": m}
	}
	return obj("machine.openshift.io/v1beta1", "MachineSet", msNS, name, labels,
		map[string]any{"replicas": int64(2), "template": map[string]any{"spec": tmplSpec}})
}

func providerSpec(kind string, fields map[string]any) map[string]any {
	v := map[string]any{"apiVersion": "machine.openshift.io/v1beta1", "kind": kind,
		"userDataSecret": map[string]any{"name": "worker-user-data"}}
	for k, f := range fields {
		v[k] = f
	}
	return v
}

// kMachineDeployment names the infrastructure template kind/name (apiVersion capiInfra).
func kMachineDeployment(ns, name string, labels, nodeLabels map[string]string, kind, tmpl string) *unstructured.Unstructured {
	tmeta := map[string]any{}
	if nodeLabels != nil {
		m := map[string]any{}
		for k, v := range nodeLabels {
			m[k] = v
		}
		tmeta["labels"] = m
	}
	return obj("cluster.x-k8s.io/v1beta1", "MachineDeployment", ns, name, labels, map[string]any{
		"clusterName": "c1",
		"template": map[string]any{"metadata": tmeta, "spec": map[string]any{
			"clusterName":       "c1",
			"infrastructureRef": map[string]any{"apiVersion": capiInfra, "kind": kind, "name": tmpl}}}})
}

func kInfraTemplate(ns, kind, name string, spec map[string]any) *unstructured.Unstructured {
	return obj(capiInfra, kind, ns, name, nil, map[string]any{"template": map[string]any{"spec": spec}})
}

var infraKinds = []string{"AWSMachineTemplate", "GCPMachineTemplate", "AzureMachineTemplate", "VSphereMachineTemplate", "DockerMachineTemplate"}

// templateProvider is a provider over fake clients holding objs, with a RESTMapper that
// knows the infrastructure template kinds.
func templateProvider(objs ...runtime.Object) (*Provider, *dynamicfake.FakeDynamicClient) {
	dyn, mapper := fakeTemplateClients(objs...)
	return NewForClients(fake.NewClientset(), dyn, mapper, Options{}), dyn
}

// fakeTemplateClients are a fake dynamic client holding objs, and a RESTMapper that knows
// the infrastructure template kinds.
func fakeTemplateClients(objs ...runtime.Object) (*dynamicfake.FakeDynamicClient, meta.RESTMapper) {
	lists := map[schema.GroupVersionResource]string{
		machineSetGVR: "MachineSetList", machineDeploymentGVR: "MachineDeploymentList"}
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, k := range infraKinds {
		gvk := schema.FromAPIVersionAndKind(capiInfra, k)
		mapper.Add(gvk, meta.RESTScopeNamespace)
		m, _ := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		lists[m.Resource] = k + "List"
	}
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists, objs...), mapper
}

var worker = map[string]string{"node-role.kubernetes.io/worker": ""}

// Each platform's image field, for MachineSets and Cluster API infrastructure templates,
// and why a template is not supported.
func TestTemplatesObserved(t *testing.T) {
	gcpDisks := []any{
		map[string]any{"boot": false, "image": "projects/p/global/images/data"},
		map[string]any{"boot": true, "image": "projects/rhcos-cloud/global/images/rhcos-416", "sizeGb": int64(128)}}
	infra := map[string]string{"node-role.kubernetes.io/infra": ""}
	azure := func(id, pub, offer, sku, ver string) map[string]any {
		return map[string]any{"image": map[string]any{"resourceID": id, "publisher": pub, "offer": offer, "sku": sku, "version": ver}}
	}
	withAnnotation := kMachineSet("aws-b", nil, nil, providerSpec("AWSMachineProviderConfig",
		map[string]any{"ami": map[string]any{"id": "ami-1"}}))
	withAnnotation.SetAnnotations(map[string]string{protocol.BootImageError: "denied by webhook"})
	p, _ := templateProvider(
		kMachineSet("gcp-a", map[string]string{"tier": "canary"}, nil, providerSpec("GCPMachineProviderSpec", map[string]any{"disks": gcpDisks})),
		kMachineSet("gcp-nodisk", nil, nil, providerSpec("GCPMachineProviderSpec", map[string]any{"disks": []any{}})),
		kMachineSet("aws-a", nil, infra, providerSpec("AWSMachineProviderConfig", map[string]any{"ami": map[string]any{"id": "ami-0"}})),
		withAnnotation,
		kMachineSet("aws-filters", nil, nil, providerSpec("AWSMachineProviderConfig",
			map[string]any{"ami": map[string]any{"filters": []any{map[string]any{"name": "tag:Name"}}}})),
		kMachineSet("azure-id", nil, nil, providerSpec("AzureMachineProviderSpec", azure("/rg/images/rhcos-gen2", "", "", "", ""))),
		kMachineSet("azure-mp", nil, nil, providerSpec("AzureMachineProviderSpec", azure("", "azureopenshift", "aro4", "aro_416", "416.94.1"))),
		kMachineSet("vsphere", nil, nil, providerSpec("VSphereMachineProviderSpec", map[string]any{"template": "rhcos-416"})),
		kMachineSet("openstack", nil, nil, providerSpec("OpenstackProviderSpec", map[string]any{"image": "rhcos"})),

		kMachineDeployment("capi", "md-aws", map[string]string{"pool": "worker"}, worker, "AWSMachineTemplate", "aws-t"),
		kInfraTemplate("capi", "AWSMachineTemplate", "aws-t", map[string]any{"instanceType": "m5.large", "ami": map[string]any{"id": "ami-2"}}),
		kMachineDeployment("capi", "md-gcp", nil, worker, "GCPMachineTemplate", "gcp-t"),
		kInfraTemplate("capi", "GCPMachineTemplate", "gcp-t", map[string]any{"image": "projects/p/global/images/rhcos"}),
		kMachineDeployment("capi", "md-azure", nil, worker, "AzureMachineTemplate", "azure-t"),
		kInfraTemplate("capi", "AzureMachineTemplate", "azure-t", map[string]any{"image": map[string]any{
			"marketplace": map[string]any{"publisher": "p", "offer": "o", "sku": "s", "version": "1.2.3"}}}),
		kMachineDeployment("capi", "md-vsphere", nil, worker, "VSphereMachineTemplate", "vsphere-t"),
		kInfraTemplate("capi", "VSphereMachineTemplate", "vsphere-t", map[string]any{"template": "rhcos-t"}),
		kMachineDeployment("capi", "md-docker-1", nil, worker, "DockerMachineTemplate", "docker-t"),
		kMachineDeployment("capi", "md-docker-2", nil, worker, "DockerMachineTemplate", "docker-t"),
		kInfraTemplate("capi", "DockerMachineTemplate", "docker-t", map[string]any{"customImage": "kindest/node:v1.34.0"}),
		kMachineDeployment("capi", "md-shared-1", map[string]string{"a": "1"}, worker, "GCPMachineTemplate", "shared-t"),
		kMachineDeployment("capi", "md-shared-2", map[string]string{"a": "2"}, worker, "GCPMachineTemplate", "shared-t"),
		kInfraTemplate("capi", "GCPMachineTemplate", "shared-t", map[string]any{"image": "projects/p/global/images/rhcos"}),
		kMachineDeployment("capi", "md-missing", nil, worker, "AWSMachineTemplate", "gone"),
		kMachineDeployment("capi", "md-metal", nil, worker, "Metal3MachineTemplate", "metal-t"),
		kMachineDeployment("capi", "md-lookup", nil, worker, "AWSMachineTemplate", "lookup-t"),
		kInfraTemplate("capi", "AWSMachineTemplate", "lookup-t", map[string]any{"imageLookupOrg": "123"}),
	)
	f, err := p.Refresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	const ms = "spec.template.spec.providerSpec.value."
	const it = "spec.template.spec."
	set := func(name, platform, field, image string) model.MachineTemplate {
		return model.MachineTemplate{Kind: "MachineSet", APIVersion: "machine.openshift.io/v1beta1", Namespace: msNS, Name: name,
			NodeLabels: worker, Platform: platform, Field: field, Image: image}
	}
	md := func(kind, name, owners, platform, field, image string) model.MachineTemplate {
		return model.MachineTemplate{Kind: kind, APIVersion: capiInfra, Namespace: "capi", Name: name, NodeLabels: worker,
			Owner: owners, Platform: platform, Field: field, Image: image}
	}
	want := []model.MachineTemplate{
		md("AWSMachineTemplate", "aws-t", "MachineDeployment/capi/md-aws", "aws", it+"ami.id", "ami-2"),
		md("AWSMachineTemplate", "gone", "MachineDeployment/capi/md-missing", "aws", "", ""),
		md("AWSMachineTemplate", "lookup-t", "MachineDeployment/capi/md-lookup", "aws", "", ""),
		md("AzureMachineTemplate", "azure-t", "MachineDeployment/capi/md-azure", "azure",
			it+"image.marketplace.{publisher,offer,sku,version}", "p:o:s:1.2.3"),
		md("DockerMachineTemplate", "docker-t", "MachineDeployment/capi/md-docker-1, MachineDeployment/capi/md-docker-2",
			"docker", it+"customImage", "kindest/node:v1.34.0"),
		md("GCPMachineTemplate", "gcp-t", "MachineDeployment/capi/md-gcp", "gcp", it+"image", "projects/p/global/images/rhcos"),
		md("GCPMachineTemplate", "shared-t", "MachineDeployment/capi/md-shared-1, MachineDeployment/capi/md-shared-2", "gcp",
			it+"image", "projects/p/global/images/rhcos"),
		set("aws-a", "aws", ms+"ami.id", "ami-0"),
		set("aws-b", "aws", ms+"ami.id", "ami-1"),
		set("aws-filters", "aws", "", ""),
		set("azure-id", "azure", ms+"image.resourceID", "/rg/images/rhcos-gen2"),
		set("azure-mp", "azure", ms+"image.{publisher,offer,sku,version}", "azureopenshift:aro4:aro_416:416.94.1"),
		set("gcp-a", "gcp", ms+"disks[1].image", "projects/rhcos-cloud/global/images/rhcos-416"),
		set("gcp-nodisk", "gcp", "", ""),
		set("openstack", "", "", ""),
		set("vsphere", "vsphere", ms+"template", "rhcos-416"),
		md("Metal3MachineTemplate", "metal-t", "MachineDeployment/capi/md-metal", "", "", ""),
		md("VSphereMachineTemplate", "vsphere-t", "MachineDeployment/capi/md-vsphere", "vsphere", it+"template", "rhcos-t"),
	}
	want[0].Labels = map[string]string{"pool": "worker"}
	want[1].Unsupported = "it does not exist (MachineDeployment/capi/md-missing refers to it)"
	want[2].Unsupported = "its AMI is not given by ami.id (it is looked up: imageLookupFormat, imageLookupOrg, imageLookupBaseOS)"
	want[6].Labels = map[string]string{"a": "1"}
	want[6].Unsupported = "it is used by MachineDeployments with different labels (MachineDeployment/capi/md-shared-1, " +
		"MachineDeployment/capi/md-shared-2); mcp manages a template used by one MachineDeployment, or by several with the same labels"
	want[7].NodeLabels = map[string]string{"node-role.kubernetes.io/infra": "", "node-role.kubernetes.io/worker": ""}
	want[8].LastError = "denied by webhook"
	want[9].Unsupported = "its AMI is not given by ami.id (it uses ami.arn or ami.filters)"
	want[12].Labels = map[string]string{"tier": "canary"}
	want[13].Unsupported = "its providerSpec has no boot disk with an image (disks[].boot: true, disks[].image)"
	want[14].Unsupported = "providerSpec kind OpenstackProviderSpec: mcp knows where the image is in AWSMachineProviderConfig, " +
		"AzureMachineProviderSpec, GCPMachineProviderSpec, VSphereMachineProviderSpec only"
	want[16].Unsupported = "infrastructure template kind Metal3MachineTemplate: mcp knows where the image is in AWSMachineTemplate, " +
		"AzureMachineTemplate, DockerMachineTemplate, GCPMachineTemplate, VSphereMachineTemplate only"
	if d := cmp.Diff(want, f.Templates); d != "" {
		t.Errorf("templates (-want +got):\n%s", d)
	}
}

// A cluster that does not serve MachineSets or MachineDeployments has no templates. A
// refused list is an error naming the RBAC rule, unless discovery says the resource is not
// served (without the rule the API server refuses to list what it does not serve, too).
func TestTemplatesNotServedOrForbidden(t *testing.T) {
	for _, c := range []struct {
		name    string
		err     error
		served  bool
		wantErr string
	}{
		{name: "not found", err: apierrors.NewNotFound(machineSetGVR.GroupResource(), "")},
		{name: "forbidden, not served", err: apierrors.NewForbidden(machineSetGVR.GroupResource(), "", nil)},
		{name: "forbidden, served", err: apierrors.NewForbidden(machineSetGVR.GroupResource(), "", nil), served: true,
			wantErr: `the identity needs "list" on machinesets.machine.openshift.io in all namespaces`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, dyn := templateProvider()
			dyn.PrependReactor("list", "*", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, c.err })
			if c.served {
				p.client.(*fake.Clientset).Resources = []*metav1.APIResourceList{{GroupVersion: "machine.openshift.io/v1beta1",
					APIResources: []metav1.APIResource{{Name: "machinesets", Kind: "MachineSet", Namespaced: true}}}}
			}
			f, err := p.Refresh(context.Background())
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("Refresh: %v", err)
			case c.wantErr == "" && len(f.Templates) != 0:
				t.Errorf("templates %v, want none", f.Templates)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Errorf("Refresh: %v, want an error with %q", err, c.wantErr)
			}
		})
	}
}

// A provider without a dynamic client (NewForClient) sees no templates and asks nothing.
func TestNoDynamicClientNoTemplates(t *testing.T) {
	f, err := NewForClient(fake.NewClientset(), Options{}).Refresh(context.Background())
	if err != nil || f.Templates != nil {
		t.Errorf("Refresh: %v, templates %v", err, f.Templates)
	}
}
