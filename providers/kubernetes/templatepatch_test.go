package kubernetes

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
)

func TestParseField(t *testing.T) {
	for _, c := range []struct {
		field string
		want  []string // JSON pointers
		err   string
	}{
		{field: "spec.template.spec.providerSpec.value.disks[1].image",
			want: []string{"/spec/template/spec/providerSpec/value/disks/1/image"}},
		{field: "a.b[0][2].c", want: []string{"/a/b/0/2/c"}},
		{field: "metadata.annotations.x~y/z", want: []string{"/metadata/annotations/x~0y~1z"}},
		{field: "spec.image.{publisher,offer,sku,version}",
			want: []string{"/spec/image/publisher", "/spec/image/offer", "/spec/image/sku", "/spec/image/version"}},
		{field: "a..b", err: "an empty key"},
		{field: "a.b[x]", err: "a bad index"},
		{field: "a.b[1", err: "a bad index"},
		{field: "a.{b,}", err: "an empty name"},
	} {
		paths, err := parseField(c.field)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("parseField(%q): %v, want an error with %q", c.field, err, c.err)
			}
			continue
		}
		var got []string
		for _, p := range paths {
			got = append(got, p.pointer())
		}
		if err != nil || !cmp.Equal(c.want, got) {
			t.Errorf("parseField(%q) = %v, %v; want %v", c.field, got, err, c.want)
		}
	}
}

// The patch tests every string field for its old value before it replaces it: the exact
// bytes the API server gets.
func TestImagePatchBytes(t *testing.T) {
	for _, c := range []struct{ field, from, to, want string }{
		{"spec.template.spec.providerSpec.value.disks[1].image", "projects/a", "projects/b",
			`[{"op":"test","path":"/spec/template/spec/providerSpec/value/disks/1/image","value":"projects/a"},` +
				`{"op":"replace","path":"/spec/template/spec/providerSpec/value/disks/1/image","value":"projects/b"}]`},
		{"spec.template.spec.image.marketplace.{publisher,offer,sku}", "p:o:s1", "p:o:s2",
			`[{"op":"test","path":"/spec/template/spec/image/marketplace/publisher","value":"p"},` +
				`{"op":"test","path":"/spec/template/spec/image/marketplace/offer","value":"o"},` +
				`{"op":"test","path":"/spec/template/spec/image/marketplace/sku","value":"s1"},` +
				`{"op":"replace","path":"/spec/template/spec/image/marketplace/publisher","value":"p"},` +
				`{"op":"replace","path":"/spec/template/spec/image/marketplace/offer","value":"o"},` +
				`{"op":"replace","path":"/spec/template/spec/image/marketplace/sku","value":"s2"}]`},
	} {
		got, err := imagePatch(c.field, c.from, c.to)
		if err != nil || string(got) != c.want {
			t.Errorf("imagePatch(%q):\n got %s, %v\nwant %s", c.field, got, err, c.want)
		}
	}
	// A marketplace image is set from a URN with one value per field.
	if _, err := imagePatch("image.{publisher,offer,sku,version}", "p:o:s:1", "/subscriptions/x/images/y"); err == nil ||
		!strings.Contains(err.Error(), `is not 4 values separated by ":" (publisher:offer:sku:version)`) {
		t.Errorf("a resource ID for a marketplace image: %v", err)
	}
}

func TestReadImage(t *testing.T) {
	o := map[string]any{"spec": map[string]any{"disks": []any{map[string]any{"image": "x", "size": int64(3)}}}}
	for field, want := range map[string]string{
		"spec.disks[0].image": "x", "spec.disks[0].size": "error: /spec/disks/0/size is not a string (int64)",
		"spec.disks[1].image": "error: /spec/disks/1/image is not set", "spec.disks.image": "error: /spec/disks/image is not set",
	} {
		got, err := readImage(o, field)
		if err != nil {
			got = "error: " + err.Error()
		}
		if got != want {
			t.Errorf("readImage(%q) = %q, want %q", field, got, want)
		}
	}
}

// observed is the template p observes with this ID.
func observed(t *testing.T, p *Provider, id string) model.MachineTemplate {
	t.Helper()
	f, err := p.Refresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tm := range f.Templates {
		if tm.ID() == id {
			return tm
		}
	}
	t.Fatalf("template %s not observed (%v)", id, f.Templates)
	return model.MachineTemplate{}
}

func rawGet(t *testing.T, dyn *dynamicfake.FakeDynamicClient, gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := dyn.Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

var awsTemplatesGVR = schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Resource: "awsmachinetemplates"}

