package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// noSoak drops the stages' soak from a copy of examples/fleet: apply across clusters then
// goes through every stage in one run.
func noSoak(t *testing.T, dir string) {
	t.Helper()
	p := filepath.Join(dir, "clusters.hcl")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, regexp.MustCompile(`(?m)^\s*soak\s*=.*$`).ReplaceAll(b, nil), 0o644); err != nil {
		t.Fatal(err)
	}
}

// applied reports whether the cluster's worker nodes run the fleet's chrony.conf.
func applied(t *testing.T, dir, cluster string) bool {
	t.Helper()
	a, b := nodeFile(t, dir, cluster, "worker-0", "etc/chrony.conf"), nodeFile(t, dir, cluster, "worker-1", "etc/chrony.conf")
	if (a == "") != (b == "") {
		t.Fatalf("cluster %s is half applied: worker-0 %q, worker-1 %q", cluster, a, b)
	}
	return a != ""
}

// firstEvent is the time of the first event a node's event log records ("claim").
func firstEvent(t *testing.T, dir, cluster, node string) time.Time {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "clusters", cluster, "fleet", "nodes", node, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var ev struct{ Time time.Time }
	if err := json.Unmarshal([]byte(strings.SplitN(string(b), "\n", 2)[0]), &ev); err != nil {
		t.Fatal(err)
	}
	return ev.Time
}

// The plan across clusters shows each change once per rendered config, then what differs
// per cluster with the cluster value (file:line) that made it differ.
func TestFleetPlanGroupsChanges(t *testing.T) {
	dir := exampleFleet(t, "canary", "staging", "prod")
	code, out, errOut := mcp(t, dir, "plan", "-no-color")
	if code != 0 {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"Changes across clusters, once per rendered config:",
		"~ file /etc/motd differs:\n        canary: content ",
		"(canary: var.motd at clusters.hcl:18,17)\n        staging, prod: content ",
		"~ file /etc/chrony.conf differs:\n        canary, prod: content ",
		"(staging: var.ntp_server at clusters.hcl:30,17)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if n := regexp.MustCompile(`(?m)^    rendered-worker-[0-9a-f]+ → `).FindAllString(out, -1); len(n) != 3 {
		t.Errorf("want 3 rendered configs, one per cluster: %q", n)
	}
}

