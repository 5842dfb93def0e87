package acceptance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/mcpfleet/mcp/acceptance/k8senv"
	"github.com/mcpfleet/mcp/deploy"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers/kubernetes"
)

var (
	machineSets    = schema.GroupVersionResource{Group: "machine.openshift.io", Version: "v1beta1", Resource: "machinesets"}
	machineDeploys = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "machinedeployments"}
	awsTemplates   = schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Resource: "awsmachinetemplates"}
)

const (
	msNamespace   = "openshift-machine-api"
	capiNamespace = "capi-workers"
	// managedLabel is what the pool's partial machine_templates selection matches.
	managedLabel = "mcpfleet.io/boot-images"
)

// installTemplateCRDs installs the minimal MachineSet, MachineDeployment and
// AWSMachineTemplate CRDs of testdata/machine-templates and waits until discovery serves
// them.
func installTemplateCRDs(t *testing.T, env *k8senv.Env) {
	t.Helper()
	applyManifests(t, env, os.DirFS("testdata/machine-templates"))
	dc, err := discovery.NewDiscoveryClientForConfig(env.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, gvr := range []schema.GroupVersionResource{machineSets, machineDeploys, awsTemplates} {
		waitUntil(t, 30*time.Second, func() bool {
			l, err := dc.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
			if err != nil {
				return false
			}
			for _, r := range l.APIResources {
				if r.Name == gvr.Resource {
					return true
				}
			}
			return false
		}, func() string { return gvr.String() + " is not served after 30s" })
	}
}

func awsMachineSet(name string, labels, nodeLabels map[string]string, userData, ami string) *unstructured.Unstructured {
	spec := map[string]any{"providerSpec": map[string]any{"value": map[string]any{
		"apiVersion": "machine.openshift.io/v1beta1", "kind": "AWSMachineProviderConfig",
		"instanceType": "m6i.xlarge", "placement": map[string]any{"region": "eu-west-1", "availabilityZone": "eu-west-1a"},
		"userDataSecret": map[string]any{"name": userData},
		"ami":            map[string]any{"id": ami},
		"blockDevices":   []any{map[string]any{"ebs": map[string]any{"volumeSize": int64(120), "volumeType": "gp3"}}},
	}}}
	if nodeLabels != nil {
		spec["metadata"] = map[string]any{"labels": toAny(nodeLabels)}
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet",
		"metadata": map[string]any{"namespace": msNamespace, "name": name},
		"spec": map[string]any{"replicas": int64(3),
			"selector": map[string]any{"matchLabels": map[string]any{"machine.openshift.io/cluster-api-machineset": name}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"machine.openshift.io/cluster-api-machineset": name}},
				"spec":     spec}}}}
	u.SetLabels(labels)
	return u
}

func gcpMachineSet(name string, labels map[string]string, image string) *unstructured.Unstructured {
	u := awsMachineSet(name, labels, nil, "worker-user-data", "")
	unstructured.SetNestedField(u.Object, map[string]any{
		"apiVersion": "machine.openshift.io/v1beta1", "kind": "GCPMachineProviderSpec",
		"userDataSecret": map[string]any{"name": "worker-user-data"},
		"disks": []any{
			map[string]any{"autoDelete": true, "boot": true, "image": image, "sizeGb": int64(128), "type": "pd-ssd"},
			map[string]any{"autoDelete": true, "boot": false, "sizeGb": int64(500), "type": "pd-standard"}},
	}, "spec", "template", "spec", "providerSpec", "value")
	return u
}

func machineDeployment(name string, labels, nodeLabels map[string]string, template string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment",
		"metadata": map[string]any{"namespace": capiNamespace, "name": name},
		"spec": map[string]any{"clusterName": "c1", "replicas": int64(2),
			"template": map[string]any{
				"metadata": map[string]any{"labels": toAny(nodeLabels)},
				"spec": map[string]any{"clusterName": "c1", "version": "v1.34.4",
					"bootstrap": map[string]any{"configRef": map[string]any{"apiVersion": "bootstrap.cluster.x-k8s.io/v1beta1",
						"kind": "KubeadmConfigTemplate", "name": name}},
					"infrastructureRef": map[string]any{"apiVersion": awsTemplates.GroupVersion().String(),
						"kind": "AWSMachineTemplate", "name": template}}}}}}
	u.SetLabels(labels)
	return u
}

