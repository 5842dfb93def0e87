package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

// fleetBase is a configuration of clusters, written once: a variable, a pool, a config.
const fleetBase = `variable "ntp" { default = "ntp.default" }
pool "worker" {}
config "chrony" {
  pools = ["worker"]
  file "/etc/chrony.conf" { content = "server ${var.ntp}" }
}
`

// fleetClusters is three clusters in two stages, with per-cluster values.
const fleetClusters = `stage "prod" {
  after               = ["canary"]
  soak                = "4h"
  max_failed_clusters = 1
  approval            = true
  concurrency         = 2
}
stage "canary" { soak = "2h" }
cluster "prod-b" {
  stage = "prod"
  provider "local" { fleet = "prod-b/fleet" }
  state { path = "prod-b/mcp.state" }
}
cluster "prod-a" {
  stage = "prod"
  provider "local" { fleet = "prod-a/fleet" }
  state { path = "prod-a/mcp.state" }
  variables = { ntp = "ntp.prod-a" }
}
cluster "canary" {
  stage     = "canary"
  variables = { ntp = "ntp.canary" }
  provider "local" { fleet = "canary/fleet" }
  state { path = "canary/mcp.state" }
}
`

func TestClustersInStageOrder(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "base.hcl", fleetBase)
	write(t, dir, "clusters.hcl", fleetClusters)
	res, diags := Load(dir, Options{Schemas: testSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if res.Desired != nil {
		t.Errorf("a fleet loaded without a cluster has a Desired: %+v", res.Desired)
	}
	var got []string
	for _, c := range res.Clusters {
		got = append(got, c.Stage+"/"+c.Name)
	}
	if diff := cmp.Diff([]string{"canary/canary", "prod/prod-a", "prod/prod-b"}, got); diff != "" {
		t.Errorf("clusters in stage order (-want +got):\n%s", diff)
	}
	if s := res.Stages; len(s) != 2 || s[0].Name != "canary" || s[1].Soak != 4*time.Hour ||
		s[0].Concurrency != 1 || s[0].MaxFailedClusters != 0 || s[0].Approval ||
		s[1].Concurrency != 2 || s[1].MaxFailedClusters != 1 || !s[1].Approval {
		t.Errorf("stages = %+v", s)
	}
	if r := res.Clusters[1].Values["ntp"]; filepath.Base(r.Filename) != "clusters.hcl" || r.Start.Line != 18 {
		t.Errorf("prod-a's ntp value at %+v, want clusters.hcl:18", r)
	}
}

// Each cluster loads with its own provider, state and values; -var wins over a cluster's
// value, which wins over var files and the environment.
func TestClusterLoadAndPrecedence(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "base.hcl", fleetBase)
	write(t, dir, "clusters.hcl", fleetClusters)
	write(t, dir, "vars.hcl.in", `ntp = "file"`)
	content := func(cluster string, opts Options) string {
		t.Helper()
		opts.Schemas, opts.Cluster = testSchemas, cluster
		res, diags := Load(dir, opts)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		if f := res.Desired.Provider.Settings.Str("fleet"); !strings.HasSuffix(f, cluster+"/fleet") {
			t.Errorf("cluster %s: provider fleet %q", cluster, f)
		}
		if p := res.Desired.State.Settings.Str("path"); !strings.HasSuffix(p, cluster+"/mcp.state") {
			t.Errorf("cluster %s: state path %q", cluster, p)
		}
		return string(res.Desired.Configs[0].Files[0].Contents)
	}
	for _, c := range []struct {
		cluster string
		opts    Options
		want    string
	}{
		{"canary", Options{}, "server ntp.canary"},
		{"prod-b", Options{}, "server ntp.default"},
		{"prod-a", Options{Environ: []string{"MCP_VAR_ntp=env"}, VarFiles: []string{filepath.Join(dir, "vars.hcl.in")}}, "server ntp.prod-a"},
		{"prod-b", Options{VarFiles: []string{filepath.Join(dir, "vars.hcl.in")}}, "server file"},
		{"prod-a", Options{Vars: []string{"ntp=flag"}}, "server flag"},
	} {
		if got := content(c.cluster, c.opts); got != c.want {
			t.Errorf("cluster %s with %+v: %q, want %q", c.cluster, c.opts, got, c.want)
		}
	}
}

