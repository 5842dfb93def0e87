// Package ci_test runs what examples/ci's jobs run — mcp plan -out, mcp show -json, mcp
// show -markdown, then the Rego policy over the plan JSON — with the real mcp binary on the
// quickstart, the policy evaluated by the real OPA, the plan JSON read back by Terraform's
// own terraform-json types. OPA and terraform-json are imported here only, so mcp links
// neither.
package ci_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"sigs.k8s.io/yaml"

	"github.com/mcpfleet/mcp/testkit/quickstarttest"
)

var mcpBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcp-ci-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mcpBin = filepath.Join(dir, "mcp")
	if out, err := exec.Command("go", "build", "-o", mcpBin, "../../cmd/mcp").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build mcp: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// run runs mcp -chdir=dir args… and returns its stdout; any exit but 0 fails the test.
func run(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(mcpBin, append([]string{"-chdir=" + dir}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mcp %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return out
}

// quickstart copies examples/quickstart into a temp dir, with no simulated durations.
func quickstart(t *testing.T) string {
	t.Helper()
	return quickstarttest.Copy(t, "../quickstart", "0s", "0s")
}

// ciPlan does what the CI job does: plan -out, then show -json and show -markdown of the
// saved plan. It returns the plan JSON; the markdown must be there.
func ciPlan(t *testing.T, dir string, planArgs ...string) []byte {
	t.Helper()
	run(t, dir, append([]string{"plan", "-no-color", "-out=ci.plan"}, planArgs...)...)
	js := run(t, dir, "show", "-json", "ci.plan")
	if md := run(t, dir, "show", "-markdown", "ci.plan"); !strings.HasPrefix(string(md), "### mcp plan\n") {
		t.Errorf("show -markdown:\n%s", md)
	}
	return js
}

// policy is examples/ci/policy/reboots.rego, read and compiled: a missing or broken policy
// fails the test.
func policy(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("policy/reboots.rego")
	if err != nil {
		t.Fatalf("the policy: %v", err)
	}
	return string(src)
}

// deny evaluates data.mcp.reboots.deny over planJSON with data as the policy's data.
func deny(t *testing.T, src string, planJSON []byte, data map[string]any) []string {
	t.Helper()
	var input any
	if err := json.Unmarshal(planJSON, &input); err != nil {
		t.Fatal(err)
	}
	if data == nil {
		data = map[string]any{}
	}
	q, err := rego.New(rego.Query("data.mcp.reboots.deny"), rego.Module("reboots.rego", src),
		rego.Store(inmem.NewFromObject(data))).PrepareForEval(t.Context())
	if err != nil {
		t.Fatalf("the policy does not compile: %v", err)
	}
	rs, err := q.Eval(t.Context(), rego.EvalInput(input))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		t.Fatalf("data.mcp.reboots.deny is undefined (is the package mcp.reboots?): %v", rs)
	}
	var msgs []string
	for _, m := range rs[0].Expressions[0].Value.([]any) {
		msgs = append(msgs, m.(string))
	}
	return msgs
}

func limits(perPool int, byPool map[string]any) map[string]any {
	p := map[string]any{}
	if perPool >= 0 {
		p["max_reboots_per_pool"] = perPool
	}
	if byPool != nil {
		p["max_reboots_by_pool"] = byPool
	}
	return map[string]any{"mcp_policy": p}
}

// The policy lets the quickstart's in-place NTP change through at any limit, and refuses a
// plan that reboots more of a pool than its limit, naming the pool and its nodes.
func TestRebootPolicy(t *testing.T) {
	src := policy(t)
	dir := quickstart(t)

	// The first plan reboots both infra nodes (their kernel arguments), the workers update
	// in place: within the default of 2, over a limit of 1.
	first := ciPlan(t, dir)
	if got := deny(t, src, first, nil); len(got) != 0 {
		t.Errorf("default limit: the first plan is refused: %q", got)
	}
	want := "pool infra: the plan reboots 2 nodes (infra-0, infra-1), more than the 1 allowed"
	if got := deny(t, src, first, limits(1, nil)); !slices.Equal(got, []string{want}) {
		t.Errorf("limit 1: %q, want %q", got, want)
	}
	run(t, dir, "apply", "-auto-approve", "-no-color", "ci.plan")

	// A new NTP server: a restart in place on every node, no reboot.
	inPlace := ciPlan(t, dir, "-var", "ntp_server=ntp.internal")
	if got := deny(t, src, inPlace, limits(0, nil)); len(got) != 0 {
		t.Errorf("the in-place plan is refused even at limit 0: %q", got)
	}

	// A kernel argument for the workers reboots all four.
	cfg := filepath.Join(dir, "configs.hcl")
	b, _ := os.ReadFile(cfg)
	b = append(b, "\nconfig \"80-worker-kargs\" {\n  pools       = [\"worker\"]\n  kernel_args = [\"nosmt\"]\n}\n"...)
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	reboots := ciPlan(t, dir)
	want = "pool worker: the plan reboots 4 nodes (worker-0, worker-1, worker-2, worker-3), more than the 2 allowed"
	if got := deny(t, src, reboots, nil); !slices.Equal(got, []string{want}) {
		t.Errorf("default limit: %q, want %q", got, want)
	}
	if got := deny(t, src, reboots, limits(-1, map[string]any{"worker": 4})); len(got) != 0 {
		t.Errorf("worker's own limit of 4: refused: %q", got)
	}
	if got := deny(t, src, reboots, limits(10, map[string]any{"worker": 3})); len(got) != 1 || !strings.Contains(got[0], "more than the 3 allowed") {
		t.Errorf("worker's own limit of 3 under a general 10: %q", got)
	}
}

// Terraform's own plan JSON types (terraform-json, with its format version check) read mcp's
// plan JSON: every pool and node is a resource change, with Terraform's action names.
func TestTerraformJSONReadsThePlan(t *testing.T) {
	dir := quickstart(t)
	var p tfjson.Plan // its UnmarshalJSON runs Validate: the format version must be one it reads
	if err := json.Unmarshal(ciPlan(t, dir), &p); err != nil {
		t.Fatalf("terraform-json refuses the plan JSON: %v", err)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	got := changes(p.ResourceChanges)
	want := []string{"pool.infra mcp_pool create", "pool.worker mcp_pool create",
		"node.infra-0 mcp_node update", "node.infra-1 mcp_node update", "node.worker-0 mcp_node update",
		"node.worker-2 mcp_node update", "node.worker-1 mcp_node update", "node.worker-3 mcp_node update",
		`file.infra["/etc/chrony.conf"] mcp_file create`, `file.infra["/etc/motd"] mcp_file create`,
		"kernel_args.infra mcp_kernel_args create",
		`file.worker["/etc/chrony.conf"] mcp_file create`, `file.worker["/etc/motd"] mcp_file create`,
		`file.worker["/etc/sysconfig/node-exporter"] mcp_file create`, `unit.worker["node-exporter.service"] mcp_unit create`}
	if !slices.Equal(got, want) {
		t.Errorf("resource_changes through tfjson:\n got %q\nwant %q", got, want)
	}
	if p.Complete == nil || !*p.Complete || p.Timestamp == "" || len(p.ResourceDrift) != 0 {
		t.Errorf("complete %v, timestamp %q, drift %d", p.Complete, p.Timestamp, len(p.ResourceDrift))
	}
	if v := p.Variables["ntp_server"]; v == nil || v.Value != "time.example.com" {
		t.Errorf("variables through tfjson: %v", p.Variables)
	}
	if rc := p.ResourceChanges[0]; rc.Mode != tfjson.ManagedResourceMode || rc.Change.Before != nil ||
		rc.Change.After.(map[string]any)["rendered_config"] == "" {
		t.Errorf("pool.infra: %+v %+v", rc, rc.Change)
	}
	run(t, dir, "apply", "-auto-approve", "-no-color", "ci.plan")

	// Drift on one node: a resource_drift entry, and its restore an update.
	if err := os.WriteFile(filepath.Join(dir, "fleet/nodes/worker-0/root/etc/motd"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p = tfjson.Plan{}
	if err := json.Unmarshal(ciPlan(t, dir), &p); err != nil {
		t.Fatal(err)
	}
	if got := changes(p.ResourceDrift); !slices.Equal(got, []string{"node.worker-0 mcp_node update"}) {
		t.Errorf("resource_drift through tfjson: %q", got)
	}
	for _, rc := range p.ResourceChanges {
		if want := rc.Address == "node.worker-0"; rc.Change.Actions.Update() != want {
			t.Errorf("%s: actions %v after drift on worker-0 alone", rc.Address, rc.Change.Actions)
		}
	}
}

// terraform-json reads a file's content before and after, and the sensitive maps of a
// file marked sensitive, whose content the plan JSON does not carry.
func TestTerraformJSONReadsContentAndSensitiveMaps(t *testing.T) {
	dir := quickstart(t)
	run(t, dir, "apply", "-auto-approve", "-no-color")
	cfg := filepath.Join(dir, "configs.hcl")
	b, _ := os.ReadFile(cfg)
	b = append(b, "\nconfig \"90-token\" {\n  pools = [\"worker\"]\n  file \"/etc/pki/token\" {\n"+
		"    content   = \"s3cret-token\\n\"\n    sensitive = true\n    on_change = [\"none\"]\n  }\n}\n"...)
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	js := ciPlan(t, dir, "-var", "ntp_server=ntp.internal")
	if strings.Contains(string(js), "s3cret-token") {
		t.Fatalf("the plan JSON holds the sensitive content:\n%s", js)
	}
	var p tfjson.Plan
	if err := json.Unmarshal(js, &p); err != nil {
		t.Fatal(err)
	}
	byAddr := map[string]*tfjson.ResourceChange{}
	for _, rc := range p.ResourceChanges {
		byAddr[rc.Address] = rc
	}
	chrony := byAddr[`file.worker["/etc/chrony.conf"]`]
	if chrony == nil || !chrony.Change.Actions.Update() {
		t.Fatalf("no update of file.worker[\"/etc/chrony.conf\"]: %q", changes(p.ResourceChanges))
	}
	before, after := chrony.Change.Before.(map[string]any), chrony.Change.After.(map[string]any)
	if !strings.Contains(before["content"].(string), "server time.example.com iburst") ||
		!strings.Contains(after["content"].(string), "server ntp.internal iburst") {
		t.Errorf("content through tfjson: before %q, after %q", before["content"], after["content"])
	}
	token := byAddr[`file.worker["/etc/pki/token"]`]
	if token == nil || !token.Change.Actions.Create() {
		t.Fatalf("no create of file.worker[\"/etc/pki/token\"]: %q", changes(p.ResourceChanges))
	}
	if token.Change.BeforeSensitive != false || token.Change.Before != nil {
		t.Errorf("before %v, before_sensitive %v: want null and false for a created file", token.Change.Before, token.Change.BeforeSensitive)
	}
	if as, ok := token.Change.AfterSensitive.(map[string]any); !ok || as["content"] != true {
		t.Errorf("after_sensitive %v, want {\"content\": true}", token.Change.AfterSensitive)
	}
	if a := token.Change.After.(map[string]any); a["content"] != nil || a["content_hidden"] != "sensitive" {
		t.Errorf("after %v", a)
	}
}

func changes(rcs []*tfjson.ResourceChange) []string {
	var out []string
	for _, rc := range rcs {
		var acts []string
		for _, a := range rc.Change.Actions {
			acts = append(acts, string(a))
		}
		out = append(out, rc.Address+" "+rc.Type+" "+strings.Join(acts, ","))
	}
	return out
}

// The GitHub Actions workflow and the GitLab job are YAML, and run the commands and the
// policy this test runs.
func TestCIJobs(t *testing.T) {
	for _, f := range []string{"github/mcp-plan.yml", "gitlab-ci.yml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(b, &doc); err != nil || len(doc) == 0 {
			t.Errorf("%s is not a YAML document: %v", f, err)
		}
		for _, want := range []string{"plan -no-color -out=", "show -json ", "show -markdown ",
			"policy/reboots.rego", "data.mcp.reboots.deny"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s does not run %q", f, want)
			}
		}
	}
}
