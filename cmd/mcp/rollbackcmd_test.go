package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// setContent rewrites the test fleet's main.hcl (smallFleet's) with /etc/x.conf holding
// content, on_change drain (nodes leave service, no reboot), and pool settings extra.
func setContent(t *testing.T, dir, content string, extra ...string) {
	t.Helper()
	hcl := `provider "local" {
  fleet        = "./fleet"
  node_timeout = "2s"
}

pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = 1
` + strings.Join(extra, "") + `}

config "50-x" {
  pools = ["worker"]
  file "/etc/x.conf" {
    content   = "` + content + `\n"
    on_change = ["drain"]
  }
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
}

// onConfig checks, from each node's root and node.json, that every node carries content
// and runs rendered.
func onConfig(t *testing.T, dir, content, rendered string, nodes ...string) {
	t.Helper()
	for _, name := range nodes {
		b, err := os.ReadFile(filepath.Join(dir, "fleet", "nodes", name, "root", "etc", "x.conf"))
		n := readNode(t, dir, name)
		if err != nil || string(b) != content+"\n" || n.CurrentConfig != rendered || n.Unschedulable {
			t.Errorf("%s: x.conf %q (%v), runs %s (want %q on %s), cordoned %v", name, b, err, n.CurrentConfig, content, rendered, n.Unschedulable)
		}
	}
}

// mcp rollback: a plan back to the config the pool ran before, applied by the engine
// within the budget (judged from the event logs), from a saved plan too; the configuration
// is not touched, plan and status warn, a plain plan goes forward again, until the
// configuration renders the rolled-back config, which clears the warning; prune keeps the
// history. Judged from the nodes' files and node.json.
func TestRollbackCommand(t *testing.T) {
	dir := smallFleet(t, "worker=3", "")
	nodes := []string{"worker-0", "worker-1", "worker-2"}
	setContent(t, dir, "v1")
	if code, out := applyAudited(t, dir); code != 0 {
		t.Fatalf("apply v1: exit %d\n%s", code, out)
	}
	v1 := readNode(t, dir, "worker-0").CurrentConfig
	if code, _, errOut := mcp(t, dir, "rollback", "-auto-approve", "worker"); code != 1 || !strings.Contains(errOut, "no earlier rendered config") {
		t.Errorf("rollback with no history: exit %d\n%s", code, errOut)
	}
	setContent(t, dir, "v2")
	if code, out := applyAudited(t, dir); code != 0 {
		t.Fatalf("apply v2: exit %d\n%s", code, out)
	}
	v2 := readNode(t, dir, "worker-0").CurrentConfig
	hcl, _ := os.ReadFile(filepath.Join(dir, "main.hcl"))

	if code, _, errOut := mcp(t, dir, "rollback", "-to", "rendered-worker-nope", "worker"); code != 1 ||
		!strings.Contains(errOut, "neither in pool worker") || !strings.Contains(errOut, v1) {
		t.Errorf("rollback -to unknown: exit %d, want the history and stored configs named\n%s", code, errOut)
	}
	if code, _, errOut := mcp(t, dir, "rollback", "workr"); code != 1 || !strings.Contains(errOut, `Did you mean "worker"?`) {
		t.Errorf("rollback workr: exit %d\n%s", code, errOut)
	}
	code, out, errOut := mcp(t, dir, "rollback", "-no-color", "-out", "rb.plan", "worker")
	if code != 0 || !strings.Contains(out, v2+" → "+v1) || !strings.Contains(out, "rollback:") || !strings.Contains(out, "-v2\n") {
		t.Fatalf("rollback -out: exit %d\n%s%s", code, out, errOut)
	}
	onConfig(t, dir, "v2", v2, nodes...) // saved, not applied
	if code, out := applyAudited(t, dir, "rb.plan"); code != 0 {
		t.Fatalf("apply of the rollback's plan: exit %d\n%s", code, out)
	}
	onConfig(t, dir, "v1", v1, nodes...)
	if r := judge(t, dir, map[string]int{"worker": 1}); !r.OK() || r.MaxOut["worker"] != 1 {
		t.Errorf("from the event logs:\n%s", r)
	}
	if now, _ := os.ReadFile(filepath.Join(dir, "main.hcl")); string(now) != string(hcl) {
		t.Errorf("the rollback changed main.hcl")
	}

	// The configuration still renders v2: plan warns and would go forward again; status warns.
	code, out, _ = mcp(t, dir, "plan", "-no-color", "-detailed-exitcode")
	if code != 2 || !strings.Contains(out, "pool was rolled back to "+v1+" from "+v2) || !strings.Contains(out, "goes forward again") {
		t.Errorf("plan after the rollback: exit %d\n%s", code, out)
	}
	if code, out, errOut := mcp(t, dir, "status"); code != 0 || !strings.Contains(errOut, "pool worker was rolled back to "+v1) {
		t.Errorf("status after the rollback: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := mcp(t, dir, "prune", "-dry-run"); code != 0 || !strings.Contains(out, v2) || !strings.Contains(out, "history") {
		t.Errorf("prune -dry-run does not keep %s for the history: exit %d\n%s", v2, code, out)
	}

	// The configuration renders v1 again: no warning, nothing to do.
	setContent(t, dir, "v1")
	code, out, _ = mcp(t, dir, "plan", "-no-color", "-detailed-exitcode")
	if code != 0 || strings.Contains(out, "rolled back") {
		t.Errorf("plan once the configuration agrees: exit %d\n%s", code, out)
	}
	if _, _, errOut := mcp(t, dir, "status"); strings.Contains(errOut, "rolled back") {
		t.Errorf("status once the configuration agrees:\n%s", errOut)
	}

	// A second rollback goes back to the config the pool ran before the first (v2), as
	// kubectl rollout undo does; -json shows the plan's rollback.
	code, out, errOut = mcp(t, dir, "rollback", "-json", "-out", "rb2.plan", "worker")
	if code != 0 || !regexp.MustCompile(`"rollback":\s*true`).MatchString(out) || !regexp.MustCompile(`"rendered":\s*"`+v2).MatchString(out) {
		t.Fatalf("second rollback -json: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut = mcp(t, dir, "rollback", "-auto-approve", "-json", "worker"); code != 0 || !strings.Contains(out, "Apply complete: 3 updated") {
		t.Fatalf("second rollback: exit %d\n%s%s", code, out, errOut)
	}
	onConfig(t, dir, "v2", v2, nodes...)
	if code, out, _ := mcp(t, dir, "plan", "-no-color"); code != 0 || !strings.Contains(out, "pool was rolled back to "+v2+" from "+v1) {
		t.Errorf("plan after the second rollback: exit %d\n%s", code, out)
	}
	if r := judge(t, dir, map[string]int{"worker": 1}); !r.OK() {
		t.Errorf("from the event logs:\n%s", r)
	}
}