func TestClusterErrorsHavePlaces(t *testing.T) {
	stages := "stage \"canary\" {}\nstage \"prod\" { after = [\"canary\"] }\n"
	ok := "  provider \"local\" { fleet = \"f\" }\n  state { path = \"s\" }\n"
	in := func(stage string) string { return "cluster \"c\" {\n  stage = \"" + stage + "\"\n" + ok + "}\n" }
	labeled := "cluster \"c\" {\n  stage = \"prod\"\n  labels = { region = \"eu\" }\n" + ok + "}\n"
	for _, c := range []struct {
		name, src, summary string
		line, col          int
	}{
		{"unknown stage", stages + "cluster \"a\" {\n  stage = \"prd\"\n" + ok + "}\n", "Unknown stage", 4, 11},
		{"unknown after", "stage \"prod\" { after = [\"canry\"] }\n" + in("prod"), "Unknown stage", 1, 24},
		{"cycle", "stage \"a\" { after = [\"b\"] }\nstage \"b\" { after = [\"a\"] }\n" + in("a"), "Cycle in stage order", 1, 21},
		{"no stage", stages + "cluster \"a\" {\n" + ok + "}\n", "Cluster without a stage", 3, 9},
		{"duplicate", stages + "cluster \"a\" {\n  stage = \"prod\"\n" + ok + "}\ncluster \"a\" {\n  stage = \"prod\"\n" + ok + "}\n", "Duplicate cluster", 8, 9},
		{"no provider", stages + "cluster \"a\" {\n  stage = \"prod\"\n  state { path = \"s\" }\n}\n", "Cluster without a provider", 3, 9},
		{"no state", stages + "cluster \"a\" {\n  stage = \"prod\"\n  provider \"local\" { fleet = \"f\" }\n}\n", "Cluster without a state block", 3, 9},
		{"top-level provider", stages + "provider \"local\" { fleet = \"f\" }\ncluster \"a\" {\n  stage = \"prod\"\n" + ok + "}\n", "Top-level provider block beside cluster blocks", 3, 1},
		{"bad soak", "stage \"canary\" { soak = \"2 hours\" }\n" + in("canary"), "Invalid soak", 1, 25},
		{"labels not strings", stages + "cluster \"a\" {\n  stage = \"prod\"\n  labels = { region = [\"eu\"] }\n" + ok + "}\n", "Invalid labels", 5, 23},
		{"domain of no label", stages + "failure_domain \"regoin\" {\n  max_disrupting = 1\n}\n" + labeled, "Unknown cluster label", 3, 16},
		{"max_disrupting 0", stages + "failure_domain \"region\" {\n  max_disrupting = 0\n}\n" + labeled, "Invalid max_disrupting", 4, 20},
		{"no max_disrupting", stages + "failure_domain \"region\" {}\n" + labeled, "Missing required argument", 3, 25},
		{"duplicate domain", stages + "failure_domain \"region\" {\n  max_disrupting = 1\n}\nfailure_domain \"region\" {\n  max_disrupting = 2\n}\n" + labeled, "Duplicate failure_domain", 6, 16},
		{"domain alone", "failure_domain \"region\" {\n  max_disrupting = 1\n}\n", "Failure domain without clusters", 1, 1},
		{"approval not a bool", "stage \"prod\" {\n  approval = \"yes\"\n}\n" + in("prod"), "Invalid approval", 2, 14},
		{"concurrency 0", "stage \"prod\" {\n  concurrency = 0\n}\n" + in("prod"), "Invalid concurrency", 2, 17},
		{"max_failed_clusters 1.5", "stage \"prod\" {\n  max_failed_clusters = 1.5\n}\n" + in("prod"), "Invalid max_failed_clusters", 2, 25},
		{"stage alone", "stage \"prod\" {}\n", "Stage without clusters", 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			diagAt(t, "pool \"worker\" {}\n", c.src, c.summary, c.line, c.col)
		})
	}
}

// A cluster's labels and the failure domains budgeting by them are read into the result.
func TestFailureDomains(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "base.hcl", fleetBase)
	write(t, dir, "main.hcl", "stage \"s\" {}\nfailure_domain \"region\" {\n  max_disrupting = 2\n}\n"+
		"cluster \"a\" {\n  stage = \"s\"\n  labels = { region = \"eu\", rack = \"r1\" }\n  provider \"local\" { fleet = \"f\" }\n  state { path = \"s\" }\n}\n")
	res, diags := Load(dir, Options{Schemas: testSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if len(res.Clusters) != 1 || !cmp.Equal(res.Clusters[0].Labels, map[string]string{"region": "eu", "rack": "r1"}) {
		t.Errorf("clusters %+v", res.Clusters)
	}
	if len(res.FailureDomains) != 1 || res.FailureDomains[0].Label != "region" || res.FailureDomains[0].MaxDisrupting != 2 {
		t.Errorf("failure domains %+v", res.FailureDomains)
	}
}

func TestClusterValueForUndeclaredVariable(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "base.hcl", fleetBase)
	write(t, dir, "main.hcl", "stage \"s\" {}\ncluster \"a\" {\n  stage = \"s\"\n  provider \"local\" { fleet = \"f\" }\n  state { path = \"s\" }\n  variables = { ntpp = \"x\" }\n}\n")
	_, diags := Load(dir, Options{Schemas: testSchemas, Cluster: "a"})
	if len(diags) != 1 || diags[0].Summary != "Undeclared variable" || diags[0].Subject == nil ||
		diags[0].Subject.Start.Line != 6 || diags[0].Subject.Start.Column != 17 || !strings.Contains(diags[0].Detail, `"ntp"`) {
		t.Fatalf("diags = %v", diags)
	}
	if _, diags = Load(dir, Options{Schemas: testSchemas, Cluster: "b"}); !diags.HasErrors() || diags[0].Summary != "Unknown cluster" {
		t.Errorf("unknown cluster: %v", diags)
	}
}

// Stages form a DAG: two prod regions after staging are in no order between them, and
// each comes after everything it names, whatever the order of declaration.
func TestStageDAGOrder(t *testing.T) {
	got, cycle := orderStages([]model.Stage{
		{Name: "prod-us", After: []string{"staging"}}, {Name: "prod-eu", After: []string{"staging"}},
		{Name: "staging", After: []string{"canary"}}, {Name: "canary"}, {Name: "last", After: []string{"prod-eu", "prod-us"}},
	})
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
	}
	if cycle != nil || !cmp.Equal(names, []string{"canary", "staging", "prod-us", "prod-eu", "last"}) {
		t.Errorf("order %v, cycle %v", names, cycle)
	}
	_, cycle = orderStages([]model.Stage{{Name: "a"}, {Name: "b", After: []string{"a", "d"}}, {Name: "c", After: []string{"b"}}, {Name: "d", After: []string{"c"}}})
	if !cmp.Equal(cycle, []string{"b", "d", "c", "b"}) {
		t.Errorf("cycle %v", cycle)
	}
}
