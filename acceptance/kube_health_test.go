package acceptance

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
)

const notBrokenCommand = `["/bin/sh", "-c", "test ! -e \"$MCP_NODE_ROOT/etc/broken\" || { echo \"$MCP_NODE: /etc/broken is there\"; exit 1; }"]`

const commandCheckPools = `
pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = 1
  health_check "not-broken" {
    command = ` + notBrokenCommand + `
    timeout = "3s"
  }
}

config "50-x" {
  pools = ["worker"]
  file "/etc/x.conf" {
    content   = "x\n"
    on_change = ["none"]
  }
}
`

// TestKubeCommandHealthCheck: on a real API server, with deploy/'s RBAC, apply (as
// mcp-apply) writes the pool's command check into Secret mcp-health-checks and asks each
// node's agent (as mcp-agent) to run it by name after the node's steps. The agent runs the
// Secret's command in the node's root and answers; the node where it fails — the first of
// the rollout — is failed with the command's output, and its pool stops (max_failures 1):
// no other node starts. Fixed, the next apply finishes the pool.
func TestKubeCommandHealthCheck(t *testing.T) {
	waiting(t)
	c := newKubeCluster(t, commandCheckPools, map[string]int{"worker": 3})
	// worker-0 is the first of the rollout (zone a, then b; oldest first).
	broken := filepath.Join(c.agents["worker-0"].root, "etc", "broken")
	if err := os.WriteFile(broken, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color")
	if code == 0 {
		t.Fatalf("apply succeeded, want worker-0 to fail its command check:\n%s", out)
	}
	t.Logf("first apply:\n%s", lastLines(out, 6))
	w0 := c.name("worker-0")
	for _, want := range []string{
		`node ` + w0 + `: health gate "not-broken" did not pass: ["/bin/sh" "-c"`,
		`exit 1: ` + w0 + `: /etc/broken is there`,
		"Nodes: 0 updated, 1 failed, 2 not started",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("apply's output lacks %q:\n%s", want, lastLines(out, 30))
		}
	}
	ctx := context.Background()
	sec, err := c.env.Client.CoreV1().Secrets(c.mcpNS).Get(ctx, protocol.HealthSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the checks' Secret: %v", err)
	}
	pc, err := protocol.DecodeChecks(sec.Data[protocol.HealthKey])
	if err != nil || len(pc["worker"]) != 1 || pc["worker"][0].Name != "not-broken" || pc["worker"][0].Command[0] != "/bin/sh" {
		t.Errorf("the Secret holds %v, %v; want worker's not-broken command", pc, err)
	}
	// The Node carries the check's name and the answer, never the command.
	ann := c.node(t, "worker-0").Annotations
	if req := ann[protocol.CheckRequest]; !strings.Contains(req, `"check":"not-broken"`) || strings.Contains(req, "/bin/sh") {
		t.Errorf("check request on worker-0: %s", req)
	}
	if rep, ok := protocol.ReadCheckReport(ann); !ok || rep.ExitCode != 1 || rep.Output != w0+": /etc/broken is there\n" {
		t.Errorf("check result on worker-0: %+v, %v", rep, ok)
	}
	// The pool stopped: the other nodes were not handed anything.
	for _, name := range []string{"worker-1", "worker-2"} {
		if ann := c.node(t, name).Annotations; ann[protocol.UpdateID] != "" || ann[protocol.CheckRequest] != "" {
			t.Errorf("node %s was started after worker-0 failed its check (update %q, check %q)", name, ann[protocol.UpdateID], ann[protocol.CheckRequest])
		}
	}

	if err := os.Remove(broken); err != nil {
		t.Fatal(err)
	}
	out, code = c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color")
	if code != 0 {
		t.Fatalf("apply after the check passes: exit %d\n%s", code, lastLines(out, 30))
	}
	t.Logf("second apply:\n%s", lastLines(out, 2))
	for name := range c.agents {
		if ann := c.node(t, name).Annotations; ann[protocol.State] != "Done" || ann[protocol.CurrentConfig] != ann[protocol.DesiredConfig] {
			t.Errorf("node %s: state %q, current %q, desired %q", name, ann[protocol.State], ann[protocol.CurrentConfig], ann[protocol.DesiredConfig])
		}
		if rep, ok := protocol.ReadCheckReport(c.node(t, name).Annotations); !ok || !rep.Passed() {
			t.Errorf("node %s: last check %+v, %v; want passed", name, rep, ok)
		}
	}
	if out, code := c.mcp(t, "mcp-apply", "plan", "-no-color", "-detailed-exitcode"); code != 0 {
		t.Errorf("plan after apply: exit %d, want 0\n%s", code, lastLines(out, 20))
	}
}

// TestKubeCommandCheckNamesOnly: the security property on a real cluster. Whoever may patch
// a Node can only name a check: a request for a check the Secret does not hold for that
// pool — a made-up name carrying a command of its own, another pool's name — runs nothing,
// and the agent answers with an error under the request's run id.
func TestKubeCommandCheckNamesOnly(t *testing.T) {
	waiting(t)
	c := newKubeCluster(t, commandCheckPools, map[string]int{"worker": 1})
	if out, code := c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, lastLines(out, 30))
	}
	marker := filepath.Join(t.TempDir(), "ran")
	ctx := context.Background()
	for i, req := range []struct {
		request map[string]any
		want    string
	}{
		{map[string]any{"pool": "worker", "check": "evil", "command": []string{"/bin/sh", "-c", "touch " + marker}},
			`pool "worker" has no command check "evil" in Secret mcp-health-checks: nothing run`},
		{map[string]any{"pool": "infra", "check": "not-broken"}, `pool "infra" has no command check "not-broken"`},
		{map[string]any{"pool": "worker", "check": "not-broken\n; touch " + marker}, "not run: annotation mcpfleet.io/check-request"},
	} {
		id := "HOSTILE" + string(rune('A'+i))
		req.request["run_id"] = id
		b, _ := json.Marshal(req.request)
		body, _ := protocol.AnnotationsPatch(map[string]string{protocol.CheckRequest: string(b)})
		// As an administrator: any identity allowed to patch Nodes could write this.
		if _, err := c.env.Client.CoreV1().Nodes().Patch(ctx, c.name("worker-0"), types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		var rep protocol.CheckReport
		waitUntil(t, 30*time.Second, func() bool {
			r, ok := protocol.ReadCheckReport(c.node(t, "worker-0").Annotations)
			rep = r
			return ok && r.RunID == id
		}, func() string { return "the agent did not answer run " + id })
		if rep.Passed() || rep.ExitCode != -1 || !strings.Contains(rep.Error, req.want) {
			t.Errorf("run %s: answer %+v, want it refused with %q", id, rep, req.want)
		}
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("a command from a Node annotation ran (%s: %v)", marker, err)
	}
}
