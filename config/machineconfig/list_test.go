package machineconfig_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vincent-petithory/dataurl"
	"sigs.k8s.io/yaml"

	"github.com/mcpfleet/mcp/config/machineconfig"
)

// ocList is what `oc get machineconfig -o yaml` prints on a cluster with a master and a
// worker pool: the MCO's generated configs, the installer's SSH keys, a user's chrony
// config and the two pools' rendered configs (testdata/oc/README.md).
var ocList = filepath.Join("testdata", "oc", "oc-get-machineconfig.yaml")

// Every MachineConfig of the List is read, several pools' included; the MCO's rendered
// configs are left out with a warning naming each; the generated ones are marked so that
// -skip-generated can leave them out.
func TestOCListRead(t *testing.T) {
	b, err := os.ReadFile(ocList)
	if err != nil {
		t.Fatal(err)
	}
	mcs, problems := machineconfig.Parse(b)
	var names, generated []string
	for _, mc := range mcs {
		names = append(names, mc.Name)
		if mc.Generated {
			generated = append(generated, mc.Name)
		}
	}
	wantGen := []string{"00-master", "00-worker", "01-worker-container-runtime", "01-worker-kubelet", "97-worker-generated-kubelet", "99-worker-generated-registries"}
	if want := append(slices.Clone(wantGen), "99-master-ssh", "99-worker-ssh", "99-worker-chrony"); !slices.Equal(names, want) {
		t.Errorf("read %v, want %v", names, want)
	}
	if !slices.Equal(generated, wantGen) {
		t.Errorf("generated %v, want %v", generated, wantGen)
	}
	if len(problems) != 2 {
		t.Fatalf("problems %v, want a warning for each rendered config", problems)
	}
	for i, pool := range []string{"master", "worker"} {
		p := problems[i]
		if !p.Warning || !strings.Contains(p.Message, "MachineConfig rendered-"+pool+"-") || !strings.Contains(p.Message, "rendered config of pool "+pool) {
			t.Errorf("problem %d: %+v", i, p)
		}
	}
	kept, left := machineconfig.WithoutGenerated(mcs)
	if len(kept) != 3 || !slices.Equal(left, wantGen) {
		t.Errorf("WithoutGenerated: kept %d, left %v", len(kept), left)
	}
}

