package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

// overrideChrony adds a config that declares the quickstart's /etc/chrony.conf again, at
// line 3 of 90-override.hcl, without an on_change: the file's policy turns from a restart
// into a reboot.
func overrideChrony(t *testing.T, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "90-override.hcl"), []byte(`config "90-override" {
  pools = ["worker"]
  file "/etc/chrony.conf" {
    content = "server override.example iburst\n"
  }
  kernel_args = ["nosmt", "quiet"]
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
}

// unbox is diagnostics' text without their boxes' edges, its words joined by one space.
func unbox(s string) string {
	return strings.Join(strings.Fields(strings.NewReplacer("│", " ", "╷", " ", "╵", " ").Replace(s)), " ")
}

// The warning names both blocks with their places, in validate and in plan.
func TestOverrideChangingPolicyWarns(t *testing.T) {
	dir := quickstart(t)
	overrideChrony(t, dir)
	want := []string{
		"Warning: Override changes the disruption policy of file /etc/chrony.conf on ",
		"90-override.hcl:3,8, in config \"90-override\":",
		"config.90-override (90-override.hcl:3,8) replaces the one of config.50-chrony (configs.hcl:13,8) in pool worker",
		"now needs reboot (no on_change), not restart:chronyd.service",
	}
	code, out, errOut := mcp(t, dir, "validate", "-no-color")
	if code != 0 || !strings.Contains(out, "Success!") {
		t.Fatalf("validate exit %d: a warning is no error\n%s%s", code, out, errOut)
	}
	// The detail is wrapped in the diagnostic's box: compare with the lines joined.
	flat := unbox(errOut)
	for _, w := range want {
		if !strings.Contains(flat, w) {
			t.Errorf("validate does not say %q:\n%s", w, errOut)
		}
	}
	if strings.Count(errOut, "Warning: Override") != 1 {
		t.Errorf("want one warning (only worker takes 90-override):\n%s", errOut)
	}
	code, out, errOut = mcp(t, dir, "plan", "-no-color")
	if code != 0 {
		t.Fatalf("plan exit %d\n%s%s", code, out, errOut)
	}
	flat = unbox(errOut)
	for _, w := range want {
		if !strings.Contains(flat, w) {
			t.Errorf("plan does not say %q:\n%s", w, errOut)
		}
	}
	// The same policy again is no news: no warning.
	b, _ := os.ReadFile(filepath.Join(dir, "90-override.hcl"))
	os.WriteFile(filepath.Join(dir, "90-override.hcl"), []byte(strings.Replace(string(b), "iburst\\n\"\n",
		"iburst\\n\"\n    on_change = [\"restart:chronyd.service\"]\n", 1)), 0o644)
	if _, _, errOut := mcp(t, dir, "validate", "-no-color"); strings.Contains(errOut, "Warning") {
		t.Errorf("an override with the same policy warns:\n%s", errOut)
	}
}

// show -rendered names the config and line that wrote the file and the one it overrode;
// the plan JSON carries the same per write step.
func TestProvenanceOfAFileInTwoConfigs(t *testing.T) {
	dir := quickstart(t)
	overrideChrony(t, dir)
	chrony := model.Written{By: model.Origin{Block: "config.90-override", File: "90-override.hcl", Line: 3, Column: 8},
		Overrode: []model.Origin{{Block: "config.50-chrony", File: "configs.hcl", Line: 13, Column: 8}}}

	code, out, errOut := mcp(t, dir, "show", "-rendered", "worker", "-json")
	if code != 0 {
		t.Fatalf("show -rendered exit %d\n%s%s", code, out, errOut)
	}
	var shown struct {
		Name       string
		Provenance model.Provenance
	}
	if err := json.Unmarshal([]byte(out), &shown); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(chrony, shown.Provenance.Files["/etc/chrony.conf"]); d != "" {
		t.Errorf("provenance of /etc/chrony.conf (-want +got):\n%s", d)
	}
	if got := shown.Provenance.Files["/etc/motd"].By; got.Block != "config.00-motd" || got.Line != 4 {
		t.Errorf("/etc/motd written by %v, want config.00-motd at configs.hcl:4", got)
	}
	if got := shown.Provenance.KernelArgs["quiet"].By; got.Block != "config.90-override" || got.Line != 6 || got.Column != 27 {
		t.Errorf("kernel argument quiet written by %+v, want config.90-override at 90-override.hcl:6,27", got)
	}

	code, out, _ = mcp(t, dir, "show", "-rendered", "worker", "-no-color")
	if code != 0 || !strings.Contains(out, "file /etc/chrony.conf") ||
		!strings.Contains(out, "config.90-override") || !strings.Contains(out, "overrides") || !strings.Contains(out, "configs.hcl:13,8") {
		t.Errorf("show -rendered does not name who wrote /etc/chrony.conf:\n%s", out)
	}

	code, out, errOut = mcp(t, dir, "plan", "-json")
	if code != 0 {
		t.Fatalf("plan -json exit %d\n%s", code, errOut)
	}
	var plan struct {
		ResourceChanges []struct {
			Address string
			MCP     *struct {
				Steps []struct {
					Kind, Target string
					Provenance   []struct {
						Item string
						model.Written
					}
				}
			}
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, rc := range plan.ResourceChanges {
		if rc.Address != "node.worker-0" {
			continue
		}
		for _, s := range rc.MCP.Steps {
			if s.Kind == "write" && s.Target == "/etc/chrony.conf" {
				found = true
				if len(s.Provenance) != 1 || s.Provenance[0].Item != "/etc/chrony.conf" {
					t.Fatalf("write step provenance: %+v", s.Provenance)
				}
				if d := cmp.Diff(chrony, s.Provenance[0].Written); d != "" {
					t.Errorf("plan JSON provenance (-want +got):\n%s", d)
				}
			}
		}
	}
	if !found {
		t.Errorf("node.worker-0 has no write of /etc/chrony.conf:\n%s", out)
	}
}

// Moving a block to another line changes its provenance, not the rendered config's name.
func TestProvenanceIsNotContent(t *testing.T) {
	dir := quickstart(t)
	name := func() string {
		_, out, errOut := mcp(t, dir, "show", "-rendered", "worker", "-json")
		var r struct{ Name string }
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v\n%s", err, errOut)
		}
		return r.Name
	}
	before := name()
	p := filepath.Join(dir, "configs.hcl")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, append([]byte("\n\n\n"), b...), 0o644)
	if after := name(); after != before {
		t.Errorf("rendered name %s became %s when blocks moved down three lines", before, after)
	}
}

// A MachineConfig's file and kernel argument are labelled as the MachineConfig's, with
// their place in its YAML file (not as Butane's, as they were), in show -rendered and its
// JSON; an openshift Butane's kernel argument as the Butane's, at its line there.
func TestProvenanceOfAMachineConfig(t *testing.T) {
	dir := quickstart(t)
	files := map[string]string{"90-mc.hcl": `config "90-mc" {
  pools         = ["worker"]
  machineconfig = file("90-mc.yaml")
}

config "91-bu" {
  pools  = ["worker"]
  butane = file("91-bu.bu")
}
`, "90-mc.yaml": `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 90-mc
spec:
  kernelArguments:
    - quiet
  config:
    ignition:
      version: 3.2.0
    storage:
      files:
        - path: /etc/chrony.conf
          contents: {source: "data:,server%20mc.example%20iburst%0A"}
`, "91-bu.bu": "variant: openshift\nversion: 4.20.0\nmetadata:\n  name: 91-bu\n  labels:\n    machineconfiguration.openshift.io/role: worker\nopenshift:\n  kernel_arguments: [loglevel=7]\n"}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := mcp(t, dir, "show", "-rendered", "worker", "-json")
	if code != 0 {
		t.Fatalf("show -rendered exit %d\n%s%s", code, out, errOut)
	}
	var shown struct{ Provenance model.Provenance }
	if err := json.Unmarshal([]byte(out), &shown); err != nil {
		t.Fatal(err)
	}
	want := model.Origin{Block: "config.90-mc", File: "90-mc.hcl", Line: 3, Column: 3,
		MachineConfig: "spec.config.storage.files.0", TextFile: "90-mc.yaml", TextLine: 13, TextColumn: 11}
	if d := cmp.Diff(want, shown.Provenance.Files["/etc/chrony.conf"].By); d != "" {
		t.Errorf("provenance of /etc/chrony.conf (-want +got):\n%s", d)
	}
	want = model.Origin{Block: "config.90-mc", File: "90-mc.hcl", Line: 3, Column: 3,
		MachineConfig: "spec.kernelArguments", TextFile: "90-mc.yaml", TextLine: 7, TextColumn: 7}
	if d := cmp.Diff(want, shown.Provenance.KernelArgs["quiet"].By); d != "" {
		t.Errorf("provenance of kernel argument quiet (-want +got):\n%s", d)
	}
	want = model.Origin{Block: "config.91-bu", File: "90-mc.hcl", Line: 8, Column: 3,
		Butane: "openshift.kernel_arguments", TextFile: "91-bu.bu", TextLine: 8, TextColumn: 22}
	if d := cmp.Diff(want, shown.Provenance.KernelArgs["loglevel=7"].By); d != "" {
		t.Errorf("provenance of kernel argument loglevel=7 (-want +got):\n%s", d)
	}
	_, out, _ = mcp(t, dir, "show", "-rendered", "worker", "-no-color")
	for _, w := range []string{"90-mc.hcl:3,3 (MachineConfig 90-mc.yaml:13,11 spec.config.storage.files.0)",
		"90-mc.hcl:8,3 (butane 91-bu.bu:8,22 openshift.kernel_arguments)", "overrides"} {
		if !strings.Contains(out, w) {
			t.Errorf("show -rendered does not say %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "butane spec.") {
		t.Errorf("show -rendered labels a MachineConfig's item as Butane's:\n%s", out)
	}
}
