package machineconfig

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

func parseFile(t *testing.T, name string) ([]MachineConfig, []Problem) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "mco", name))
	if err != nil {
		t.Fatal(err)
	}
	return Parse(b)
}

// The MCO's own MachineConfigs that ask for what mcp cannot do are refused at the line
// and column of the field, with what to do instead.
func TestRefusedAtTheField(t *testing.T) {
	for _, c := range []struct {
		file string
		at   Pos
		want string
	}{
		{"50-realtime-kernel.yaml", Pos{8, 15}, "spec.kernelType: realtime: mcp does not install another kernel"},
		{"50-fips.yaml", Pos{8, 9}, "spec.fips: true: FIPS mode is chosen when a node is installed"},
		{"50-usbguard.yaml", Pos{12, 5}, "spec.extensions: mcp does not layer RHCOS extensions"},
		{"50-ignition-kargs.yaml", Pos{11, 5}, "spec.config.kernelArguments: the MCO refuses kernel arguments in the Ignition config"},
		{"90-infra-testfile.yaml", Pos{0, 0}, ""}, // parses: the path is the config loader's to refuse
	} {
		mcs, problems := parseFile(t, c.file)
		if c.want == "" {
			if mcs == nil {
				t.Errorf("%s: %v", c.file, problems)
			}
			continue
		}
		if mcs != nil || len(problems) != 1 {
			t.Errorf("%s: want one problem, got %d MachineConfigs and %v", c.file, len(mcs), problems)
			continue
		}
		if p := problems[0]; p.At != c.at || !strings.Contains(p.Message, c.want) || p.Warning {
			t.Errorf("%s: got %s, want at %s: …%s…", c.file, p, c.at, c.want)
		}
	}
}

// What an accepted MachineConfig declares, in mcp's terms.
func TestReadsTheMCOExamples(t *testing.T) {
	mcs, problems := parseFile(t, "test-config.yaml")
	// Its etcd-member-tls.service is enabled with no [Install] section: Ignition warns.
	if len(mcs) != 1 || len(problems) != 1 || !problems[0].Warning || problems[0].At != (Pos{34, 11}) {
		t.Fatalf("test-config.yaml: %d MachineConfigs, %v", len(mcs), problems)
	}
	mc := mcs[0]
	if mc.Name != "test-config" || mc.Role != "" || mc.Spec != "2.2.0" ||
		mc.OSImage != "registry.example.com/oscontainer@sha256:b5bb9d8014a0f9b1d61e21e796d78dccdf1352f23cd32812f4850b878ae4944c" {
		t.Errorf("test-config: %+v", mc)
	}
	if diff := cmp.Diff([]string{"foo=bar", "nosmt"}, mc.KernelArgs); diff != "" {
		t.Errorf("kernel args (-want +got):\n%s", diff)
	}
	if f := mc.Ignition.Files; len(f) != 1 || f[0].Path != "/etc/coreos/update.conf" || f[0].Mode != 0o644 ||
		string(f[0].Contents) != "GROUP=stable\nSERVER=http://localhost:32003/v1/update\n" {
		t.Errorf("files: %+v", f)
	}
	var names []string
	for _, u := range mc.Ignition.Units {
		names = append(names, u.Name)
	}
	slices.Sort(names)
	if want := []string{"docker.service", "etcd-member-tls.service", "etcd-member.service", "kubelet-workaround.service",
		"kubelet.service", "locksmith.service"}; !slices.Equal(names, want) {
		t.Errorf("units %v, want %v", names, want)
	}
	docker := mc.Ignition.Units[slices.IndexFunc(mc.Ignition.Units, func(u model.Unit) bool { return u.Name == "docker.service" })]
	if docker.Enabled == nil || !*docker.Enabled || len(docker.Dropins) != 1 || docker.Dropins[0].Name != "10-dockeropts.conf" {
		t.Errorf("docker.service: %+v", docker)
	}
}

