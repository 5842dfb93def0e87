package deploy

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"io"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
)

// objects decodes every document of every manifest with client-go's scheme: the universal
// deserializer (unknown kinds are refused), and a strict decoder so that a misspelt field
// is an error rather than silently dropped.
func objects(t *testing.T) map[string]runtime.Object {
	t.Helper()
	return decodeAll(t, Manifests, "*.yaml")
}

// decodeAll is objects for the files of fsys that match pattern.
func decodeAll(t *testing.T, fsys embed.FS, pattern string) map[string]runtime.Object {
	t.Helper()
	files, err := fs.Glob(fsys, pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	objs := map[string]runtime.Object{}
	dec := scheme.Codecs.UniversalDeserializer()
	strict := k8sjson.NewSerializerWithOptions(k8sjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
		k8sjson.SerializerOptions{Yaml: true, Strict: true})
	for _, f := range files {
		b, _ := fsys.ReadFile(f)
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
		for i := 0; ; i++ {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(bytes.TrimSpace(stripComments(doc))) == 0 {
				continue
			}
			obj, gvk, err := dec.Decode(doc, nil, nil)
			if err != nil {
				t.Fatalf("%s document %d: %v", f, i, err)
			}
			if _, _, err := strict.Decode(doc, nil, nil); err != nil {
				t.Errorf("%s document %d: %v", f, i, err)
			}
			m := obj.(interface {
				GetName() string
				GetNamespace() string
			})
			key := gvk.Kind + " " + m.GetNamespace() + "/" + m.GetName()
			if _, dup := objs[key]; dup {
				t.Errorf("%s: %s defined twice", f, key)
			}
			objs[key] = obj
		}
	}
	return objs
}

func stripComments(doc []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

func TestManifestsDecode(t *testing.T) {
	objs := objects(t)
	var keys []string
	for k := range objs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{
		"ClusterRole /mcp-agent", "ClusterRole /mcp-apply",
		"ClusterRole /mcp-drift",
		"ClusterRoleBinding /mcp-agent", "ClusterRoleBinding /mcp-apply", "ClusterRoleBinding /mcp-drift",
		"ConfigMap mcp-system/mcp-server-config",
		"DaemonSet mcp-system/mcp-agent", "Deployment mcp-system/mcp-drift", "Deployment mcp-system/mcp-server",
		"Namespace /mcp-state", "Namespace /mcp-system",
		"Role mcp-state/mcp-apply", "Role mcp-state/mcp-drift", "Role mcp-state/mcp-server",
		"Role mcp-system/mcp-agent", "Role mcp-system/mcp-apply",
		"RoleBinding mcp-state/mcp-apply", "RoleBinding mcp-state/mcp-drift", "RoleBinding mcp-state/mcp-server",
		"RoleBinding mcp-system/mcp-agent", "RoleBinding mcp-system/mcp-apply",
		"Service mcp-system/mcp-drift-metrics", "Service mcp-system/mcp-server",
		"ServiceAccount mcp-system/mcp-agent", "ServiceAccount mcp-system/mcp-apply", "ServiceAccount mcp-system/mcp-drift", "ServiceAccount mcp-system/mcp-server",
		"ValidatingAdmissionPolicy /mcp-agent-own-node", "ValidatingAdmissionPolicyBinding /mcp-agent-own-node",
	}
	if d := cmp.Diff(want, keys); d != "" {
		t.Errorf("objects (-want +got):\n%s", d)
	}
}

// TestRBACIsLeastPrivilege: each identity has exactly the rules it needs, bound to it
// alone, with no wildcard.
func TestRBACIsLeastPrivilege(t *testing.T) {
	objs := objects(t)
	for key, obj := range decodeAll(t, FleetLock, "fleetlock/*.yaml") { // opt-in, same rules
		if _, dup := objs[key]; dup {
			t.Errorf("deploy/fleetlock: %s is defined in deploy/ too", key)
		}
		objs[key] = obj
	}
	rule := func(group, resource string, verbs ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: verbs}
	}
	all := []string{"create", "get", "list", "watch", "update", "patch", "delete"}
	want := map[string][]rbacv1.PolicyRule{
		"ClusterRole /mcp-agent": {rule("", "nodes", "get", "list", "watch", "patch")},
		// The one Secret the agent reads, by name: the pools' command health checks.
		"Role mcp-system/mcp-agent": {{APIGroups: []string{""}, Resources: []string{"secrets"},
			ResourceNames: []string{protocol.HealthSecret}, Verbs: []string{"get"}}},
		// The state's readers read Secrets in mcp-state only, which holds the state alone:
		// nothing in mcp-system (its TLS key, token and command checks).
		"Role mcp-state/mcp-server": {rule("", "secrets", "list", "watch")}, // an informer; no get by name
		// The drift runner reads, and only reads: Nodes, the state and rendered configs.
		"ClusterRole /mcp-drift":   {rule("", "nodes", "list")},
		"Role mcp-state/mcp-drift": {rule("", "secrets", "get", "list")},
		"ClusterRole /mcp-apply": {
			rule("", "nodes", "get", "list", "watch", "patch"), // no update: every write is a patch
			rule("", "pods", "get", "list", "watch"),           // watch: a node's DaemonSet pods, a health gate
			rule("", "pods/eviction", "create"),
			rule("policy", "poddisruptionbudgets", "get", "list"),
			rule("apps", "daemonsets", "get"),
			rule("machine.openshift.io", "machinesets", "get", "list"), // patch: per namespace, deploy/machine-api
			rule("cluster.x-k8s.io", "machinedeployments", "get", "list"),
			{APIGroups: []string{"infrastructure.cluster.x-k8s.io"}, Verbs: []string{"get"},
				Resources: []string{"awsmachinetemplates", "azuremachinetemplates", "dockermachinetemplates", "gcpmachinetemplates", "vspheremachinetemplates"}},
		},
		// deploy/fleetlock: mcp serve -fleetlock lists the fleet's Nodes and swaps one
		// Node's claim (a get, then a patch); it reads the state (the boot server's informer,
		// and its lineage by name) and the state lock's Lease, by name.
		"ClusterRole /mcp-fleetlock": {rule("", "nodes", "get", "list", "patch")},
		"Role mcp-state/mcp-fleetlock": {rule("", "secrets", "get", "list", "watch"),
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
				ResourceNames: []string{protocol.LockLease}, Verbs: []string{"get"}}},
		// kured's DaemonSet, by name: its annotation is kured's reboot lock.
		"Role kube-system/mcp-fleetlock": {{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"},
			ResourceNames: []string{"kured"}, Verbs: []string{"get"}}},
		"Role mcp-state/mcp-apply": {rule("", "secrets", all...), rule("coordination.k8s.io", "leases", all...)},
		// In mcp-system the command checks alone, by name; create cannot be narrowed to one.
		"Role mcp-system/mcp-apply": {{APIGroups: []string{""}, Resources: []string{"secrets"},
			ResourceNames: []string{protocol.HealthSecret}, Verbs: []string{"get", "update"}},
			rule("", "secrets", "create")},
	}
	for key, obj := range objs {
		var rules []rbacv1.PolicyRule
		switch o := obj.(type) {
		case *rbacv1.ClusterRole:
			rules = o.Rules
			if o.AggregationRule != nil {
				t.Errorf("%s aggregates other roles", key)
			}
		case *rbacv1.Role:
			rules = o.Rules
		default:
			continue
		}
		for _, r := range rules {
			for _, s := range slices.Concat(r.APIGroups, r.Resources, r.Verbs, r.ResourceNames, r.NonResourceURLs) {
				if strings.Contains(s, "*") {
					t.Errorf("%s: wildcard %q in %+v", key, s, r)
				}
			}
		}
		w, ok := want[key]
		if !ok {
			t.Errorf("unexpected role %s", key)
			continue
		}
		if d := cmp.Diff(w, rules); d != "" {
			t.Errorf("%s rules (-want +got):\n%s", key, d)
		}
		delete(want, key)
	}
	for key := range want {
		t.Errorf("missing %s", key)
	}
	// Each binding gives its role to its own service account only.
	for key, obj := range objs {
		var ref rbacv1.RoleRef
		var subjects []rbacv1.Subject
		var name string
		switch o := obj.(type) {
		case *rbacv1.ClusterRoleBinding:
			ref, subjects, name = o.RoleRef, o.Subjects, o.Name
		case *rbacv1.RoleBinding:
			ref, subjects, name = o.RoleRef, o.Subjects, o.Name
			if ref.Kind != "Role" {
				t.Errorf("%s binds a %s; namespaced grants use a Role", key, ref.Kind)
			}
		default:
			continue
		}
		wantSubj := []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: "mcp-system"}}
		if ref.Name != name || !cmp.Equal(wantSubj, subjects) {
			t.Errorf("%s: role %s, subjects %+v; want role %s for service account mcp-system/%s", key, ref.Name, subjects, name, name)
		}
	}
}

