package ci_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// yamlDoc reads one of the CI files as a map.
func yamlDoc(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return doc
}

// at is the value at path in a YAML document (map keys and list indexes), nil if none.
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// exampleClusters are the cluster blocks of examples/fleet, in their order.
func exampleClusters(t *testing.T) []any {
	b, err := os.ReadFile("../fleet/clusters.hcl")
	if err != nil {
		t.Fatal(err)
	}
	var out []any
	for _, m := range regexp.MustCompile(`(?m)^cluster "([^"]+)"`).FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
	}
	return out
}

// mcpCode runs mcp -chdir=dir args… and returns its exit code and output.
func mcpCode(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	out, err := exec.Command(mcpBin, append([]string{"-chdir=" + dir}, args...)...).CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// fleetCopy copies examples/fleet with its three clusters' local fleets created.
func fleetCopy(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "fleet")
	if err := os.CopyFS(dir, os.DirFS("../fleet")); err != nil {
		t.Fatal(err)
	}
	for _, c := range exampleClusters(t) {
		run(t, dir, "fleet", "init", "-nodes", "worker=2", filepath.Join("clusters", c.(string), "fleet"))
	}
	return dir
}

// Both ways of applying a configuration of clusters from CI are there, in both files:
// one job across clusters (`mcp apply`, exit 2 — a promotion that waits — not a failure,
// a manual way into a stage with approval), and a matrix of one job per cluster of
// examples/fleet (`mcp apply -cluster NAME`). Run on examples/fleet as the jobs run them:
// the one job applies canary and waits for its soak (exit 2); the matrix's canary job
// applies it, and the later stages' jobs are refused by the soak gate, changing nothing.
func TestCIApplyJobs(t *testing.T) {
	const across, one = "apply -auto-approve -no-color -lock-timeout=5m", "-auto-approve -no-color -lock-timeout=5m"
	gh := yamlDoc(t, "github/mcp-plan.yml")
	ghRun := func(job string) string {
		var s []string
		steps, _ := at(gh, "jobs", job, "steps").([]any)
		for _, st := range steps {
			r, _ := at(st, "run").(string)
			s = append(s, r)
		}
		return strings.Join(s, "\n")
	}
	if r := ghRun("apply"); !strings.Contains(r, across) || !strings.Contains(r, `-approve-stage "$APPROVE_STAGE"`) || !strings.Contains(r, `"$status" -eq 2`) {
		t.Errorf("GitHub's apply job does not run %q, with -approve-stage and exit 2 passing:\n%s", across, r)
	}
	if m, _ := at(gh, "jobs", "apply-cluster", "strategy", "matrix", "cluster").([]any); !slices.Equal(m, exampleClusters(t)) {
		t.Errorf("GitHub's matrix is %v, want examples/fleet's clusters %v", m, exampleClusters(t))
	}
	if r := ghRun("apply-cluster"); !strings.Contains(r, `apply -cluster "${{ matrix.cluster }}" `+one) {
		t.Errorf("GitHub's matrix job does not apply its cluster:\n%s", r)
	}
	gl := yamlDoc(t, "gitlab-ci.yml")
	script := func(job string) string { return strings.Join(toStrings(at(gl, job, "script")), "\n") }
	if s := script("mcp-apply"); !strings.Contains(s, across) || !slices.Equal(toStrings(at(gl, "mcp-apply", "allow_failure", "exit_codes")), []string{"2"}) {
		t.Errorf("GitLab's mcp-apply: %q, allow_failure %v", s, at(gl, "mcp-apply", "allow_failure"))
	}
	if s := script("mcp-apply-approve"); !strings.Contains(s, across+` -approve-stage "$APPROVE_STAGE"`) || at(gl, "mcp-apply-approve", "rules", 0, "when") != "manual" {
		t.Errorf("GitLab's mcp-apply-approve: %q", s)
	}
	if m, _ := at(gl, "mcp-apply-cluster", "parallel", "matrix", 0, "CLUSTER").([]any); !slices.Equal(m, exampleClusters(t)) {
		t.Errorf("GitLab's parallel:matrix is %v, want examples/fleet's clusters", m)
	}
	if s := script("mcp-apply-cluster"); !strings.Contains(s, `apply -cluster "$CLUSTER" `+one) {
		t.Errorf("GitLab's mcp-apply-cluster: %q", s)
	}

	dir := fleetCopy(t)
	if code, out := mcpCode(t, dir, strings.Fields(across)...); code != 2 || !strings.Contains(out, "Stage canary changed and soaks for 1h") {
		t.Errorf("the one job's apply: exit %d, want 2 (waiting for canary's soak)\n%s", code, out)
	}
	dir = fleetCopy(t)
	for _, c := range exampleClusters(t) {
		code, out := mcpCode(t, dir, append([]string{"apply", "-cluster", c.(string)}, strings.Fields(one)...)...)
		if want := map[bool]int{true: 0, false: 1}[c == "canary"]; code != want || (c != "canary" && !strings.Contains(out, "Not soaked")) {
			t.Errorf("the matrix job of %s: exit %d, want %d\n%s", c, code, want, out)
		}
	}
}

// toStrings is a YAML list as strings, each with its whitespace runs made one space.
func toStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, len(l))
	for i, e := range l {
		out[i] = strings.Join(strings.Fields(fmt.Sprint(e)), " ")
	}
	return out
}