// Several documents and Lists (as oc get -o yaml prints) are read; other kinds are
// refused at their kind.
func TestDocumentsAndLists(t *testing.T) {
	one := func(name string) string {
		return "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: " + name +
			"\n  labels: {machineconfiguration.openshift.io/role: worker}\nspec:\n  kernelArguments: [" + name + "]\n"
	}
	multi := "---\n" + one("a") + "---\n" + one("b") + "---\n"
	list := "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSuffix(one("c"), "\n"), "\n", "\n  ") + "\n"
	for text, want := range map[string][]string{multi: {"a", "b"}, list: {"c"}} {
		mcs, problems := Parse([]byte(text))
		var got []string
		for _, mc := range mcs {
			got = append(got, mc.Name)
			if mc.Role != "worker" || !slices.Equal(mc.KernelArgs, []string{mc.Name}) {
				t.Errorf("%+v", mc)
			}
		}
		if !slices.Equal(got, want) || len(problems) > 0 {
			t.Errorf("got %v %v, want %v", got, problems, want)
		}
	}
	for text, want := range map[string]string{
		"kind: ConfigMap\napiVersion: v1\n":                                       "line 1, column 7: kind \"ConfigMap\"",
		"apiVersion: template.openshift.io/v1\nkind: Template\n":                  "line 2, column 7: an OpenShift Template",
		one("x") + "  bogus: 1\n":                                                 "line 8, column 3: MachineConfig x: unknown field spec.bogus",
		"apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\n": "has no metadata.name",
		"a: [": "not valid YAML",
		"":     "holds no MachineConfig",
		one("y") + "  config:\n    ignition: {version: 2.1.0}\n": "line 9, column 16: MachineConfig y: spec.config: Ignition spec 2.1.0",
	} {
		_, problems := Parse([]byte(text))
		if len(problems) == 0 || !strings.Contains(problems[0].String(), want) {
			t.Errorf("%q: got %v, want %q", text, problems, want)
		}
	}
}

// A problem Ignition or the reader finds in spec.config is placed at the entry it names.
func TestIgnitionProblemsAtTheirEntry(t *testing.T) {
	text := `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata: {name: x}
spec:
  config:
    ignition: {version: 3.2.0}
    storage:
      files:
      - path: /etc/a
        contents: {source: "data:,a"}
      - path: /etc/b
        user: {id: 1000}
`
	_, problems := Parse([]byte(text))
	if len(problems) != 1 || problems[0].At != (Pos{11, 9}) || !strings.Contains(problems[0].Message, "owner by number") {
		t.Errorf("got %v", problems)
	}
}

// A spec 2.2 config with a path or unit twice keeps the last, with the earlier unit's
// other drop-ins, as the MCO does before converting it; 2.2's "enable" is "enabled", and
// append: true appends.
func TestSpec22DuplicatesAsTheMCO(t *testing.T) {
	text := `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata: {name: x}
spec:
  config:
    ignition: {version: 2.2.0}
    storage:
      files:
      - {filesystem: root, path: /etc/a, mode: 420, contents: {source: "data:,first"}}
      - {filesystem: root, path: /etc/a, mode: 384, contents: {source: "data:,second"}}
    systemd:
      units:
      - name: a.service
        dropins: [{name: 10-a.conf, contents: "[Service]\nA=1\n"}, {name: 20-b.conf, contents: "[Service]\nB=1\n"}]
      - name: a.service
        enable: true
        contents: "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"
        dropins: [{name: 10-a.conf, contents: "[Service]\nA=2\n"}]
`
	mcs, problems := Parse([]byte(text))
	if len(problems) > 0 || len(mcs) != 1 {
		t.Fatal(problems)
	}
	ign := mcs[0].Ignition
	if len(ign.Files) != 1 || string(ign.Files[0].Contents) != "second" || ign.Files[0].Mode != 0o600 || ign.Files[0].Text.Path != "spec.config.storage.files.0" {
		t.Errorf("files: %+v", ign.Files)
	}
	if len(ign.Units) != 1 || ign.Units[0].Enabled == nil || !*ign.Units[0].Enabled {
		t.Fatalf("units: %+v", ign.Units)
	}
	want := []model.Dropin{{Name: "10-a.conf", Contents: "[Service]\nA=2\n"}, {Name: "20-b.conf", Contents: "[Service]\nB=1\n"}}
	if diff := cmp.Diff(want, ign.Units[0].Dropins); diff != "" {
		t.Errorf("drop-ins (-want +got):\n%s", diff)
	}
	_, problems = Parse([]byte(strings.Replace(text, "filesystem: root, path: /etc/a, mode: 384", "filesystem: data, path: /etc/a, mode: 384", 1)))
	if len(problems) != 1 || problems[0].At != (Pos{10, 10}) || !strings.Contains(problems[0].Message, "filesystem data") {
		t.Errorf("another filesystem: %v", problems)
	}
}

// The installer's SSH key MachineConfig sets the core user's keys, which mcp manages as
// the MCO does: they are read as keys, and nothing of the config is left for first boot.
func TestInstallerSSHKeys(t *testing.T) {
	mcs, problems := parseFile(t, "99_openshift-machineconfig_worker.yaml")
	if len(problems) > 0 || len(mcs) != 1 {
		t.Fatal(problems)
	}
	ign := mcs[0].Ignition
	if !slices.Equal(ign.SSHKeys, []string{"ssh-rsa SSH-AUTHORIZED-KEY"}) || ign.SSHKeysAt != "passwd.users.0.sshAuthorizedKeys" || ign.FirstBoot != nil {
		t.Errorf("keys %q at %q, first boot %s", ign.SSHKeys, ign.SSHKeysAt, ign.FirstBoot)
	}
}
