package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/providers/local"
)

// domainFleet is examples/fleet with four more prod clusters in two regions (labels
// region), prod's concurrency 4, at most one cluster per region disrupting nodes at once,
// and the motd's change a reboot (reboots of 300ms) but in prod-eu-c, where it is written
// in place: a cluster that is in a region but never held.
func domainFleet(t *testing.T) string {
	t.Helper()
	dir := exampleFleet(t, "canary", "staging", "prod")
	noSoak(t, dir)
	setStage(t, dir, "prod", "concurrency = 4")
	editFile(t, dir, "main.hcl", "    on_change = [\"none\"]\n", "    on_change = [var.motd_change]\n")
	editFile(t, dir, "main.hcl", "pool \"worker\" {", "variable \"motd_change\" {\n  default = \"reboot\"\n}\n\npool \"worker\" {")
	editFile(t, dir, "clusters.hcl", "cluster \"canary\" {", "failure_domain \"region\" {\n  max_disrupting = 1\n}\n\ncluster \"canary\" {")
	for _, c := range []struct{ name, region, extra string }{
		{"prod-eu-a", "eu", ""}, {"prod-eu-b", "eu", ""}, {"prod-eu-c", "eu", "  variables = { motd_change = \"none\" }\n"},
		{"prod-us-a", "us", ""}, {"prod-us-b", "us", ""},
	} {
		addCluster(t, dir, c.name, "prod")
		editFile(t, dir, "clusters.hcl", "cluster \""+c.name+"\" {\n", "cluster \""+c.name+"\" {\n  labels = { region = \""+c.region+"\" }\n"+c.extra)
		at := "fleet = \"./clusters/" + c.name + "/fleet\"\n"
		editFile(t, dir, "clusters.hcl", at, at+"    reboot_duration = \"300ms\"\n")
	}
	return dir
}

var domainClusters = []string{"-cluster", "prod-eu-a", "-cluster", "prod-eu-b", "-cluster", "prod-eu-c", "-cluster", "prod-us-a", "-cluster", "prod-us-b"}

// disrupted is when a cluster's nodes were first cordoned or rebooted and last came back
// (uncordon, ready), from their event logs; ok false when none was.
func disrupted(t *testing.T, dir, cluster string) (from, to time.Time, ok bool) {
	t.Helper()
	for _, e := range eventsOf(t, dir, cluster) {
		switch e.Kind {
		case local.EventCordon, local.EventDrain, local.EventReboot, local.EventNotReady:
			if !ok || e.Time.Before(from) {
				from, ok = e.Time, true
			}
		}
		switch e.Kind {
		case local.EventUncordon, local.EventReady, local.EventReboot:
			if e.Time.After(to) {
				to = e.Time
			}
		}
	}
	return from, to, ok
}

// worked is when a cluster's nodes first started working on a config, from their event logs.
func worked(t *testing.T, dir, cluster string) (first time.Time) {
	t.Helper()
	for _, e := range eventsOf(t, dir, cluster) {
		if e.Kind == local.EventWorking && (first.IsZero() || e.Time.Before(first)) {
			first = e.Time
		}
	}
	return first
}

// The plan shows the waves of prod's clusters that concurrency 4 and one disrupting
// cluster per region make, naming the region that held each back; the JSON and a saved
// plan's show carry them.
func TestFleetPlanShowsDomainWaves(t *testing.T) {
	dir := domainFleet(t)
	code, out, errOut := mcp(t, dir, append([]string{"plan", "-no-color", "-ignore-soak", "-out=fleet.plan"}, domainClusters...)...)
	if code != 0 {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	_, shown, _ := mcp(t, dir, "show", "-no-color", "fleet.plan")
	for _, want := range []string{
		"  stage prod: wave 1 prod-eu-a, prod-eu-c, prod-us-a; wave 2 prod-eu-b, prod-us-b\n",
		"    held from wave 1 by a full failure domain: prod-eu-b (region=eu), prod-us-b (region=us)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
		if !strings.Contains(shown, want) {
			t.Errorf("show of the saved plan lacks %q:\n%s", want, shown)
		}
	}
	code, out, errOut = mcp(t, dir, append([]string{"plan", "-json", "-ignore-soak"}, domainClusters...)...)
	if code != 0 {
		t.Fatalf("plan -json: exit %d\n%s", code, errOut)
	}
	var doc struct {
		Waves []struct {
			Stage string
			Waves []struct {
				Clusters []string
				Held     map[string]string
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Waves) != 1 || len(doc.Waves[0].Waves) != 2 || doc.Waves[0].Waves[0].Held["prod-eu-b"] != "region=eu" ||
		strings.Join(doc.Waves[0].Waves[1].Clusters, ",") != "prod-eu-b,prod-us-b" {
		t.Errorf("waves in JSON: %+v", doc.Waves)
	}
}

// Apply holds to the budget: never two clusters of one region had a node cordoned or
// rebooting at the same time (judged from the nodes' event logs), while the two regions
// did overlap; prod-eu-c, whose plan is in place only, was not held behind prod-eu-a.
func TestFleetApplyHoldsDomainBudget(t *testing.T) {
	dir := domainFleet(t)
	code, out, errOut := mcp(t, dir, append([]string{"apply", "-auto-approve", "-no-color", "-ignore-soak"}, domainClusters...)...)
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	type span struct{ from, to time.Time }
	got := map[string]span{}
	for _, c := range []string{"prod-eu-a", "prod-eu-b", "prod-us-a", "prod-us-b"} {
		from, to, ok := disrupted(t, dir, c)
		if !ok {
			t.Fatalf("cluster %s: no node was disrupted", c)
		}
		got[c] = span{from, to}
	}
	overlap := func(a, b string) bool { return got[a].from.Before(got[b].to) && got[b].from.Before(got[a].to) }
	for _, pair := range [][2]string{{"prod-eu-a", "prod-eu-b"}, {"prod-us-a", "prod-us-b"}} {
		if overlap(pair[0], pair[1]) {
			t.Errorf("%s (%v) and %s (%v) disrupted nodes at the same time", pair[0], got[pair[0]], pair[1], got[pair[1]])
		}
	}
	if !overlap("prod-eu-a", "prod-us-a") && !overlap("prod-eu-b", "prod-us-b") {
		t.Errorf("the regions never overlapped: %v", got)
	}
	if _, _, ok := disrupted(t, dir, "prod-eu-c"); ok {
		t.Errorf("prod-eu-c's nodes were disrupted; its plan is in place only")
	}
	if !applied(t, dir, "prod-eu-c") || !worked(t, dir, "prod-eu-c").Before(got["prod-eu-a"].to) {
		t.Errorf("prod-eu-c was held behind prod-eu-a (or not applied)")
	}
	if !strings.Contains(out, "prod-eu-b waits: its failure domain region=eu has as many clusters draining or rebooting nodes as its max_disrupting.") {
		t.Errorf("apply does not say prod-eu-b waits:\n%s", out)
	}
}
