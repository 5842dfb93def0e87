package acceptance

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
)

// TestKubeDriftRunner: the drift runner of deploy/30-drift.yaml, as it runs in the cluster —
// the real mcp drift, with the configuration its ConfigMap mounts and a token of the
// mcp-drift service account — reads what drift needs and reports a node whose disk drifted
// (and the other as clean); access reviews show that identity can change nothing.
func TestKubeDriftRunner(t *testing.T) {
	waiting(t)
	c := newKubeCluster(t, `
pool "worker" {
  node_selector = { "node-role.kubernetes.io/worker" = "" }
}

config "10-motd" {
  pools = ["worker"]
  file "/etc/motd" {
    content   = "managed\n"
    on_change = ["none"]
  }
}
`, map[string]int{"worker": 2})
	if out, code := c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	if err := os.WriteFile(filepath.Join(c.agents["worker-0"].root, "etc/motd"), []byte("edited by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, func() bool { return c.node(t, "worker-0").Annotations[protocol.DriftCount] == "1" },
		func() string { return "the agent of worker-0 never reported its drift" })

	// The configuration goes into the ConfigMap the install page says (mcp-config); the
	// runner's configuration directory is the one its Deployment mounts, as mounted.
	ctx := context.Background()
	main, err := os.ReadFile(filepath.Join(c.dir, "main.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.env.Client.CoreV1().ConfigMaps("mcp-system").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "mcp-config", Namespace: "mcp-system"}, Data: map[string]string{"main.hcl": string(main)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dep, err := c.env.Client.AppsV1().Deployments("mcp-system").Get(ctx, "mcp-drift", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec := dep.Spec.Template.Spec
	if spec.ServiceAccountName != "mcp-drift" || len(spec.Volumes) != 1 || spec.Volumes[0].ConfigMap == nil ||
		len(spec.Containers) != 1 || len(spec.Containers[0].VolumeMounts) != 1 {
		t.Fatalf("the drift runner's pod is not one container, as mcp-drift, with one ConfigMap mounted: %+v", spec)
	}
	args := spec.Containers[0].Args
	if len(args) == 0 || args[0] != "-chdir="+spec.Containers[0].VolumeMounts[0].MountPath {
		t.Fatalf("the drift runner does not run in its mounted configuration: args %q", args)
	}
	cm, err := c.env.Client.CoreV1().ConfigMaps("mcp-system").Get(ctx, spec.Volumes[0].ConfigMap.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range cm.Data {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The Deployment's command, one run (-every runs forever), in JSON, with the exit code
	// saying whether anything drifted.
	kc := c.env.KubeconfigFor(t, "mcp-system", "mcp-drift")
	cmd := exec.Command(c.bin, "-chdir="+dir, "drift", "-json", "-detailed-exitcode")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kc)
	var stderr []byte
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = ee.Stderr
	}
	if code := cmd.ProcessState.ExitCode(); code != 2 {
		t.Fatalf("mcp drift as mcp-drift: exit %d, want 2 (drift)\n%s%s", code, out, stderr)
	}
	var rep struct {
		Drifted bool `json:"drifted"`
		Nodes   []struct {
			Name, Pool, Status string
			Drift              []struct{ Path, Kind string }
		} `json:"nodes"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("drift -json: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, n := range rep.Nodes {
		got[n.Name] = n.Pool + " " + n.Status
		if n.Name == c.name("worker-0") && (len(n.Drift) != 1 || n.Drift[0].Path != "/etc/motd") {
			t.Errorf("worker-0's drift: %+v", n.Drift)
		}
	}
	w0, w1 := c.name("worker-0"), c.name("worker-1")
	if want := map[string]string{w0: "worker drifted", w1: "worker clean"}; !rep.Drifted || got[w0] != want[w0] || got[w1] != want[w1] {
		t.Errorf("drift as mcp-drift: nodes %v, want %v\n%s", got, want, out)
	}

	// With the same credentials: what drift reads is allowed; every write, and what drift
	// does not read, is refused.
	cs := clientFrom(t, kc)
	for _, ch := range []struct {
		verb, group, resource, name, ns string
		allowed                         bool
	}{
		{"list", "", "nodes", "", "", true}, {"get", "", "secrets", protocol.StateSecret, c.stateNS, true},
		{"list", "", "secrets", "", c.stateNS, true},
		{"get", "", "nodes", w0, "", false}, {"watch", "", "nodes", "", "", false},
		{"patch", "", "nodes", w0, "", false}, {"update", "", "nodes", w0, "", false},
		{"patch", "", "nodes/status", w0, "", false}, {"delete", "", "nodes", w0, "", false},
		{"create", "", "secrets", "", c.stateNS, false}, {"update", "", "secrets", protocol.StateSecret, c.stateNS, false},
		{"patch", "", "secrets", protocol.StateSecret, c.stateNS, false}, {"delete", "", "secrets", protocol.StateSecret, c.stateNS, false},
		{"watch", "", "secrets", "", c.stateNS, false}, {"get", "", "secrets", "", "kube-system", false},
		{"create", "coordination.k8s.io", "leases", "", c.stateNS, false}, {"update", "coordination.k8s.io", "leases", "mcp-state-lock", c.stateNS, false},
		// Nothing of mcp-system's Secrets: the boot server's TLS key and token, the command checks.
		{"list", "", "secrets", "", "mcp-system", false}, {"get", "", "secrets", "mcp-server-tls", "mcp-system", false},
		{"get", "", "secrets", "mcp-server-token", "mcp-system", false}, {"get", "", "secrets", protocol.HealthSecret, "mcp-system", false},
		{"list", "", "pods", "", "", false}, {"create", "", "pods/eviction", "", "default", false},
		{"list", "policy", "poddisruptionbudgets", "", "", false}, {"patch", "machine.openshift.io", "machinesets", "", "openshift-machine-api", false},
	} {
		if got := selfCanNamed(t, cs, ch.verb, ch.group, ch.resource, ch.name, ch.ns); got != ch.allowed {
			t.Errorf("mcp-drift: %s %s/%s %s in %q: allowed=%v, want %v", ch.verb, ch.group, ch.resource, ch.name, ch.ns, got, ch.allowed)
		}
	}
	// And the apiserver agrees when it is tried: a real patch of a Node is refused, and so
	// is reading the boot server's token or listing mcp-system's Secrets.
	_, err = cs.CoreV1().Nodes().Patch(ctx, w1, types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("mcp-drift patching a Node: %v, want Forbidden", err)
	}
	if _, err := cs.CoreV1().Secrets("mcp-system").Get(ctx, "mcp-server-token", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("mcp-drift getting Secret mcp-system/mcp-server-token: %v, want Forbidden", err)
	}
	if _, err := cs.CoreV1().Secrets("mcp-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("mcp-drift listing the Secrets of mcp-system: %v, want Forbidden", err)
	}
}