// A pool with configs for chosen nodes is not rolled back: the history keeps the pool's
// rendered configs, not its chosen nodes', so a rollback would put the chosen node on the
// pool's config without its own. It is refused, naming the config, and no node moves.
func TestRollbackRefusesChosenNodes(t *testing.T) {
	dir := smallFleet(t, "worker=2", "")
	setContent(t, dir, "v1")
	if code, out := applyAudited(t, dir); code != 0 {
		t.Fatalf("apply v1: exit %d\n%s", code, out)
	}
	setContent(t, dir, "v2")
	f, _ := os.OpenFile(filepath.Join(dir, "main.hcl"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("config \"60-nic\" {\n  pools = [\"worker\"]\n  nodes = [\"worker-1\"]\n  file \"/etc/nic.conf\" { content = \"nic\\n\" }\n}\n")
	f.Close()
	if code, out := applyAudited(t, dir); code != 0 {
		t.Fatalf("apply v2 with a config for worker-1: exit %d\n%s", code, out)
	}
	before := []string{readNode(t, dir, "worker-0").CurrentConfig, readNode(t, dir, "worker-1").CurrentConfig}
	code, out, errOut := mcp(t, dir, "rollback", "-auto-approve", "worker")
	if code != 1 || !strings.Contains(errOut, "configs for chosen nodes (config 60-nic)") {
		t.Errorf("rollback of a pool with chosen nodes: exit %d\n%s%s", code, out, errOut)
	}
	onConfig(t, dir, "v2", before[0], "worker-0")
	onConfig(t, dir, "v2", before[1], "worker-1")
	if b, err := os.ReadFile(filepath.Join(dir, "fleet", "nodes", "worker-1", "root", "etc", "nic.conf")); err != nil || string(b) != "nic\n" {
		t.Errorf("worker-1's own file after the refused rollback: %q %v", b, err)
	}
}
