package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/model"
)

const chronyMC = `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 99-worker-chrony
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
  osImageURL: quay.io/example/os@sha256:1111111111111111111111111111111111111111111111111111111111111111
  kernelArguments: ["nosmt mitigations=auto", "quiet"]
  config:
    ignition: {version: 3.2.0}
    storage:
      files:
      - path: /etc/chrony.conf
        mode: 0600
        contents: {source: "data:,server%20ntp.example.com%0A"}
    systemd:
      units:
      - name: chronyd.service
        enabled: true
`

func mcConfig(t *testing.T, attrs, yaml string) string {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "main.hcl", "provider \"local\" { fleet = \"./fleet\" }\npool \"worker\" {}\npool \"infra\" {}\n"+
		"config \"99-worker-chrony\" {\n"+attrs+"  machineconfig = file(\"mc.yaml\")\n}\n")
	write(t, dir, "mc.yaml", yaml)
	return dir
}

// A MachineConfig in a config block: its pool from the role label, its files and units as
// a butane attribute's, its kernel arguments split as the MCO splits them, its OS image.
func TestMachineConfigAttribute(t *testing.T) {
	res, diags := Load(mcConfig(t, "", chronyMC), Options{Schemas: testSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	c := res.Desired.Configs[0]
	if !slices.Equal(c.Pools, []string{"worker"}) || !slices.Equal(c.KernelArgs, []string{"nosmt", "mitigations=auto", "quiet"}) ||
		!strings.HasPrefix(c.OSImage, "quay.io/example/os@") {
		t.Errorf("config: pools %v, kernel args %v, os image %q", c.Pools, c.KernelArgs, c.OSImage)
	}
	if len(c.Files) != 1 || c.Files[0].Path != "/etc/chrony.conf" || c.Files[0].Mode != 0o600 ||
		string(c.Files[0].Contents) != "server ntp.example.com\n" || c.Files[0].Text.Path != "spec.config.storage.files.0" || c.Files[0].Text.Kind != model.TextMachineConfig || c.Files[0].Text.Line == 0 {
		t.Errorf("files: %+v", c.Files)
	}
	if len(c.Units) != 1 || c.Units[0].Name != "chronyd.service" || c.Units[0].Enabled == nil || !*c.Units[0].Enabled {
		t.Errorf("units: %+v", c.Units)
	}
	// pools given: they are the config's, whatever the label says.
	res, diags = Load(mcConfig(t, "  pools = [\"infra\"]\n", chronyMC), Options{Schemas: testSchemas})
	if diags.HasErrors() || !slices.Equal(res.Desired.Configs[0].Pools, []string{"infra"}) {
		t.Errorf("pools = [\"infra\"]: %v %v", res.Desired.Configs[0].Pools, diags)
	}
}

// What a MachineConfig cannot be is an error on the attribute naming the YAML file and the
// line and column in it.
func TestMachineConfigRefusals(t *testing.T) {
	for _, c := range []struct{ attrs, yaml, want string }{
		{"", strings.Replace(chronyMC, "spec:\n", "spec:\n  kernelType: realtime\n", 1),
			"mc.yaml: line 8, column 15: MachineConfig 99-worker-chrony: spec.kernelType: realtime: mcp does not install another kernel"},
		{"", strings.Replace(chronyMC, "role: worker", "role: master", 1), `labelled machineconfiguration.openshift.io/role: master, and no pool block declares pool "master"`},
		{"", strings.Replace(chronyMC, "    machineconfiguration.openshift.io/role: worker\n", "    a: b\n", 1), "has no machineconfiguration.openshift.io/role label and the config names no pools"},
		{"", chronyMC + "---\n" + strings.Replace(chronyMC, "99-worker-chrony", "99-other", 1), "holds 2 MachineConfigs (99-worker-chrony, 99-other)"},
		{"", strings.Replace(chronyMC, "/etc/chrony.conf", "/usr/lib/x", 1), "mc.yaml: line 14, column 9: MachineConfig 99-worker-chrony: spec.config: /usr/lib/x (storage.files.0): File path"},
		{"  os_image = \"quay.io/x/y:1\"\n", chronyMC, "sets spec.osImageURL, and the config's os_image is set too"},
	} {
		_, diags := Load(mcConfig(t, c.attrs, c.yaml), Options{Schemas: testSchemas})
		if !diags.HasErrors() || !strings.Contains(diags.Error(), c.want) {
			t.Errorf("want …%s…, got %v", c.want, diags)
		}
	}
	dir := t.TempDir()
	write(t, dir, "main.hcl", "provider \"local\" { fleet = \"./fleet\" }\npool \"worker\" {}\nconfig \"x\" {\n  kernel_args = [\"a\"]\n}\n")
	if _, diags := Load(dir, Options{Schemas: testSchemas}); !strings.Contains(diags.Error(), `main.hcl:3,1-11: Missing required argument; Config "x" needs pools`) {
		t.Errorf("no pools: %v", diags)
	}
}

// A MachineConfig's file from a URL is first boot only, as a Butane's is: in the config's
// first-boot part as given, with a warning naming it; the data: file beside it is managed.
func TestMachineConfigRemoteFileFirstBootOnly(t *testing.T) {
	mc := strings.Replace(chronyMC, "    systemd:\n", "      - path: /etc/remote\n        contents: {source: \"https://example.com/r\"}\n    systemd:\n", 1)
	res, diags := Load(mcConfig(t, "", mc), Options{Schemas: testSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	c := res.Desired.Configs[0]
	if len(c.Files) != 1 || !strings.Contains(string(c.FirstBoot), `"source":"https://example.com/r"`) {
		t.Errorf("files %+v, first boot %s", c.Files, c.FirstBoot)
	}
	found := false
	for _, d := range diags {
		found = found || d.Summary == "First boot only" && strings.Contains(d.Detail, "file /etc/remote (storage.files.1): contents from https://example.com/r")
	}
	if !found {
		t.Errorf("no first-boot warning naming /etc/remote: %v", diags)
	}
}