// The List imported renders, for the worker pool, the files and units of the MCO's own
// rendered-worker config: the generated configs are what the nodes carry, merged in the
// MCO's order (97-worker-generated-kubelet's kubelet.conf over 01-worker-kubelet's).
func TestOCListRendersAsTheMCO(t *testing.T) {
	b, err := os.ReadFile(ocList)
	if err != nil {
		t.Fatal(err)
	}
	mcs, problems := machineconfig.Parse(b)
	text, _, err := machineconfig.HCL(mcs, nil)
	if err != nil || mcs == nil {
		t.Fatal(err, problems)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.hcl"), []byte("provider \"local\" { fleet = \"./fleet\" }\npool \"worker\" {}\npool \"master\" {}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "imported.hcl"), text, 0o644)
	got, diags := renderDir(t, dir, "worker")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	want := mcoRendered(t, b, "rendered-worker-")
	for path, content := range want.files {
		if f := got.File(path); f == nil || string(f.Contents) != content {
			t.Errorf("%s: mcp renders %v, the MCO %q", path, f, content)
		}
	}
	// The core user's SSH keys are a file on the node, where the MCO's daemon writes them too.
	if keys := "/home/core/.ssh/authorized_keys.d/ignition"; len(got.Files) != len(want.files)+1 || got.File(keys) == nil {
		t.Errorf("mcp renders %d files, the MCO %d and %s", len(got.Files), len(want.files), keys)
	}
	for name, contents := range want.units {
		if u := got.Unit(name); u == nil || u.Contents != contents {
			t.Errorf("unit %s: mcp renders %v", name, u)
		}
	}
}

type mcoConfig struct{ files, units map[string]string }

// mcoRendered reads the files and units of the List's item whose name starts with prefix.
func mcoRendered(t *testing.T, b []byte, prefix string) mcoConfig {
	t.Helper()
	var list struct {
		Items []struct {
			Metadata struct{ Name string }
			Spec     struct {
				Config struct {
					Storage struct {
						Files []struct {
							Path     string
							Contents struct{ Source string }
						}
					}
					Systemd struct {
						Units []struct{ Name, Contents string }
					}
				}
			}
		}
	}
	if err := yaml.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	out := mcoConfig{files: map[string]string{}, units: map[string]string{}}
	for _, it := range list.Items {
		if !strings.HasPrefix(it.Metadata.Name, prefix) {
			continue
		}
		for _, f := range it.Spec.Config.Storage.Files {
			d, err := dataurl.DecodeString(f.Contents.Source)
			if err != nil {
				t.Fatal(err)
			}
			out.files[f.Path] = string(d.Data)
		}
		for _, u := range it.Spec.Config.Systemd.Units {
			out.units[u.Name] = u.Contents
		}
		return out
	}
	t.Fatalf("no item %s…", prefix)
	return out
}

// A List that is not all MachineConfigs, an empty item, more items than mcp reads, a
// problem inside an item: an error naming the item by index (and name, when it has one),
// and no MachineConfig returned.
func TestOCListBadItems(t *testing.T) {
	mc := func(name, spec string) string {
		return "- apiVersion: machineconfiguration.openshift.io/v1\n  kind: MachineConfig\n  metadata:\n    name: " + name +
			"\n    labels: {machineconfiguration.openshift.io/role: worker}\n  spec: " + spec + "\n"
	}
	list := func(items ...string) string { return "apiVersion: v1\nkind: List\nitems:\n" + strings.Join(items, "") }
	huge := list(strings.Repeat("- {}\n", machineconfig.MaxItems+1))
	deep := list(mc("99-a", "{}"), "- "+strings.Repeat("[", 5000)+strings.Repeat("]", 5000)+"\n")
	for name, c := range map[string]struct{ text, want string }{
		"configmap": {list(mc("99-a", "{}"), "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: kube-root-ca.crt}\n"),
			"line 10, column 3: MachineConfig kube-root-ca.crt (items[1]) is a \"ConfigMap\", not a MachineConfig"},
		"null":     {list(mc("99-a", "{}"), "- null\n"), "line 10, column 3: items[1] of the List is empty (null)"},
		"scalar":   {list("- 99-worker-chrony\n"), "items[0] of the List is !!str, not a MachineConfig object"},
		"no kind":  {list("- metadata: {name: x}\n"), "MachineConfig x (items[0]) is a (none), not a MachineConfig"},
		"inside":   {list(mc("99-a", "{}"), mc("50-fips", "{fips: true}")), "MachineConfig 50-fips (items[1]): spec.fips: true: FIPS mode"},
		"no name":  {list("- apiVersion: machineconfiguration.openshift.io/v1\n  kind: MachineConfig\n  metadata: {}\n"), "items[0] of the List: the MachineConfig has no metadata.name"},
		"huge":     {huge, "the List has 5001 items, more than mcp imports (5000)"},
		"deep":     {deep, "items[1] of the List is a list, not a MachineConfig object"},
		"too deep": {list(mc("99-a", "{}"), "- "+strings.Repeat("{a: ", 20000)+"1"+strings.Repeat("}", 20000)+"\n"), "line 10: exceeded max depth"},
	} {
		mcs, problems := machineconfig.Parse([]byte(c.text))
		if mcs != nil || len(problems) == 0 || !strings.Contains(problems[0].String(), c.want) {
			t.Errorf("%s: got %d MachineConfigs, %v; want %q", name, len(mcs), problems, c.want)
		}
	}
}
