package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
`}, "forge.hcl:2,3", "file /etc/fakelib/mcp/desired (forge.hcl:2,3 (butane spec.config.storage.files.0))"},
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