func TestWorkloads(t *testing.T) {
	objs := objects(t)
	ds := objs["DaemonSet mcp-system/mcp-agent"].(*appsv1.DaemonSet)
	spec := ds.Spec.Template.Spec
	c := spec.Containers[0]
	args := strings.Join(append(c.Command, c.Args...), " ")
	if !strings.HasPrefix(args, "mcp-agent -root /host -node $(NODE_NAME) -server https://mcp-server.mcp-system.svc:22623 -server-ca /etc/mcp-server/ca.crt -server-token-file /etc/mcp-server-token/token") {
		t.Errorf("agent command: %s", args)
	}
	if !spec.HostPID || c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
		t.Error("the agent must run privileged with the host's PID namespace")
	}
	if spec.ServiceAccountName != "mcp-agent" {
		t.Errorf("agent service account %q", spec.ServiceAccountName)
	}
	if len(spec.Tolerations) != 1 || spec.Tolerations[0].Operator != corev1.TolerationOpExists || spec.Tolerations[0].Key != "" {
		t.Errorf("agent tolerations %+v: want one that tolerates every taint", spec.Tolerations)
	}
	var env *corev1.EnvVar
	for i := range c.Env {
		if c.Env[i].Name == "NODE_NAME" {
			env = &c.Env[i]
		}
	}
	if env == nil || env.ValueFrom == nil || env.ValueFrom.FieldRef == nil || env.ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("NODE_NAME must come from the downward API: %+v", env)
	}
	var hostRoot bool
	for _, v := range spec.Volumes {
		if v.HostPath != nil && v.HostPath.Path == "/" {
			for _, m := range c.VolumeMounts {
				hostRoot = hostRoot || (m.Name == v.Name && m.MountPath == "/host")
			}
		}
	}
	if !hostRoot {
		t.Error("the host's root must be mounted at /host")
	}

	dep := objs["Deployment mcp-system/mcp-server"].(*appsv1.Deployment)
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 || dep.Spec.Template.Spec.ServiceAccountName != "mcp-server" {
		t.Errorf("server: replicas %v, service account %q", dep.Spec.Replicas, dep.Spec.Template.Spec.ServiceAccountName)
	}
	sc := dep.Spec.Template.Spec.Containers[0]
	if args := strings.Join(sc.Args, " "); !strings.Contains(args, "serve -listen :22623 -tls-cert /etc/mcp-tls/tls.crt -tls-key /etc/mcp-tls/tls.key -token-file /etc/mcp-token/token") {
		t.Errorf("server args: %s: want TLS and a token by default", args)
	}
	if !dep.Spec.Template.Spec.HostNetwork || sc.Ports[0].HostPort != 22623 {
		t.Errorf("server: hostNetwork %v, ports %+v: new machines reach it on the hosts' port 22623", dep.Spec.Template.Spec.HostNetwork, sc.Ports)
	}
	if p := sc.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" || p.HTTPGet.Scheme != corev1.URISchemeHTTPS {
		t.Errorf("server readiness probe %+v: want HTTPS /readyz (503 until a configuration is loaded)", p)
	}
	for _, c := range []corev1.Container{sc, c} {
		if c.Image != "mcp" {
			t.Errorf("container %s: image %q; the manifests say mcp and the kustomization names it by digest", c.Name, c.Image)
		}
	}
	svc := objs["Service mcp-system/mcp-server"].(*corev1.Service)
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 22623 || len(svc.Spec.Selector) == 0 {
		t.Errorf("service: ports %+v, selector %v", svc.Spec.Ports, svc.Spec.Selector)
	}
	for k, v := range svc.Spec.Selector {
		if dep.Spec.Template.Labels[k] != v {
			t.Errorf("the service's selector %s=%s does not select the server's pods", k, v)
		}
	}
	cm := objs["ConfigMap mcp-system/mcp-server-config"].(*corev1.ConfigMap)
	if !strings.Contains(cm.Data["main.hcl"], `backend   = "kubernetes"`) || !strings.Contains(cm.Data["main.hcl"], `namespace = "mcp-state"`) {
		t.Errorf("server config: %q", cm.Data["main.hcl"])
	}
}
