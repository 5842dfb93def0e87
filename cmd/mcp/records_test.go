package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/providers/local"
)

// TestLinksToTheAgentsRecordsFailValidate: the forgery — a link that moves the
// node agent's records (/var/lib → ../etc/fakelib) with a file where they then are (a
// forged "desired" naming the infra pool's config) — is refused by validate and by plan,
// declared in HCL blocks, in Butane and in a MachineConfig: the error is at the link's
// file:line:col and names the file, with its place. Nothing reaches the state or a node.
func TestLinksToTheAgentsRecordsFailValidate(t *testing.T) {
	tests := []struct {
		name, config string
		extra        map[string]string // more files of the configuration
		at           string            // the refusal's place
		names        string            // the other item, with its place
	}{
		{"hcl", `config "60-forge" {
  pools = ["worker"]
  link "/var/lib" { target = "../etc/fakelib" }
  file "/etc/fakelib/mcp/desired" { content = "rendered-infra-0" }
}
`, nil, "forge.hcl:3,8", "file /etc/fakelib/mcp/desired (forge.hcl:4,8)"},
		{"butane", `config "60-forge" {
  pools  = ["worker"]
  butane = file("forge.bu")
}
`, map[string]string{"forge.bu": `variant: fcos
version: 1.5.0
storage:
  links:
    - path: /var/lib
      target: ../etc/fakelib
  files:
    - path: /etc/fakelib/mcp/desired
      contents:
        inline: rendered-infra-0
`}, "forge.hcl:3,3", "file /etc/fakelib/mcp/desired (forge.hcl:3,3 (butane storage.files.0))"},
		{"machineconfig", `config "60-forge" {
  machineconfig = file("forge.yaml")
}
`, map[string]string{"forge.yaml": `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 60-forge
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
  config:
    ignition: {version: 3.2.0}
    storage:
      links:
      - path: /var/lib
        target: ../etc/fakelib
      files:
      - path: /etc/fakelib/mcp/desired
        contents: {source: "data:,rendered-infra-0"}
`}, "forge.hcl:2,3", "file /etc/fakelib/mcp/desired (forge.hcl:2,3 (MachineConfig forge.yaml:15,9 spec.config.storage.files.0))"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := quickstart(t)
			for name, text := range map[string]string{"forge.hcl": tt.config} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for name, text := range tt.extra {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, cmd := range [][]string{{"validate", "-no-color"}, {"plan", "-no-color"}} {
				code, out, errOut := mcp(t, dir, cmd...)
				all := strings.Join(strings.Fields(strings.ReplaceAll(out+errOut, "│", "")), " ")
				if code != 1 || !strings.Contains(all, "Link moves mcp's own records") || !strings.Contains(all, tt.at) ||
					!strings.Contains(all, "Link /var/lib → ../etc/fakelib") || !strings.Contains(all, tt.names) {
					t.Errorf("mcp %s: exit %d, want 1 refusing the link at %s and naming %s\n%s%s", cmd[0], code, tt.at, tt.names, out, errOut)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "mcp.state")); !os.IsNotExist(err) {
				t.Errorf("a state was written: %v", err)
			}
		})
	}
}

// TestNodesOwnLinkToTheRecordsIsRefusedOnTheNode: the node-side forgery on the
// local fleet — worker-0's /opt is a link to var/lib/mcp (the node's own, which the
// configuration cannot see) and a config manages /opt/pending.json under the default
// policy (reboot). Each apply refuses that item on worker-0 before changing anything: the
// node is Degraded naming the path, the link and the records, uncordoned again, never
// rebooted, and nothing is written in its root — not the config's other files, not the
// agent's records.
func TestNodesOwnLinkToTheRecordsIsRefusedOnTheNode(t *testing.T) {
	dir := quickstart(t)
	root := filepath.Join(dir, "fleet/nodes/worker-0/root")
	if err := os.MkdirAll(filepath.Join(root, "var/lib/mcp"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("var/lib/mcp", filepath.Join(root, "opt")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "opt.hcl"), []byte(`config "60-opt" {
  pools = ["worker"]
  file "/opt/pending.json" { content = "{\"forged\": true}" }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for run := 1; run <= 2; run++ {
		code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color")
		if code != 1 || !strings.Contains(out+errOut, "node worker-0: write /opt/pending.json: path /opt/pending.json lands at /var/lib/mcp/pending.json") {
			t.Fatalf("apply %d: exit %d, want 1 naming worker-0's refused write\n%s%s", run, code, out, errOut)
		}
		n := readNode(t, dir, "worker-0")
		if n.State != "Degraded" || !strings.Contains(n.Reason, "through the node's link /opt → var/lib/mcp") ||
			!strings.Contains(n.Reason, "the node agent's own records") || n.Unschedulable {
			t.Errorf("apply %d: worker-0 %s (%q), cordoned %v; want Degraded naming the link and the records, uncordoned", run, n.State, n.Reason, n.Unschedulable)
		}
		if evs := events(t, dir, "worker-0", local.EventReboot); len(evs) != 0 {
			t.Errorf("apply %d: worker-0 rebooted %d times", run, len(evs))
		}
		if ents, err := os.ReadDir(filepath.Join(root, "var/lib/mcp")); err != nil || len(ents) != 0 {
			t.Errorf("apply %d: worker-0's records: %v %v, want none written", run, ents, err)
		}
		if got := rootFile(dir, "worker-0", "etc/chrony.conf"); got != "" {
			t.Errorf("apply %d: worker-0 got the config's other files (chrony.conf %q)", run, got)
		}
	}
}
