package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/state/localstate"
)

// exampleFleet copies examples/fleet (a configuration of three clusters) into a temp dir
// and creates the local fleets of the clusters named (two worker nodes each).
func exampleFleet(t *testing.T, clusters ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fleet")
	if err := os.CopyFS(dir, os.DirFS("../../examples/fleet")); err != nil {
		t.Fatal(err)
	}
	for _, c := range clusters {
		initFleet(t, dir, c)
	}
	return dir
}

func initFleet(t *testing.T, dir, cluster string) {
	t.Helper()
	if code, _, errOut := mcp(t, dir, "fleet", "init", "-nodes", "worker=2", filepath.Join("clusters", cluster, "fleet")); code != 0 {
		t.Fatalf("fleet init %s: %s", cluster, errOut)
	}
}

// nodeFile reads a file from a node's root in a cluster's local fleet ("" when absent).
func nodeFile(t *testing.T, dir, cluster, node, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "clusters", cluster, "fleet", "nodes", node, "root", path))
	if os.IsNotExist(err) {
		return ""
	} else if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A cluster whose fleet cannot be reached is shown as unknown with its reason and the
// plan fails; the others are planned and shown, each with its own values.
func TestFleetPlanShowsUnknownCluster(t *testing.T) {
	dir := exampleFleet(t, "canary", "staging")
	// -ignore-soak: nothing has soaked yet, and this test is not about the soak gate.
	code, out, errOut := mcp(t, dir, "plan", "-no-color", "-detailed-exitcode", "-ignore-soak")
	if code != 1 || !strings.Contains(errOut, "Some clusters are unknown") {
		t.Fatalf("plan with prod's fleet missing: exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"Fleet: 3 clusters, 2 changing, 0 unchanged, 1 unknown; 4 nodes to update (0 reboot, 4 in place), 0 to adopt; 0 pools blocked.",
		"cluster prod is unknown: Cannot start provider (", "clusters.hcl:44,13): ", "clusters/prod/fleet is not a local fleet",
		"+CANARY: this node gets changes first.", "+server ntp.staging.example.com iburst",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`(?m)^ prod +prod +\? .* unknown$`).MatchString(out) {
		t.Errorf("no unknown row for prod:\n%s", out)
	}
}

// -cluster canary applies canary's nodes only, judged from every cluster's node roots;
// then the fleet's plan shows canary unchanged and the two others changing.
func TestFleetApplyOneCluster(t *testing.T) {
	dir := exampleFleet(t, "canary", "staging", "prod")
	if code, out, errOut := mcp(t, dir, "plan", "-no-color", "-detailed-exitcode", "-ignore-soak"); code != 2 {
		t.Fatalf("plan: exit %d, want 2\n%s%s", code, out, errOut)
	}
	code, _, errOut := mcp(t, dir, "apply", "-cluster", "canry")
	if code != 1 || !strings.Contains(errOut, `"canary", "staging", "prod"`) || !strings.Contains(errOut, `Did you mean "canary"?`) {
		t.Fatalf("apply -cluster canry: exit %d\n%s", code, errOut)
	}
	if code, out, errOut := mcp(t, dir, "apply", "-cluster", "canary", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply -cluster canary: exit %d\n%s%s", code, out, errOut)
	}
	for _, n := range []string{"worker-0", "worker-1"} {
		if got := nodeFile(t, dir, "canary", n, "etc/motd"); got != "CANARY: this node gets changes first.\n" {
			t.Errorf("canary %s /etc/motd = %q", n, got)
		}
		if got := nodeFile(t, dir, "canary", n, "etc/chrony.conf"); !strings.HasPrefix(got, "server time.example.com iburst") {
			t.Errorf("canary %s /etc/chrony.conf = %q", n, got)
		}
		for _, other := range []string{"staging", "prod"} {
			if got := nodeFile(t, dir, other, n, "etc/chrony.conf"); got != "" {
				t.Errorf("%s %s was touched by apply -cluster canary: /etc/chrony.conf = %q", other, n, got)
			}
		}
	}
	code, out, errOut := mcp(t, dir, "plan", "-no-color", "-detailed-exitcode", "-ignore-soak")
	if code != 2 || !strings.Contains(out, "Fleet: 3 clusters, 2 changing, 1 unchanged, 0 unknown;") ||
		!regexp.MustCompile(`(?m)^ canary +canary \(soak 1h\*\) +0 \(0 reboot\) .* no changes$`).MatchString(out) {
		t.Errorf("plan after canary's apply: exit %d\n%s%s", code, out, errOut)
	}
}

// A saved plan names its cluster: apply applies it there without -cluster, and refuses
// -cluster naming another, by name.
func TestFleetSavedPlanNamesItsCluster(t *testing.T) {
	dir := exampleFleet(t, "staging", "prod")
	if code, out, errOut := mcp(t, dir, "plan", "-cluster", "staging", "-out=p", "-no-color", "-ignore-soak"); code != 0 {
		t.Fatalf("plan -cluster staging -out: exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut := mcp(t, dir, "apply", "-cluster", "prod", filepath.Join(dir, "p"))
	if code != 1 || !strings.Contains(errOut, "the saved plan was made for cluster staging") {
		t.Fatalf("apply -cluster prod of staging's plan: exit %d\n%s", code, errOut)
	}
	if code, out, errOut := mcp(t, dir, "apply", filepath.Join(dir, "p")); code != 0 {
		t.Fatalf("apply of staging's plan: exit %d\n%s%s", code, out, errOut)
	}
	for _, n := range []string{"worker-0", "worker-1"} {
		if got := nodeFile(t, dir, "staging", n, "etc/chrony.conf"); !strings.HasPrefix(got, "server ntp.staging.example.com iburst") {
			t.Errorf("staging %s /etc/chrony.conf = %q", n, got)
		}
		if got := nodeFile(t, dir, "prod", n, "etc/chrony.conf"); got != "" {
			t.Errorf("prod %s was touched by staging's plan: /etc/chrony.conf = %q", n, got)
		}
	}
}

// A cluster whose state another run holds locked is unknown, its row naming the holder;
// the other clusters are planned.
func TestFleetPlanNamesLockHolder(t *testing.T) {
	dir := exampleFleet(t, "canary", "staging", "prod")
	holdLock(t, filepath.Join(dir, "clusters", "staging", "mcp.state"), "ci-runner@build-7")
	code, out, errOut := mcp(t, dir, "plan", "-no-color")
	if code != 1 || !regexp.MustCompile(`(?m)^ staging +staging \(soak 4h\*\) +\? .* ci-runner@build-7 +unknown$`).MatchString(out) ||
		!strings.Contains(out, "Fleet: 3 clusters, 2 changing, 0 unchanged, 1 unknown;") {
		t.Errorf("plan with staging's state locked: exit %d\n%s%s", code, out, errOut)
	}
}

// holdLock takes the local state lock at path as another apply, by who, until the test ends.
func holdLock(t *testing.T, path, who string) state.LockInfo {
	t.Helper()
	info := state.NewLockInfo("apply", "test")
	info.Who = who
	u, err := (&localstate.Local{Path: path}).Lock(context.Background(), info)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Unlock(context.Background()) })
	return info
}
