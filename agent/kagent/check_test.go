package kagent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/nodeexec"
)

const ns = "mcp-system"

// checksSecret is HealthSecret holding pc.
func checksSecret(t *testing.T, pc protocol.PoolChecks) *corev1.Secret {
	t.Helper()
	b, err := pc.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: protocol.HealthSecret, Namespace: ns},
		Data: map[string][]byte{protocol.HealthKey: b}}
}

// checkAgent is an agent with a Checker on client's Secrets of ns; marker is a file that
// any of the test's "dangerous" commands would create.
func checkAgent(t *testing.T, client *fake.Clientset) (a *Agent, root, marker string) {
	t.Helper()
	a, root = newAgent(t, client, "", &nodeexec.RecordingHost{})
	a.Checks = &Checker{Secrets: client.CoreV1().Secrets(ns), Namespace: ns}
	return a, root, filepath.Join(t.TempDir(), "ran")
}

func request(t *testing.T, client *fake.Clientset, pool, check, id string, extra map[string]any) *corev1.Node {
	t.Helper()
	ann, err := protocol.CheckRun{Pool: pool, Check: check, RunID: id}.Annotations()
	if err != nil {
		t.Fatal(err)
	}
	if extra != nil { // what a hostile patch of the Node could add
		var m map[string]any
		json.Unmarshal([]byte(ann[protocol.CheckRequest]), &m)
		for k, v := range extra {
			m[k] = v
		}
		b, _ := json.Marshal(m)
		ann[protocol.CheckRequest] = string(b)
	}
	body, _ := protocol.AnnotationsPatch(ann)
	n, err := client.CoreV1().Nodes().Patch(context.Background(), nodeName, types.MergePatchType, body, metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func report(t *testing.T, client *fake.Clientset) protocol.CheckReport {
	t.Helper()
	r, ok := protocol.ReadCheckReport(getNode(t, client).Annotations)
	if !ok {
		t.Fatal("no check report on the node")
	}
	return r
}

// TestCheckRunsTheSecretsCommand: the agent runs the command the Secret holds for the
// named check, in the node's root, and answers with its exit code and output under the
// run id; a run id answered is not run again, a new one is.
func TestCheckRunsTheSecretsCommand(t *testing.T) {
	client, _ := cluster(t, nil)
	a, root, _ := checkAgent(t, client)
	client.Tracker().Add(checksSecret(t, protocol.PoolChecks{"worker": {{Name: "not-broken", Timeout: "10s",
		Command: []string{"/bin/sh", "-c", `test ! -e "$MCP_NODE_ROOT/etc/broken" || { echo "$MCP_NODE: broken"; exit 1; }`}}}}))
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.WriteFile(filepath.Join(root, "etc/broken"), nil, 0o644)
	ctx := context.Background()

	if !a.Check(ctx, request(t, client, "worker", "not-broken", "run1", nil)) {
		t.Fatal("the request was not answered")
	}
	if r := report(t, client); r.RunID != "run1" || r.Check != "not-broken" || r.ExitCode != 1 || r.Output != nodeName+": broken\n" || r.Error != "" {
		t.Errorf("report %+v, want run1 exiting 1 with the node's output", r)
	}
	if a.Check(ctx, getNode(t, client)) {
		t.Error("an answered run was run again")
	}
	os.Remove(filepath.Join(root, "etc/broken"))
	a.Check(ctx, request(t, client, "worker", "not-broken", "run2", nil))
	if r := report(t, client); r.RunID != "run2" || !r.Passed() {
		t.Errorf("report %+v, want run2 passed", r)
	}
}

// TestCheckRunsNothingTheSecretLacks: the security property. A Node annotation can only
// name a check; one that the Secret does not hold for that pool — a name of another pool,
// a made-up one, one carrying a command of its own — runs nothing and is answered with an
// error.
func TestCheckRunsNothingTheSecretLacks(t *testing.T) {
	client, _ := cluster(t, nil)
	a, _, marker := checkAgent(t, client)
	touch := []string{"/bin/sh", "-c", "echo ran > " + marker}
	client.Tracker().Add(checksSecret(t, protocol.PoolChecks{
		"worker": {{Name: "ok", Command: []string{"/bin/true"}, Timeout: "10s"}},
		"infra":  {{Name: "touch", Command: touch, Timeout: "10s"}},
	}))
	ctx := context.Background()
	for i, req := range []struct {
		pool, check string
		extra       map[string]any
		want        string
	}{
		{"worker", "touch", nil, `pool "worker" has no command check "touch" in Secret mcp-health-checks: nothing run`},
		{"worker", "made-up", map[string]any{"command": touch}, `pool "worker" has no command check "made-up"`},
		{"db", "ok", nil, `pool "db" has no command check "ok"`},
		{"worker", "bad\nname", nil, "not run: annotation mcpfleet.io/check-request"},
	} {
		id := "evil" + string(rune('a'+i))
		var n *corev1.Node
		if strings.Contains(req.check, "\n") { // not what the engine writes: patched raw
			body, _ := protocol.AnnotationsPatch(map[string]string{protocol.CheckRequest: `{"pool":"worker","check":"bad\nname","run_id":"` + id + `"}`})
			n, _ = client.CoreV1().Nodes().Patch(ctx, nodeName, types.MergePatchType, body, metav1.PatchOptions{})
		} else {
			n = request(t, client, req.pool, req.check, id, req.extra)
		}
		if !a.Check(ctx, n) {
			t.Fatalf("%s/%s: not answered", req.pool, req.check)
		}
		r := report(t, client)
		if r.RunID != id || r.Passed() || r.ExitCode != -1 || !strings.Contains(r.Error, req.want) {
			t.Errorf("%s/%s: report %+v, want run %s answered %q", req.pool, req.check, r, id, req.want)
		}
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("a command ran (%s exists: %v)", marker, err)
	}
}

// TestCheckSecretUnreadable: an agent that may not read the Secret, or finds none, runs
// nothing and says why.
func TestCheckSecretUnreadable(t *testing.T) {
	client, _ := cluster(t, nil)
	a, _, _ := checkAgent(t, client)
	ctx := context.Background()
	a.Check(ctx, request(t, client, "worker", "ok", "r1", nil))
	if r := report(t, client); !strings.Contains(r.Error, "Secret mcp-system/mcp-health-checks does not exist") {
		t.Errorf("no Secret: report %+v", r)
	}
	client.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, protocol.HealthSecret, nil)
	})
	a.Check(ctx, request(t, client, "worker", "ok", "r2", nil))
	if r := report(t, client); r.RunID != "r2" || !strings.Contains(r.Error, "forbidden") || !strings.Contains(r.Error, "deploy/02-rbac-agent.yaml") {
		t.Errorf("forbidden: report %+v", r)
	}
	a.Checks = nil
	a.Check(ctx, request(t, client, "worker", "ok", "r3", nil))
	if r := report(t, client); r.RunID != "r3" || !strings.Contains(r.Error, "without access") {
		t.Errorf("no checker: report %+v", r)
	}
}

// TestRunAnswersChecks: the agent's loop answers a request written while it runs.
func TestRunAnswersChecks(t *testing.T) {
	client, _ := cluster(t, nil)
	a, _, _ := checkAgent(t, client)
	client.Tracker().Add(checksSecret(t, protocol.PoolChecks{"worker": {{Name: "ok", Command: []string{"/bin/sh", "-c", "echo fine"}, Timeout: "10s"}}}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	request(t, client, "worker", "ok", "loop1", nil)
	ann := waitFor(t, client, "the check's answer", func(ann map[string]string) bool {
		r, ok := protocol.ReadCheckReport(ann)
		return ok && r.RunID == "loop1"
	})
	if r, _ := protocol.ReadCheckReport(ann); !r.Passed() || r.Output != "fine\n" {
		t.Errorf("report %+v", r)
	}
}
