package config

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

const targetsBase = `provider "local" { fleet = "f" }
pool "worker" {}
`

// A config's nodes and node_selector, and machine blocks, read into the model with their
// selectors normalised (MAC in lower case with colons, from hyphens too).
func TestConfigTargetsAndMachinesLoad(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "base.hcl", targetsBase)
	write(t, dir, "main.hcl", `config "60-nic" {
  pools         = ["worker"]
  nodes         = ["worker-3"]
  node_selector = { "example.com/nic" = "x710" }
  file "/etc/nic.conf" { content = "x\n" }
}
machine "worker-3" {
  pool     = "worker"
  mac      = ["52-54-00-AB-CD-EF", "52:54:00:00:00:01"]
  uuid     = "4C4C4544-0042-3510-8054-B4C04F384D32"
  hostname = "worker-3.example.com"
  labels   = { "example.com/nic" = "x710" }
}
`)
	res, diags := Load(dir, Options{Schemas: testSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	c := res.Desired.Configs[0]
	if !c.Targeted() || !slices.Equal(c.Nodes, []string{"worker-3"}) || c.NodeSelector["example.com/nic"] != "x710" || c.NodesRange.Start.Line != 3 {
		t.Errorf("config target: %+v", c)
	}
	want := []model.Machine{{Name: "worker-3", Pool: "worker", MACs: []string{"52:54:00:ab:cd:ef", "52:54:00:00:00:01"},
		UUID: "4c4c4544-0042-3510-8054-b4c04f384d32", Hostname: "worker-3.example.com", Labels: map[string]string{"example.com/nic": "x710"}}}
	got := res.Desired.Machines
	for i := range got {
		got[i].DeclRange = model.Range{}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("machines (-want +got):\n%s", d)
	}
	if !c.AppliesTo("worker", "worker-3", nil) || !c.AppliesTo("worker", "other", map[string]string{"example.com/nic": "x710"}) ||
		c.AppliesTo("worker", "other", nil) || c.AppliesTo("infra", "worker-3", nil) {
		t.Error("AppliesTo: a node named or selected, in the config's pools, gets it; no other")
	}
}

// A malformed target or machine is an error at its file:line:col.
func TestConfigTargetsMalformed(t *testing.T) {
	cfg := func(attr string) string {
		return "config \"c\" {\n  pools = [\"worker\"]\n  " + attr + "\n}\n"
	}
	diagAt(t, targetsBase, cfg(`nodes = []`), "Empty nodes", 3, 11)
	diagAt(t, targetsBase, cfg(`nodes = ["ok", "Bad_Name"]`), "Invalid node name", 3, 18)
	diagAt(t, targetsBase, cfg(`node_selector = {}`), "Empty node_selector", 3, 19)
	diagAt(t, targetsBase, cfg(`node_selector = { "a/b/c" = "x" }`), "Invalid label", 3, 31)
	diagAt(t, targetsBase, "config \"c\" {\n  pools = [\"worker\"]\n  nodes = [\"w\"]\n  os_image = \"quay.io/x@sha256:"+
		"0000000000000000000000000000000000000000000000000000000000000000\"\n}\n", "OS image per pool", 4, 3)
	machine := func(body string) string { return "machine \"m-1\" {\n  pool = \"worker\"\n  " + body + "\n}\n" }
	diagAt(t, targetsBase, machine(`mac = ["52:54:00:zz:00:01"]`), "Invalid MAC address", 3, 10)
	diagAt(t, targetsBase, machine(`uuid = "nope"`), "Invalid UUID", 3, 10)
	diagAt(t, targetsBase, machine(`hostname = "Bad_Host"`), "Invalid hostname", 3, 14)
	diagAt(t, targetsBase, machine(`labels = {}`), "Machine without selectors", 1, 1)
	diagAt(t, targetsBase, "machine \"m-1\" {\n  pool = \"wroker\"\n  uuid = \"4c4c4544-0042-3510-8054-b4c04f384d32\"\n}\n", "Unknown pool", 2, 10)
	diagAt(t, targetsBase, machine(`mac = ["52:54:00:00:00:01"]`)+"machine \"m-2\" {\n  pool = \"worker\"\n  mac = [\"52-54-00-00-00-01\"]\n}\n",
		"Ambiguous machine selector", 5, 1)
}
