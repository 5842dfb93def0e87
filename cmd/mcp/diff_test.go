package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mcp plan, show and show -markdown print how each changed file's content changes, once
// per pool (not per node), with the reasons of the steps; show -json has the content
// before and after, as Terraform's change.before/after.
func TestPlanShowsContentDiffs(t *testing.T) {
	dir := quickstart(t)
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := mcp(t, dir, "plan", "-no-color", "-var", "ntp_server=ntp.internal", "-out=ntp.plan")
	if code != 0 {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	for want, n := range map[string]int{
		"    ~ file /etc/chrony.conf\n        @@ -1,5 +1,5 @@\n         # Written by mcp (config 50-chrony).\n" +
			"        -server time.example.com iburst\n        +server ntp.internal iburst\n": 2, // infra and worker
		"on 4 nodes (worker-0, worker-2, worker-1, worker-3):\n":                                               1,
		"    restart chronyd.service: /etc/chrony.conf changed (content); on_change restart:chronyd.service\n": 2,
	} {
		if got := strings.Count(out, want); got != n {
			t.Errorf("plan has %q %d times, want %d:\n%s", want, got, n, out)
		}
	}
	_, show, _ := mcp(t, dir, "show", "-no-color", "ntp.plan")
	if strings.Count(show, "+server ntp.internal iburst") != 2 {
		t.Errorf("show:\n%s", show)
	}
	_, md, _ := mcp(t, dir, "show", "-markdown", "ntp.plan")
	if !strings.Contains(md, "```diff\n--- /etc/chrony.conf (rendered-worker-") || !strings.Contains(md, "\n+server ntp.internal iburst\n") {
		t.Errorf("markdown:\n%s", md)
	}
	_, js, _ := mcp(t, dir, "show", "-json", "ntp.plan")
	var p struct {
		ResourceChanges []struct {
			Address string
			Change  struct{ Before, After map[string]any }
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal([]byte(js), &p); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, rc := range p.ResourceChanges {
		if rc.Address == `file.worker["/etc/chrony.conf"]` {
			found = true
			if b, a := rc.Change.Before["content"], rc.Change.After["content"]; !strings.Contains(b.(string), "server time.example.com") ||
				!strings.Contains(a.(string), "server ntp.internal") {
				t.Errorf("before %q, after %q", b, a)
			}
		}
	}
	if !found {
		t.Errorf("no file.worker[\"/etc/chrony.conf\"] in:\n%s", js)
	}
}

// A file marked sensitive = true shows in no output — plan, show and its JSON and
// Markdown, show -rendered, drift, status — neither its content nor its digest; the plan
// says it changes, and the node gets it.
func TestSensitiveFileContentIsShownNowhere(t *testing.T) {
	dir := quickstart(t)
	const secret, secret2 = "token-Zq8vX1-first", "token-Zq8vX1-second"
	cfg := filepath.Join(dir, "configs.hcl")
	add := func(content string) {
		b, _ := os.ReadFile(cfg)
		b = []byte(strings.Split(string(b), "\nconfig \"90-secret\"")[0])
		b = append(b, "\nconfig \"90-secret\" {\n  pools = [\"worker\"]\n  file \"/etc/pki/token\" {\n    content   = \""+content+"\\n\"\n"+
			"    mode      = \"0600\"\n    sensitive = true\n    on_change = [\"none\"]\n  }\n}\n"...)
		if err := os.WriteFile(cfg, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	add(secret)
	var outputs []string
	run := func(args ...string) string {
		t.Helper()
		code, out, errOut := mcp(t, dir, args...)
		if code != 0 && code != 2 {
			t.Fatalf("mcp %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		outputs = append(outputs, strings.Join(args, " ")+"\n"+out+errOut)
		return out
	}
	first := run("plan", "-no-color", "-out=first.plan")
	if !strings.Contains(first, "+ file /etc/pki/token (mode 0600, sensitive)\n        (sensitive content changed; not shown)") {
		t.Errorf("the plan does not say the sensitive file is written:\n%s", first)
	}
	run("show", "-json", "first.plan")
	run("show", "-markdown", "first.plan")
	run("show", "-rendered", "worker")
	rendered := run("show", "-rendered", "-json", "worker")
	if !strings.Contains(rendered, `(sensitive: not shown)`) {
		t.Errorf("show -rendered -json does not mark the redacted content:\n%s", rendered)
	}
	run("apply", "-auto-approve", "-no-color", "first.plan")
	if b, _ := os.ReadFile(filepath.Join(dir, "fleet/nodes/worker-0/root/etc/pki/token")); string(b) != secret+"\n" {
		t.Errorf("the node has %q", b)
	}
	add(secret2)
	second := run("plan", "-no-color", "-out=second.plan")
	if !strings.Contains(second, "~ file /etc/pki/token (sensitive)\n        (sensitive content changed; not shown)") {
		t.Errorf("second plan:\n%s", second)
	}
	js := run("show", "-json", "second.plan")
	if !strings.Contains(js, `"before_sensitive":{"content":true},"after_sensitive":{"content":true}`) {
		t.Errorf("show -json has no sensitive maps:\n%s", js)
	}
	run("show", "second.plan")
	run("show", "-markdown", "second.plan")
	// Drift on the sensitive file: reported, its digests and content hidden.
	if err := os.WriteFile(filepath.Join(dir, "fleet/nodes/worker-1/root/etc/pki/token"), []byte("token-Zq8vX1-tampered\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if d := run("drift", "-no-color"); !strings.Contains(d, "drift: /etc/pki/token: content (sensitive)") {
		t.Errorf("drift:\n%s", d)
	}
	run("drift", "-json")
	run("status", "-nodes")
	run("status", "-json")
	run("plan", "-no-color")
	run("plan", "-json")
	all := strings.Join(outputs, "\n")
	for _, leak := range []string{"token-Zq8vX1", sha256hex(secret + "\n"), sha256hex(secret2 + "\n"), sha256hex("token-Zq8vX1-tampered\n")[:16]} {
		if strings.Contains(all, leak) {
			t.Errorf("%q shows in the output:\n%s", leak, all)
		}
	}
}

// mcp drift shows how a drifted file's content differs on the node: a diff from its
// config's content to the node's.
func TestDriftShowsTheDiff(t *testing.T) {
	dir := driftFleet(t)
	p := filepath.Join(dir, "fleet/nodes/worker-1/root/etc/chrony.conf")
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), "server time.example.com iburst", "server ntp.evil.example iburst", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, out, _ := mcp(t, dir, "drift", "-no-color")
	want := "  drift: /etc/chrony.conf: content (expected "
	diff := "      @@ -1,5 +1,5 @@\n       # Written by mcp (config 50-chrony).\n      -server time.example.com iburst\n      +server ntp.evil.example iburst\n"
	if !strings.Contains(out, want) || !strings.Contains(out, diff) {
		t.Errorf("drift lacks the diff %q:\n%s", diff, out)
	}
	_, js, _ := mcp(t, dir, "drift", "-json")
	if !strings.Contains(js, `"diff":"--- /etc/chrony.conf (rendered-worker-`) || !strings.Contains(js, `(on node worker-1)\n@@ -1,5 +1,5 @@`) {
		t.Errorf("drift -json lacks the diff:\n%s", js)
	}
	_, plan, _ := mcp(t, dir, "plan", "-no-color")
	if !strings.Contains(plan, "        -server time.example.com iburst\n        +server ntp.evil.example iburst\n") {
		t.Errorf("the plan's drift note lacks the diff:\n%s", plan)
	}
}

func sha256hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
