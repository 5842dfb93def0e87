package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/model"
)

// openshiftDocs is the corpus of OpenShift's documentation's Butane configs (variant
// openshift), with their sources in its SOURCES.tsv.
const openshiftDocs = "../acceptance/testdata/corpus/openshift-docs/"

// openshiftConfig is a configuration of pools worker and infra whose config "99-x" has
// butane = file("x.bu") on line 5, the corpus file name copied there, and attrs.
func openshiftConfig(t *testing.T, name, attrs string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(openshiftDocs, name))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write(t, dir, "main.hcl", "provider \"local\" { fleet = \"./fleet\" }\npool \"worker\" {}\npool \"infra\" {}\nconfig \"99-x\" {\n"+
		"  butane = file(\"x.bu\")\n"+attrs+"}\n")
	write(t, dir, "x.bu", string(b))
	return dir
}

// The OpenShift documentation's kdump config (Butane variant openshift) is its
// MachineConfig, as the MCO reads it: the pool its role label names, its kernel argument
// from openshift.kernel_arguments, placed at its line in the Butane text, its files and
// unit as other Butane's. (Read raw, the kernel argument was dropped with a warning.)
func TestOpenShiftButaneIsItsMachineConfig(t *testing.T) {
	res, diags := Load(openshiftConfig(t, "99-worker-kdump.bu", ""), Options{Schemas: testSchemas})
	if diags.HasErrors() || len(diags) > 0 {
		t.Fatalf("want no problem: %v", diags)
	}
	c := res.Desired.Configs[0]
	if !slices.Equal(c.Pools, []string{"worker"}) || !slices.Equal(c.KernelArgs, []string{"crashkernel=256M"}) {
		t.Errorf("pools %v, kernel args %v", c.Pools, c.KernelArgs)
	}
	want := model.TextRef{Kind: model.TextButane, Path: "openshift.kernel_arguments", File: "x.bu", Line: 9, Column: 7}
	if len(c.KernelArgSources) != 1 || c.KernelArgSources[0].Text != want || c.KernelArgSources[0].Range.Start.Line != 5 {
		t.Errorf("kernel argument from %+v, want %+v at main.hcl:5", c.KernelArgSources, want)
	}
	if len(c.Files) != 2 || c.Files[0].Path != "/etc/kdump.conf" || c.Files[0].Text.Path != "storage.files.0" ||
		!strings.HasPrefix(string(c.Files[0].Contents), "path /var/crash\n") || c.Files[1].Path != "/etc/sysconfig/kdump" {
		t.Errorf("files: %+v", c.Files)
	}
	if len(c.Units) != 1 || c.Units[0].Name != "kdump.service" || c.Units[0].Enabled == nil || !*c.Units[0].Enabled {
		t.Errorf("units: %+v", c.Units)
	}
	// pools given are the config's, whatever the label says, as for a machineconfig.
	res, diags = Load(openshiftConfig(t, "99-worker-kdump.bu", "  pools = [\"infra\"]\n"), Options{Schemas: testSchemas})
	if diags.HasErrors() || !slices.Equal(res.Desired.Configs[0].Pools, []string{"infra"}) {
		t.Errorf("pools = [\"infra\"]: %v %v", res.Desired.Configs[0].Pools, diags)
	}
}

// What the MCO does and mcp cannot — FIPS, another kernel, extensions — is refused at its
// line and column in the Butane text, as a MachineConfig's YAML refuses it, by the Butane
// field's name; what asks for nothing is taken. (Read raw, they were warnings.)
func TestOpenShiftButaneRefusals(t *testing.T) {
	for _, c := range []struct {
		file, edit string
		want       []string
	}{
		{"butane-config-openshift.bu", "", []string{
			"x.bu: line 9, column 5: MachineConfig config-openshift: openshift.extensions: mcp does not layer RHCOS extensions",
			"x.bu: line 10, column 9: MachineConfig config-openshift: openshift.fips: true: FIPS mode is chosen when a node is installed",
			"x.bu: line 13, column 16: MachineConfig config-openshift: openshift.kernel_type: realtime: mcp does not install another kernel"}},
		{"worker-storage.bu", "", []string{"x.bu: line 20, column 9: MachineConfig worker-storage: openshift.fips: true"}},
		{"99-worker-kdump.bu", "role: worker", []string{`x.bu (MachineConfig 99-worker-kdump) is labelled machineconfiguration.openshift.io/role: master, and no pool block declares pool "master"`}},
	} {
		dir := openshiftConfig(t, c.file, "")
		if c.edit != "" {
			b, _ := os.ReadFile(filepath.Join(dir, "x.bu"))
			write(t, dir, "x.bu", strings.Replace(string(b), c.edit, "role: master", 1))
		}
		_, diags := Load(dir, Options{Schemas: testSchemas})
		var all strings.Builder
		for _, d := range diags {
			all.WriteString(d.Detail + "\n")
		}
		for _, w := range c.want {
			if !strings.Contains(all.String(), w) {
				t.Errorf("%s: want …%s…, got %v", c.file, w, diags)
			}
		}
		for _, d := range diags {
			if d.Severity == model.DiagError && (d.Subject == nil || d.Subject.Start.Line != 5) {
				t.Errorf("%s: %q is not at the butane attribute: %v", c.file, d.Detail, d.Subject)
			}
		}
	}
	dir := openshiftConfig(t, "butane-config-openshift.bu", "")
	b, _ := os.ReadFile(filepath.Join(dir, "x.bu"))
	asks := strings.NewReplacer("fips: true", "fips: false", "kernel_type: realtime", "kernel_type: default", "    - usbguard\n", "").Replace(string(b))
	write(t, dir, "x.bu", strings.Replace(asks, "extensions:\n", "extensions: []\n", 1))
	res, diags := Load(dir, Options{Schemas: testSchemas})
	if diags.HasErrors() || !slices.Equal(res.Desired.Configs[0].KernelArgs, []string{"console=ttyS1,115200"}) {
		t.Errorf("fips false, kernel_type default, no extensions: %v", diags)
	}
}

// A config block takes one MachineConfig: a machineconfig beside a Butane of variant
// openshift is two.
func TestOpenShiftButaneBesideAMachineConfig(t *testing.T) {
	dir := openshiftConfig(t, "99-worker-custom.bu", "  machineconfig = file(\"mc.yaml\")\n")
	write(t, dir, "mc.yaml", chronyMC)
	_, diags := Load(dir, Options{Schemas: testSchemas})
	if !strings.Contains(diags.Error(), "Two MachineConfigs") || !strings.Contains(diags.Error(), "a config block takes one MachineConfig") {
		t.Errorf("want Two MachineConfigs, got %v", diags)
	}
}