func awsMachineTemplate(name, ami string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": awsTemplates.GroupVersion().String(), "kind": "AWSMachineTemplate",
		"metadata": map[string]any{"namespace": capiNamespace, "name": name},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"instanceType": "m6i.large", "iamInstanceProfile": "nodes.cluster-api-provider-aws.sigs.k8s.io",
			"ami": map[string]any{"id": ami}, "sshKeyName": "default"}}}}}
}

func toAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// comparable is an object without what the API server changes on every write.
func comparable(u *unstructured.Unstructured) map[string]any {
	c := u.DeepCopy()
	for _, f := range []string{"resourceVersion", "generation", "managedFields"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	return c.Object
}

// TestKubeMachineTemplates: on a real API server with the MachineSet, MachineDeployment and
// AWSMachineTemplate CRDs, the provider observes the machine templates (the platform's
// image field, the labels of the nodes they make, a MachineDeployment's infrastructure
// template through its infrastructureRef), sets an image with a patch that changes only
// that field, and refuses a stale set without changing anything; then plan, apply and
// status as deploy/'s mcp-apply (planApplyTemplates).
func TestKubeMachineTemplates(t *testing.T) {
	waiting(t)
	ctx := context.Background()
	// A control plane of its own: it installs the machine-template CRDs and a ClusterRole,
	// and its MachineSets would be in every other test's refresh.
	env := k8senv.Start(t, k8senv.Options{})

	// An identity whose RBAC predates machine templates (nodes, pods and PDBs only) on a
	// cluster without their CRDs: the API server refuses the lists (authorization comes
	// before the lookup of the resource), discovery says they are not served, and the
	// refresh sees no templates rather than failing.
	oldRole := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "old-apply"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes", "pods"}, Verbs: []string{"list"}},
		{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"list"}}}}
	if _, err := env.Client.RbacV1().ClusterRoles().Create(ctx, oldRole, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "old-apply"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "old-apply"},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: "old-apply"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	oldCfg := rest.CopyConfig(env.RESTConfig)
	oldCfg.Impersonate = rest.ImpersonationConfig{UserName: "old-apply"}
	old, err := kubernetes.New(oldCfg, kubernetes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, func() bool { _, err := old.Refresh(ctx); return err == nil },
		func() string {
			_, err := old.Refresh(ctx)
			return "refresh without the CRDs or the rules: " + err.Error()
		})
	if f, _ := old.Refresh(ctx); len(f.Templates) != 0 {
		t.Fatalf("templates without CRDs: %v", f.Templates)
	}

	installTemplateCRDs(t, env)
	env.EnsureNamespace(t, msNamespace)
	env.EnsureNamespace(t, capiNamespace)
	dyn, err := dynamic.NewForConfig(env.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	on := map[string]string{managedLabel: "managed"}
	worker := map[string]string{"node-role.kubernetes.io/worker": ""}
	for _, o := range []struct {
		gvr schema.GroupVersionResource
		u   *unstructured.Unstructured
	}{
		{machineSets, awsMachineSet("worker-a", on, nil, "worker-user-data", "ami-old")},
		{machineSets, awsMachineSet("worker-b", map[string]string{managedLabel: "manual"}, nil, "worker-user-data", "ami-old")},
		{machineSets, awsMachineSet("infra-a", on, map[string]string{"node-role.kubernetes.io/infra": ""}, "infra-user-data", "ami-old")},
		{machineSets, gcpMachineSet("worker-gcp", on, "projects/rhcos-cloud/global/images/rhcos-old")},
		{machineDeploys, machineDeployment("md-workers", on, worker, "workers-v1")},
		{awsTemplates, awsMachineTemplate("workers-v1", "ami-old")},
	} {
		if _, err := dyn.Resource(o.gvr).Namespace(o.u.GetNamespace()).Create(ctx, o.u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s %s: %v", o.u.GetKind(), o.u.GetName(), err)
		}
	}

	p, err := kubernetes.New(env.RESTConfig, kubernetes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := p.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const msField = "spec.template.spec.providerSpec.value."
	ms := func(name string, labels, nodeLabels map[string]string, platform, field, image string) model.MachineTemplate {
		return model.MachineTemplate{Kind: "MachineSet", APIVersion: "machine.openshift.io/v1beta1", Namespace: msNamespace, Name: name,
			Labels: labels, NodeLabels: nodeLabels, Platform: platform, Field: msField + field, Image: image}
	}
	want := []model.MachineTemplate{
		{Kind: "AWSMachineTemplate", APIVersion: "infrastructure.cluster.x-k8s.io/v1beta2", Namespace: capiNamespace, Name: "workers-v1",
			Labels: on, NodeLabels: worker, Owner: "MachineDeployment/" + capiNamespace + "/md-workers", Platform: "aws",
			Field: "spec.template.spec.ami.id", Image: "ami-old"},
		ms("infra-a", on, map[string]string{"node-role.kubernetes.io/infra": ""}, "aws", "ami.id", "ami-old"),
		ms("worker-a", on, worker, "aws", "ami.id", "ami-old"),
		ms("worker-b", map[string]string{managedLabel: "manual"}, worker, "aws", "ami.id", "ami-old"),
		ms("worker-gcp", on, worker, "gcp", "disks[0].image", "projects/rhcos-cloud/global/images/rhcos-old"),
	}
	if d := cmp.Diff(want, f.Templates); d != "" {
		t.Fatalf("observed templates (-want +got):\n%s", d)
	}

	// Set two images; each object changes in its image field and nowhere else.
	get := func(gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
		t.Helper()
		u, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	for _, c := range []struct {
		tmpl  model.MachineTemplate
		gvr   schema.GroupVersionResource
		to    string
		field []string
	}{
		{f.Templates[2], machineSets, "ami-new", []string{"spec", "template", "spec", "providerSpec", "value", "ami", "id"}},
		{f.Templates[0], awsTemplates, "ami-new", []string{"spec", "template", "spec", "ami", "id"}},
	} {
		before := get(c.gvr, c.tmpl.Namespace, c.tmpl.Name)
		n := p.Requests()
		if err := p.SetTemplateImage(ctx, c.tmpl, c.tmpl.Image, c.to); err != nil {
			t.Fatal(err)
		}
		if got := p.Requests() - n; got != 1 {
			t.Errorf("%s: the set took %d requests, want 1", c.tmpl.ID(), got)
		}
		after := get(c.gvr, c.tmpl.Namespace, c.tmpl.Name)
		wantObj := before.DeepCopy()
		unstructured.SetNestedField(wantObj.Object, c.to, c.field...)
		if d := cmp.Diff(comparable(wantObj), comparable(after)); d != "" {
			t.Errorf("%s after the set (-want +got):\n%s", c.tmpl.ID(), d)
		}

		// The same set again, from the image observed before: refused, nothing changes.
		err := p.SetTemplateImage(ctx, c.tmpl, c.tmpl.Image, "ami-other")
		if err == nil || !strings.Contains(err.Error(), `changed since it was observed: `+c.tmpl.Field+` holds "ami-new" now, not "ami-old"`) {
			t.Errorf("%s: a stale set: %v", c.tmpl.ID(), err)
		}
		if again := get(c.gvr, c.tmpl.Namespace, c.tmpl.Name); again.GetResourceVersion() != after.GetResourceVersion() {
			t.Errorf("%s: a stale set wrote it:\n%s", c.tmpl.ID(), cmp.Diff(comparable(after), comparable(again)))
		}
	}

	planApplyTemplates(t, env, dyn)
}

// planApplyTemplates is the end-to-end part: as mcp-apply (deploy/'s RBAC), with a
// boot_image and a worker pool that manages the templates labelled managed, mcp status
// shows them lagging, mcp plan lists their changes, mcp apply patches exactly those (only
// their image fields) and leaves the others untouched, and mcp status then shows them
// reconciled.
func planApplyTemplates(t *testing.T, env *k8senv.Env, dyn dynamic.Interface) {
	ctx := context.Background()
	applyManifests(t, env, deploy.Manifests)
	// The per-namespace patch rights, as docs/kubernetes.md says to install them: the
	// OpenShift Role as shipped, the Cluster API one moved to its namespace by a kustomization.
	repo, _ := filepath.Abs("..")
	kubectl(t, env, repo, "apply", "--server-side", "-k", "deploy/machine-api/openshift")
	overlay := t.TempDir()
	rel, _ := filepath.Rel(overlay, filepath.Join(repo, "deploy/machine-api/cluster-api"))
	os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte("namespace: "+capiNamespace+"\nresources: ["+rel+"]\n"), 0o644)
	kubectl(t, env, overlay, "apply", "--server-side", "-k", ".")
	kc := env.KubeconfigFor(t, "mcp-system", "mcp-apply")
	dir := t.TempDir()
	hcl := kubeMain + `
boot_image "rhcos-3" {
  os_image = "quay.io/os:3"
  images   = { aws = "ami-v3", gcp = "projects/rhcos-cloud/global/images/rhcos-v3" }
}

pool "worker" {
  node_selector = { "node-role.kubernetes.io/worker" = "" }
  os_image      = "quay.io/os:3"
  boot_image {
    machine_templates {
      selection    = "partial"
      match_labels = { "` + managedLabel + `" = "managed" }
    }
    user_data {
      secret     = "` + msNamespace + `/worker-user-data"
      url        = "https://boot.example:8443"
      token_file = "boot-token"
    }
  }
}

pool "infra" {
  node_selector = { "node-role.kubernetes.io/infra" = "" }
  os_image      = "quay.io/os:3"
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "boot-token"), []byte("t0k3n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The user-data Secret lives beside the MachineSets: deploy/machine-api/openshift lets
	// mcp-apply get and update it by name; it does not exist yet, so the operator lets apply
	// create it too, as the docs say.
	rbac := `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: mcp-user-data, namespace: ` + msNamespace + `}
rules:
- {apiGroups: [""], resources: [secrets], verbs: [create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: mcp-user-data, namespace: ` + msNamespace + `}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: mcp-user-data}
subjects:
- {kind: ServiceAccount, name: mcp-apply, namespace: mcp-system}
`
	applyManifests(t, env, fstest.MapFS{"user-data-rbac.yaml": {Data: []byte(rbac)}})
	status := func() map[string]string {
		t.Helper()
		out := execMCP(t, dir, kc, "status", "-json")
		var st struct {
			FormatVersion string `json:"format_version"`
			Templates     []struct {
				ID, Pool, Status, Reason string
			} `json:"templates"`
		}
		if err := json.Unmarshal(out, &st); err != nil || st.FormatVersion != "1.5" {
			t.Fatalf("mcp status -json: %v\n%s", err, out)
		}
		got := map[string]string{}
		for _, ts := range st.Templates {
			got[ts.ID] = ts.Pool + " " + ts.Status
		}
		return got
	}
	selected := []struct {
		id    string
		gvr   schema.GroupVersionResource
		ns    string
		field []string
		to    string
	}{
		{"AWSMachineTemplate/" + capiNamespace + "/workers-v1", awsTemplates, capiNamespace,
			[]string{"spec", "template", "spec", "ami", "id"}, "ami-v3"},
		{"MachineSet/" + msNamespace + "/worker-a", machineSets, msNamespace,
			[]string{"spec", "template", "spec", "providerSpec", "value", "ami", "id"}, "ami-v3"},
		{"MachineSet/" + msNamespace + "/worker-gcp", machineSets, msNamespace, nil, "projects/rhcos-cloud/global/images/rhcos-v3"},
	}
	others := []string{"MachineSet/" + msNamespace + "/infra-a", "MachineSet/" + msNamespace + "/worker-b"}
	wantStatus := func(selectedState string) map[string]string {
		m := map[string]string{others[0]: "infra unmanaged", others[1]: "worker unmanaged"}
		for _, s := range selected {
			m[s.id] = "worker " + selectedState
		}
		return m
	}
	if d := cmp.Diff(wantStatus("lagging"), status()); d != "" {
		t.Errorf("mcp status before apply (-want +got):\n%s", d)
	}

	plan := string(execMCP(t, dir, kc, "plan", "-no-color"))
	for _, s := range selected {
		if !regexp.MustCompile(`(?m)` + regexp.QuoteMeta(s.id) + `\s.*→ ` + regexp.QuoteMeta(s.to) + `\s*$`).MatchString(plan) {
			t.Errorf("the plan does not set %s to %s:\n%s", s.id, s.to, plan)
		}
	}
	for _, id := range others {
		if strings.Contains(plan, id) {
			t.Errorf("the plan names %s, which no pool manages:\n%s", id, plan)
		}
	}
	if want := "user_data Secret " + msNamespace + "/worker-user-data[userData]: create the pointer config"; !strings.Contains(plan, want) {
		t.Errorf("the plan lacks %q:\n%s", want, plan)
	}
	if strings.Contains(plan, "t0k3n") {
		t.Errorf("the plan shows the token:\n%s", plan)
	}

	all := func() map[string]*unstructured.Unstructured {
		out := map[string]*unstructured.Unstructured{}
		for _, gvr := range []schema.GroupVersionResource{machineSets, awsTemplates} {
			l, err := dyn.Resource(gvr).Namespace(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range l.Items {
				u := &l.Items[i]
				out[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = u
			}
		}
		return out
	}
	before := all()
	if out := execMCP(t, dir, kc, "apply", "-auto-approve", "-no-color"); !strings.Contains(string(out), "Apply complete") {
		t.Logf("mcp apply:\n%s", out)
	}
	after := all()
	for _, s := range selected {
		want := before[s.id].DeepCopy()
		if s.field == nil { // the GCP MachineSet's boot disk, disks[0]
			disks, _, _ := unstructured.NestedSlice(want.Object, "spec", "template", "spec", "providerSpec", "value", "disks")
			disks[0].(map[string]any)["image"] = s.to
			unstructured.SetNestedSlice(want.Object, disks, "spec", "template", "spec", "providerSpec", "value", "disks")
		} else {
			unstructured.SetNestedField(want.Object, s.to, s.field...)
		}
		if d := cmp.Diff(comparable(want), comparable(after[s.id])); d != "" {
			t.Errorf("%s after apply (-want +got):\n%s", s.id, d)
		}
	}
	for _, id := range others {
		if before[id].GetResourceVersion() != after[id].GetResourceVersion() {
			t.Errorf("apply wrote %s, which no pool manages:\n%s", id, cmp.Diff(comparable(before[id]), comparable(after[id])))
		}
	}
	if d := cmp.Diff(wantStatus("reconciled"), status()); d != "" {
		t.Errorf("mcp status after apply (-want +got):\n%s", d)
	}
	secret, err := env.Client.CoreV1().Secrets(msNamespace).Get(ctx, "worker-user-data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ud := string(secret.Data["userData"])
	for _, want := range []string{`"source": "https://boot.example:8443/config/worker"`, `"value": "Bearer t0k3n"`} {
		if !strings.Contains(ud, want) {
			t.Errorf("user-data Secret lacks %s:\n%s", want, ud)
		}
	}
	if again := string(execMCP(t, dir, kc, "plan", "-no-color")); strings.Contains(again, "user_data") {
		t.Errorf("after apply the plan still changes the user-data Secret:\n%s", again)
	}
	// A rotated token is a planned update, and neither the plan JSON nor the saved plan
	// holds the token or an unkeyed hash of what holds it (the Secret's value, the new
	// pointer config): nothing to check a guessed token against offline.
	if err := os.WriteFile(filepath.Join(dir, "boot-token"), []byte("r0t4t3d\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	planJSON := execMCP(t, dir, kc, "plan", "-json", "-out=rotated.plan")
	saved, err := os.ReadFile(filepath.Join(dir, "rotated.plan"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`"address":"user_data.worker"[^\n]*"actions":\["update"\][^\n]*"token_changed":true`).Match(planJSON) {
		t.Errorf("the plan JSON lacks the user-data update for the rotated token:\n%s", planJSON)
	}
	newPointer := execMCP(t, dir, kc, "pointer", "worker", "-url", "https://boot.example:8443", "-token-file", "boot-token")
	// The saved plan applies: the Secret is updated (by name: deploy/machine-api's rule)
	// to exactly the new pointer config.
	execMCP(t, dir, kc, "apply", "-auto-approve", "-no-color", "rotated.plan")
	secret, err = env.Client.CoreV1().Secrets(msNamespace).Get(ctx, "worker-user-data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := secret.Data["userData"]; !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(newPointer)) {
		t.Errorf("after applying the rotation the user-data Secret holds:\n%s\nwant:\n%s", got, newPointer)
	}
	for what, v := range map[string][]byte{"the Secret's value": []byte(ud), "the new pointer config": newPointer} {
		sum := sha256.Sum256(v)
		for name, out := range map[string][]byte{"plan JSON": planJSON, "saved plan": saved} {
			if bytes.Contains(out, []byte("t0k3n")) || bytes.Contains(out, []byte("r0t4t3d")) {
				t.Errorf("the %s holds a token", name)
			}
			if bytes.Contains(out, []byte(hex.EncodeToString(sum[:]))) {
				t.Errorf("the %s holds the SHA-256 of %s", name, what)
			}
		}
	}
	if table := string(execMCP(t, dir, kc, "status")); !regexp.MustCompile(`(?m)MachineSet/` + msNamespace +
		`/worker-a +worker +aws +ami-v3 +reconciled`).MatchString(table) {
		t.Errorf("mcp status:\n%s", table)
	}
}

// execMCP runs mcp in dir with the kubeconfig kc and returns its standard output, failing
// the test when it fails.
func execMCP(t *testing.T, dir, kc string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(mcpBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kc)
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mcp %v: %v\n%s%s", args, err, out, errb.String())
	}
	return out
}
