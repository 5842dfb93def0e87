package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mcp import machineconfig writes config blocks that validate beside the pools they name;
// a refused MachineConfig writes nothing and exits 1; -out never overwrites.
func TestImportMachineConfig(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join("..", "..", "config", "machineconfig", "testdata", "mco")
	for _, f := range []string{"99-worker-chrony.yaml", "99-worker-disable-chrony.yaml", "50-fips.yaml"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := mcp(t, dir, "import", "machineconfig", "99-worker-chrony.yaml", "99-worker-disable-chrony.yaml")
	if code != 0 || !strings.Contains(out, `config "99-worker-chrony" {`) || !strings.Contains(out, `unit "chronyd.service" {`) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	os.WriteFile(filepath.Join(dir, "main.hcl"), []byte("provider \"local\" { fleet = \"./fleet\" }\npool \"worker\" {}\n"), 0o644)
	if code, _, errOut := mcp(t, dir, "import", "machineconfig", "-out", "imported.hcl", "99-worker-chrony.yaml", "99-worker-disable-chrony.yaml"); code != 0 {
		t.Fatalf("-out: exit %d %s", code, errOut)
	}
	if code, _, errOut := mcp(t, dir, "validate"); code != 0 {
		t.Errorf("validate the imported HCL: exit %d %s", code, errOut)
	}
	if code, _, errOut := mcp(t, dir, "import", "machineconfig", "-out", "imported.hcl", "99-worker-chrony.yaml"); code != 1 || !strings.Contains(errOut, "does not overwrite") {
		t.Errorf("-out over an existing file: exit %d %s", code, errOut)
	}
	code, out, errOut = mcp(t, dir, "import", "machineconfig", "99-worker-chrony.yaml", "50-fips.yaml")
	if code != 1 || out != "" || !strings.Contains(errOut, "│ Error: MachineConfig 50-fips: spec.fips: true: FIPS mode") ||
		!strings.Contains(errOut, "│   on 50-fips.yaml:8,9:") {
		t.Errorf("fips: exit %d, out %q, err %s", code, out, errOut)
	}
	if code, _, errOut := mcp(t, dir, "import", "butane", "x"); code != 1 || !strings.Contains(errOut, `Unknown import kind "butane"`) {
		t.Errorf("import butane: exit %d %s", code, errOut)
	}
}

// What validate would refuse in the HCL it writes, mcp import refuses at its line in the
// YAML file, and writes nothing: an SSH key of two lines (which would be two keys on the
// node), a path outside the managed trees.
func TestImportRefusesWhatValidateRefuses(t *testing.T) {
	dir := t.TempDir()
	mc := "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: 99-x\n" +
		"  labels: {machineconfiguration.openshift.io/role: worker}\nspec:\n  config:\n    ignition: {version: 3.2.0}\n" +
		"    storage:\n      files:\n        - path: /usr/lib/x\n          contents: {source: \"data:,hi\"}\n" +
		"    passwd:\n      users:\n        - name: core\n          sshAuthorizedKeys:\n" +
		"            - \"ssh-ed25519 AAAA a@b\\nssh-rsa BBBB evil@x\"\n"
	os.WriteFile(filepath.Join(dir, "mc.yaml"), []byte(mc), 0o644)
	code, out, errOut := mcp(t, dir, "import", "machineconfig", "mc.yaml")
	if code != 1 || out != "" {
		t.Fatalf("exit %d, wrote:\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"│   on mc.yaml:11,11:", "/usr/lib/x (storage.files.0): File path", "│   on mc.yaml:17,15:",
		"the core user's SSH key 1 (passwd.users.0.sshAuthorizedKeys.0) holds a line break"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}