// plan -json across clusters is one document: the summary, one entry per cluster with
// that cluster's plan JSON as plan -json -cluster gives it, and the grouped changes.
func TestFleetPlanJSON(t *testing.T) {
	dir := exampleFleet(t, "canary", "staging")
	code, out, errOut := mcp(t, dir, "plan", "-json")
	if code != 1 || !strings.Contains(errOut, "Some clusters are unknown") {
		t.Fatalf("plan -json with prod missing: exit %d\n%s", code, errOut)
	}
	var doc struct {
		FormatVersion string `json:"format_version"`
		Summary       string
		Clusters      []struct {
			Name, Stage, Status, Error string
			Plan                       map[string]json.RawMessage
		}
		Changes []struct {
			Pool    string
			Differs []struct{ Item string }
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if doc.FormatVersion != "1.2" || !strings.HasPrefix(doc.Summary, "Fleet: 3 clusters, 2 changing, 0 unchanged, 1 unknown;") || len(doc.Clusters) != 3 {
		t.Fatalf("document: %+v", doc)
	}
	if c := doc.Clusters[2]; c.Name != "prod" || c.Status != "unknown" || !strings.Contains(c.Error, "is not a local fleet") || c.Plan != nil {
		t.Errorf("prod: %+v", c)
	}
	_, one, _ := mcp(t, dir, "plan", "-json", "-cluster", "staging")
	var single map[string]json.RawMessage
	if err := json.Unmarshal([]byte(one), &single); err != nil {
		t.Fatal(err)
	}
	c := doc.Clusters[1]
	if c.Name != "staging" || c.Status != "changes" || string(c.Plan["resource_changes"]) != string(single["resource_changes"]) {
		t.Errorf("staging's entry is not its plan -json: %+v", c)
	}
	if len(doc.Changes) != 1 || doc.Changes[0].Pool != "worker" || len(doc.Changes[0].Differs) != 2 {
		t.Errorf("changes: %+v", doc.Changes)
	}
}

// A saved plan across clusters is applied stage by stage, canary, staging, then prod,
// judged from each node's event log; shown again, it reads as the plan did.
func TestFleetSavedPlanAppliesInStageOrder(t *testing.T) {
	dir := exampleFleet(t, "canary", "staging", "prod")
	noSoak(t, dir)
	if code, out, errOut := mcp(t, dir, "plan", "-out=p", "-no-color"); code != 0 || !strings.Contains(out, `mcp apply "p"`) {
		t.Fatalf("plan -out: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := mcp(t, dir, "show", "-no-color", "p"); code != 0 || !strings.Contains(out, "(staging: var.ntp_server at clusters.hcl:") {
		t.Errorf("show of the saved plan: exit %d\n%s", code, out)
	}
	if code, out, _ := mcp(t, dir, "show", "-markdown", "p"); code != 0 || !strings.Contains(out, "### mcp plan across clusters") ||
		!strings.Contains(out, "(canary: var.motd at clusters.hcl:18,17)") || !strings.Contains(out, "\n## Cluster prod (stage prod)\n") {
		t.Errorf("show -markdown of the saved plan: exit %d\n%s", code, out)
	}
	if code, _, errOut := mcp(t, dir, "graph", "p"); code != 1 || !strings.Contains(flat(errOut), "it is a saved plan of several clusters") {
		t.Errorf("graph of a plan across clusters: exit %d\n%s", code, errOut)
	}
	if code, out, errOut := mcp(t, dir, "apply", "p"); code != 0 {
		t.Fatalf("apply p: exit %d\n%s%s", code, out, errOut)
	}
	for _, c := range []string{"canary", "staging", "prod"} {
		if !applied(t, dir, c) {
			t.Errorf("cluster %s not applied", c)
		}
	}
	canary, staging, prod := firstEvent(t, dir, "canary", "worker-1"), firstEvent(t, dir, "staging", "worker-0"), firstEvent(t, dir, "prod", "worker-0")
	if !canary.Before(staging) || !staging.Before(prod) {
		t.Errorf("not in stage order: canary's last node started %s, staging's first %s, prod's first %s", canary, staging, prod)
	}
}

// A cluster whose fleet changed after the saved plan is refused by name; the stage before
// it is applied, and no later stage starts.
func TestFleetSavedPlanRefusesClusterThatMovedOn(t *testing.T) {
	dir := exampleFleet(t, "canary", "staging", "prod")
	noSoak(t, dir)
	if code, _, errOut := mcp(t, dir, "plan", "-out=p"); code != 0 {
		t.Fatalf("plan -out: %s", errOut)
	}
	if code, _, errOut := mcp(t, dir, "fleet", "set", "-fleet", "clusters/staging/fleet", "worker-1", "zone=b"); code != 0 {
		t.Fatal(errOut)
	}
	code, out, errOut := mcp(t, dir, "apply", "p")
	if msg := flat(errOut); code != 1 || !strings.Contains(msg, "The fleet changed since it was made") ||
		!strings.Contains(msg, "Stopped at cluster staging (stage staging): it moved on since the plan was made") || !strings.Contains(msg, "Not started: prod (stage prod).") {
		t.Fatalf("apply p after staging's fleet changed: exit %d\n%s%s", code, out, errOut)
	}
	if !applied(t, dir, "canary") || applied(t, dir, "staging") || applied(t, dir, "prod") {
		t.Errorf("canary %v, staging %v, prod %v: want only canary applied", applied(t, dir, "canary"), applied(t, dir, "staging"), applied(t, dir, "prod"))
	}
}

// A canary whose node fails stops promotion: staging and prod are never touched.
func TestFleetFailedCanaryStopsPromotion(t *testing.T) {
	dir := exampleFleet(t, "canary", "staging", "prod")
	noSoak(t, dir)
	if code, _, errOut := mcp(t, dir, "fleet", "set", "-fleet", "clusters/canary/fleet", "worker-0", "fault.write=/etc/motd"); code != 0 {
		t.Fatal(errOut)
	}
	code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color")
	if msg := flat(out + errOut); code != 1 || !strings.Contains(msg, "node worker-0: write /etc/motd: injected fault") ||
		!strings.Contains(msg, "Stopped at cluster canary (stage canary): its apply failed") ||
		!strings.Contains(msg, "Not started: staging (stage staging), prod (stage prod).") {
		t.Fatalf("apply with canary failing: exit %d\n%s%s", code, out, errOut)
	}
	for _, c := range []string{"staging", "prod"} {
		for _, n := range []string{"worker-0", "worker-1"} {
			if _, err := os.Stat(filepath.Join(dir, "clusters", c, "fleet", "nodes", n, "events.jsonl")); err == nil {
				t.Errorf("%s %s has events: it was touched", c, n)
			}
		}
		if applied(t, dir, c) {
			t.Errorf("cluster %s applied after canary failed", c)
		}
	}
}

// A stage with a soak whose clusters changed ends the apply: the next stage is named with
// the time it may go, and not started.
func TestFleetApplyStopsAfterSoakingStage(t *testing.T) {
	dir := exampleFleet(t, "canary", "staging", "prod")
	code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color")
	if code != 2 || !regexp.MustCompile(`Stage canary changed and soaks for 1h: the next stage \(staging\) may go from \d{4}-\d\d-\d\d \d\d:\d\d UTC`).MatchString(out) {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	if !applied(t, dir, "canary") || applied(t, dir, "staging") || applied(t, dir, "prod") {
		t.Errorf("want canary alone applied")
	}
	// Once canary's config has soaked (its records moved back past the 1h), canary being
	// unchanged, the next apply goes on to staging, and stops after it.
	backdate(t, dir, "canary", 2*time.Hour)
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 2 || !strings.Contains(out, "Stage staging changed and soaks for 4h") {
		t.Fatalf("second apply: exit %d\n%s%s", code, out, errOut)
	}
	if !applied(t, dir, "staging") || applied(t, dir, "prod") {
		t.Errorf("want staging applied, prod not")
	}
}

// flat is s with the box of an error message and its line breaks taken out.
func flat(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "│", "")), " ")
}

// A cluster unknown when the plan was saved stops the apply at its stage: the stages
// before it are applied, none of its stage's clusters nor those after them start.
func TestFleetSavedPlanStopsAtUnknownCluster(t *testing.T) {
	dir := exampleFleet(t, "canary", "prod")
	noSoak(t, dir)
	// stage-a, of staging's stage and before staging in it (by name), is reachable: it too waits.
	addCluster(t, dir, "stage-a", "staging")
	if code, out, errOut := mcp(t, dir, "plan", "-out=p", "-no-color"); code != 1 || !strings.Contains(out, "Saved the plan to: p") {
		t.Fatalf("plan -out with staging missing: exit %d\n%s%s", code, out, errOut)
	}
	initFleet(t, dir, "staging") // staging reachable now: the plan still holds it unknown
	code, out, errOut := mcp(t, dir, "apply", "p")
	if msg := flat(errOut); code != 1 || !strings.Contains(msg, "Stopped at stage staging: its cluster staging was unknown when the plan was made: cannot start provider") ||
		!strings.Contains(msg, "Not started: stage-a (stage staging), staging (stage staging), prod (stage prod).") {
		t.Fatalf("apply p: exit %d\n%s%s", code, out, errOut)
	}
	if !applied(t, dir, "canary") || applied(t, dir, "stage-a") || applied(t, dir, "staging") || applied(t, dir, "prod") {
		t.Errorf("want canary alone applied")
	}
}

// addCluster declares cluster name in stage (clusters.hcl orders a stage's clusters by name),
// with a local fleet of two workers.
func addCluster(t *testing.T, dir, name, stage string) {
	t.Helper()
	p := filepath.Join(dir, "clusters.hcl")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	block := fmt.Sprintf("cluster %q {\n  stage = %q\n  provider \"local\" {\n    fleet = \"./clusters/%s/fleet\"\n  }\n  state {\n    path = \"./clusters/%s/mcp.state\"\n  }\n}\n\n", name, stage, name, name)
	text := strings.Replace(string(b), `cluster "canary"`, block+`cluster "canary"`, 1)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	initFleet(t, dir, name)
}