// SetTemplateImage changes the image field and nothing else, with one JSON patch; a
// stale from changes nothing and names what the field holds now.
func TestSetTemplateImage(t *testing.T) {
	gcpDisks := []any{map[string]any{"boot": false, "image": "data"}, map[string]any{"boot": true, "image": "projects/a"}}
	p, dyn := templateProvider(
		kMachineSet("gcp-a", nil, nil, providerSpec("GCPMachineProviderSpec", map[string]any{"disks": gcpDisks})),
		kMachineDeployment("capi", "md", nil, worker, "AWSMachineTemplate", "aws-t"),
		kInfraTemplate("capi", "AWSMachineTemplate", "aws-t", map[string]any{"ami": map[string]any{"id": "ami-0"}, "instanceType": "m5"}),
	)
	var patches []string
	dyn.PrependReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pa := a.(k8stesting.PatchAction)
		patches = append(patches, string(pa.GetPatchType())+" "+a.GetResource().Resource+"/"+pa.GetName()+" "+string(pa.GetPatch()))
		return false, nil, nil
	})
	ctx := context.Background()

	ms := observed(t, p, "MachineSet/"+msNS+"/gcp-a")
	before := rawGet(t, dyn, machineSetGVR, msNS, "gcp-a")
	if err := p.SetTemplateImage(ctx, ms, "projects/a", "projects/b"); err != nil {
		t.Fatal(err)
	}
	after := rawGet(t, dyn, machineSetGVR, msNS, "gcp-a")
	want := before.DeepCopy()
	unstructured.SetNestedSlice(want.Object, []any{map[string]any{"boot": false, "image": "data"},
		map[string]any{"boot": true, "image": "projects/b"}}, "spec", "template", "spec", "providerSpec", "value", "disks")
	if d := cmp.Diff(want.Object, after.Object); d != "" {
		t.Errorf("the MachineSet after the set (-want +got):\n%s", d)
	}
	wantPatch := string(types.JSONPatchType) + " machinesets/gcp-a " +
		`[{"op":"test","path":"/spec/template/spec/providerSpec/value/disks/1/image","value":"projects/a"},` +
		`{"op":"replace","path":"/spec/template/spec/providerSpec/value/disks/1/image","value":"projects/b"}]`
	if !cmp.Equal([]string{wantPatch}, patches) {
		t.Errorf("patches %q, want one:\n%s", patches, wantPatch)
	}

	// The template changed since it was observed: refused, unchanged, and the error says
	// what it holds now.
	err := p.SetTemplateImage(ctx, ms, "projects/a", "projects/c")
	if err == nil || !strings.Contains(err.Error(), `changed since it was observed: spec.template.spec.providerSpec.value.disks[1].image holds "projects/b" now, not "projects/a"`) {
		t.Errorf("a stale from: %v", err)
	}
	if d := cmp.Diff(after.Object, rawGet(t, dyn, machineSetGVR, msNS, "gcp-a").Object); d != "" {
		t.Errorf("a stale set changed the MachineSet:\n%s", d)
	}

	// An infrastructure template, found through the RESTMapper.
	at := observed(t, p, "AWSMachineTemplate/capi/aws-t")
	if err := p.SetTemplateImage(ctx, at, "ami-0", "ami-1"); err != nil {
		t.Fatal(err)
	}
	if id, _, _ := unstructured.NestedString(rawGet(t, dyn, awsTemplatesGVR, "capi", "aws-t").Object, "spec", "template", "spec", "ami", "id"); id != "ami-1" {
		t.Errorf("ami.id after the set: %q", id)
	}

	// Unsupported templates are refused before any request.
	n := len(dyn.Actions())
	if err := p.SetTemplateImage(ctx, model.MachineTemplate{Kind: "MachineSet", Namespace: "x", Name: "y", Unsupported: "no disk"},
		"a", "b"); err == nil || !strings.Contains(err.Error(), "mcp cannot set its image: no disk") {
		t.Errorf("unsupported: %v", err)
	}
	if len(dyn.Actions()) != n {
		t.Errorf("an unsupported template was asked about: %v", dyn.Actions()[n:])
	}
}

// A set the API server refuses (here a Cluster API webhook that keeps templates immutable)
// is an error with the server's message, recorded on the template for mcp status; the next
// set that succeeds removes the record.
func TestSetTemplateImageRefused(t *testing.T) {
	p, dyn := templateProvider(
		kMachineDeployment("capi", "md", nil, worker, "AWSMachineTemplate", "aws-t"),
		kInfraTemplate("capi", "AWSMachineTemplate", "aws-t", map[string]any{"ami": map[string]any{"id": "ami-0"}}),
	)
	refuse := true
	dyn.PrependReactor("patch", "awsmachinetemplates", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if pa := a.(k8stesting.PatchAction); refuse && pa.GetPatchType() == types.JSONPatchType {
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: "infrastructure.cluster.x-k8s.io", Kind: "AWSMachineTemplate"},
				"aws-t", field.ErrorList{field.Invalid(field.NewPath("spec", "template", "spec"), "", "AWSMachineTemplate spec.template.spec field is immutable")})
		}
		return false, nil, nil
	})
	ctx := context.Background()
	tm := observed(t, p, "AWSMachineTemplate/capi/aws-t")
	err := p.SetTemplateImage(ctx, tm, "ami-0", "ami-1")
	if err == nil || !strings.Contains(err.Error(), `setting spec.template.spec.ami.id of machine template AWSMachineTemplate/capi/aws-t from "ami-0" to "ami-1" was refused:`) ||
		!strings.Contains(err.Error(), "field is immutable") {
		t.Fatalf("a refused set: %v", err)
	}
	tm = observed(t, p, "AWSMachineTemplate/capi/aws-t")
	if !strings.Contains(tm.LastError, "field is immutable") || tm.Image != "ami-0" {
		t.Errorf("after the refusal: image %q, last error %q", tm.Image, tm.LastError)
	}
	refuse = false
	if err := p.SetTemplateImage(ctx, tm, "ami-0", "ami-1"); err != nil {
		t.Fatal(err)
	}
	tm = observed(t, p, "AWSMachineTemplate/capi/aws-t")
	if tm.LastError != "" || tm.Image != "ami-1" {
		t.Errorf("after a set that succeeded: image %q, last error %q", tm.Image, tm.LastError)
	}
	if a := rawGet(t, dyn, awsTemplatesGVR, "capi", "aws-t").GetAnnotations(); a[protocol.BootImageError] != "" {
		t.Errorf("annotations %v", a)
	}
}
