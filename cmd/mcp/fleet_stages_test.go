package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// editFile replaces old with new in dir's file name, once; old must be there.
func editFile(t *testing.T, dir, name, old, new string) {
	t.Helper()
	p := filepath.Join(dir, name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %q", name, old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// setStage adds the attributes attrs (HCL lines) to the stage block of clusters.hcl.
func setStage(t *testing.T, dir, stage, attrs string) {
	t.Helper()
	editFile(t, dir, "clusters.hcl", "stage \""+stage+"\" {\n", "stage \""+stage+"\" {\n  "+attrs+"\n")
}

// slowClusters makes the example's change reboot the nodes (the motd's on_change left to
// its default), each reboot of the clusters named taking reboot.
func slowClusters(t *testing.T, dir, reboot string, names ...string) {
	t.Helper()
	editFile(t, dir, "main.hcl", "    on_change = [\"none\"]\n", "")
	for _, n := range names {
		at := "fleet = \"./clusters/" + n + "/fleet\"\n"
		editFile(t, dir, "clusters.hcl", at, at+"    reboot_duration = \""+reboot+"\"\n")
	}
}

// span is when a cluster's nodes were first and last touched, from their event logs.
func span(t *testing.T, dir, cluster string) (first, last time.Time) {
	t.Helper()
	for _, e := range eventsOf(t, dir, cluster) {
		if first.IsZero() || e.Time.Before(first) {
			first = e.Time
		}
		if e.Time.After(last) {
			last = e.Time
		}
	}
	return first, last
}

// A stage's clusters run up to its concurrency at once: prod's two clusters, each with
// reboots that take a while, are updated at the same time (judged from their nodes' event
// logs), each line of their progress prefixed with the cluster's name.
func TestFleetStageConcurrency(t *testing.T) {
	dir := exampleFleet(t, "canary", "staging", "prod")
	noSoak(t, dir)
	addCluster(t, dir, "prod-b", "prod")
	setStage(t, dir, "prod", "concurrency = 2")
	slowClusters(t, dir, "500ms", "prod", "prod-b")
	code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color")
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	for _, c := range []string{"canary", "staging", "prod", "prod-b"} {
		if !applied(t, dir, c) {
			t.Errorf("cluster %s not applied", c)
		}
	}
	aFirst, aLast := span(t, dir, "prod")
	bFirst, bLast := span(t, dir, "prod-b")
	if !aFirst.Before(bLast) || !bFirst.Before(aLast) {
		t.Errorf("prod (%s–%s) and prod-b (%s–%s) were not updated at the same time", aFirst, aLast, bFirst, bLast)
	}
	_, stagingLast := span(t, dir, "staging")
	if !stagingLast.Before(aFirst) || !stagingLast.Before(bFirst) {
		t.Errorf("prod started before staging was done")
	}
	for _, want := range []string{"\nprod: applying (stage prod)\n", "\nprod-b: applying (stage prod)\n", "\nprod-b: Apply complete!"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if regexp.MustCompile(`(?m)^(prod|prod-b): .*(prod|prod-b): `).MatchString(out) {
		t.Errorf("lines of the two clusters are mixed on one line:\n%s", out)
	}
}

// unhealthyGate gives the example's pool a health gate that fails on a node whose root
// holds /etc/unhealthy, and marks worker-0 of each cluster named so.
func unhealthyGate(t *testing.T, dir string, clusters ...string) {
	t.Helper()
	editFile(t, dir, "main.hcl", "  max_unavailable = 1\n", "  max_unavailable = 1\n\n  health_check \"ready\" {\n"+
		"    command = [\"/bin/sh\", \"-c\", \"test ! -e \\\"$MCP_NODE_ROOT/etc/unhealthy\\\"\"]\n    timeout = \"1s\"\n  }\n")
	for _, c := range clusters {
		if err := os.WriteFile(filepath.Join(dir, "clusters", c, "fleet", "nodes", "worker-0", "root", "etc", "unhealthy"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A stage's max_failed_clusters lets promotion go on past that many failed clusters: a
// staging cluster whose node fails its health gate counts as failed; staging's other
// cluster goes on, prod is promoted, and the apply exits 1 naming the failed cluster.
// One failure more than the budget stops promotion: prod is never touched.
func TestFleetMaxFailedClusters(t *testing.T) {
	for _, c := range []struct {
		name    string
		failing []string
		prod    bool
		want    []string
	}{
		{"within", []string{"stage-a"}, true, []string{
			"Stage staging: 1 of its clusters failed, within its max_failed_clusters (1): promotion goes on.",
			"Error: Clusters failed", "cluster stage-a (stage staging): its apply failed",
			`health gate "ready" did not pass`}},
		{"over", []string{"stage-a", "staging"}, false, []string{
			"Stopped at stage staging: 2 of its clusters failed, more than its max_failed_clusters (1): cluster stage-a (stage staging): its apply failed; cluster staging (stage staging): its apply failed; see above.",
			"Not started: prod (stage prod)."}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := exampleFleet(t, "canary", "staging", "prod")
			noSoak(t, dir)
			addCluster(t, dir, "stage-a", "staging")
			setStage(t, dir, "staging", "max_failed_clusters = 1")
			unhealthyGate(t, dir, c.failing...)
			code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color")
			msg := flat(out + errOut)
			for _, w := range c.want {
				if !strings.Contains(msg, flat(w)) {
					t.Errorf("output lacks %q", w)
				}
			}
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if t.Failed() {
				t.Logf("%s%s", out, errOut)
			}
			if applied(t, dir, "prod") != c.prod {
				t.Errorf("prod applied %v, want %v", applied(t, dir, "prod"), c.prod)
			}
			if c.prod && !applied(t, dir, "staging") {
				t.Error("staging, whose nodes pass their gates, not applied")
			}
		})
	}
}

// A stage with approval stops promotion before it, saying what waits and the command that
// goes on; that command goes on (the soak gate still asked), and once the stage has
// nothing to change, it stops there no more. -approve-stage takes only stages with
// approval, and is refused for an apply of one cluster.
func TestFleetApprovalStopsBeforeStage(t *testing.T) {
	dir := exampleFleet(t, "canary", "staging", "prod")
	noSoak(t, dir)
	setStage(t, dir, "prod", "approval = true")
	code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color")
	if code != 2 || !strings.Contains(out, "Stage prod waits for approval (approval = true): its clusters prod have changes planned") ||
		!strings.Contains(out, ": mcp apply -approve-stage prod\nNot started: prod (stage prod).") {
		t.Fatalf("apply: exit %d, want 2 and the stop\n%s%s", code, out, errOut)
	}
	if !applied(t, dir, "staging") || applied(t, dir, "prod") {
		t.Fatalf("want canary and staging applied, prod not")
	}
	for _, bad := range [][]string{{"-approve-stage", "staging"}, {"-approve-stage", "prd"}, {"-approve-stage", "prod", "-cluster", "prod"}} {
		if code, out, errOut := mcp(t, dir, append([]string{"apply", "-auto-approve", "-no-color"}, bad...)...); code != 1 || !strings.Contains(errOut, "-approve-stage") || strings.Contains(out, "Fleet:") {
			t.Errorf("apply %v: exit %d, want it refused before any plan\n%s%s", bad, code, out, errOut)
		}
	}
	if applied(t, dir, "prod") {
		t.Fatal("a refused -approve-stage applied prod")
	}
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color", "-approve-stage", "prod"); code != 0 || !applied(t, dir, "prod") {
		t.Fatalf("apply -approve-stage prod: exit %d, prod applied %v\n%s%s", code, applied(t, dir, "prod"), out, errOut)
	}
	// A new change needs a new approval; a stage with nothing to change does not stop.
	editFile(t, dir, "main.hcl", "driftfile /var/lib/chrony/drift", "driftfile /var/lib/chrony/drift2")
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 2 || !strings.Contains(out, "Stage prod waits for approval") {
		t.Errorf("apply of a new change: exit %d, want the stop before prod again\n%s%s", code, out, errOut)
	}
	if strings.Contains(nodeFile(t, dir, "prod", "worker-0", "etc/chrony.conf"), "drift2") {
		t.Error("prod took the new change without a new approval")
	}
	editFile(t, dir, "main.hcl", "driftfile /var/lib/chrony/drift2", "driftfile /var/lib/chrony/drift")
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 || strings.Contains(out, "waits for approval") {
		t.Errorf("apply with prod unchanged: exit %d\n%s%s", code, out, errOut)
	}
}
