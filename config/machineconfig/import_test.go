package machineconfig_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	v36 "github.com/coreos/ignition/v2/config/v3_6"
	"github.com/coreos/ignition/v2/config/v3_6/types"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/vincent-petithory/dataurl"
	"sigs.k8s.io/yaml"

	"github.com/mcpfleet/mcp/config"
	"github.com/mcpfleet/mcp/config/machineconfig"
	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/internal/unitinstall"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/state/localstate"
)

// The MCO's example MachineConfigs that mcp takes (testdata/mco, README.md there).
var accepted = []string{"99-worker-chrony.yaml", "99-worker-disable-chrony.yaml", "99-worker-duplicated-kargs.yaml",
	"99-worker-journald.yaml", "99-worker-kernel-selinux.yaml", "99-worker-policy-json.yaml",
	"99_openshift-machineconfig_worker.yaml", "99-worker-extra-disks.yaml"}

// state is what a pool's nodes get, as the MCO's merged MachineConfig says it.
type state struct {
	Files      map[string]file
	Units      map[string]model.Unit
	KernelArgs []string
	OSImage    string
}

type file struct {
	Mode     int
	Contents string
}

// mcoState is what the MCO renders from the MachineConfigs at paths for one pool, read
// apart from mcp's reader: sigs.k8s.io/yaml as the apiserver reads YAML, Ignition's own
// parser and merge, in the MCO's order (by name), kernel arguments concatenated.
func mcoState(t *testing.T, paths ...string) state {
	t.Helper()
	type mcObj struct {
		Metadata struct{ Name string }
		Spec     struct {
			Config          json.RawMessage
			KernelArguments []string
			OSImageURL      string
		}
	}
	var mcs []mcObj
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var mc mcObj
		if err := yaml.Unmarshal(b, &mc); err != nil {
			t.Fatal(err)
		}
		mcs = append(mcs, mc)
	}
	sort.Slice(mcs, func(i, j int) bool { return mcs[i].Metadata.Name < mcs[j].Metadata.Name })
	var merged types.Config
	st := state{Files: map[string]file{}, Units: map[string]model.Unit{}}
	for _, mc := range mcs {
		cfg, rpt, err := v36.ParseCompatibleVersion(mc.Spec.Config)
		if err != nil {
			t.Fatalf("%s: %v %s", mc.Metadata.Name, err, rpt)
		}
		merged = v36.Merge(merged, cfg)
		for _, k := range mc.Spec.KernelArguments {
			st.KernelArgs = append(st.KernelArgs, strings.Fields(k)...)
		}
		if mc.Spec.OSImageURL != "" {
			st.OSImage = mc.Spec.OSImageURL
		}
	}
	for _, f := range merged.Storage.Files {
		d, err := dataurl.DecodeString(*f.Contents.Source)
		if err != nil {
			t.Fatal(err)
		}
		mode := 0o644
		if f.Mode != nil {
			mode = *f.Mode
		}
		st.Files[f.Path] = file{mode, string(d.Data)}
	}
	for _, u := range merged.Passwd.Users {
		// The MCO writes the core user's keys, one a line, to the file Ignition writes them to.
		if u.Name == "core" && len(u.SSHAuthorizedKeys) > 0 {
			var keys string
			for _, k := range u.SSHAuthorizedKeys {
				keys += string(k) + "\n"
			}
			st.Files["/home/core/.ssh/authorized_keys.d/ignition"] = file{0o600, keys}
		}
	}
	for _, u := range merged.Systemd.Units {
		mu := model.Unit{Name: u.Name, Enabled: u.Enabled, Mask: u.Mask != nil && *u.Mask}
		if u.Contents != nil {
			mu.Contents = *u.Contents
		}
		for _, d := range u.Dropins {
			mu.Dropins = append(mu.Dropins, model.Dropin{Name: d.Name, Contents: *d.Contents})
		}
		st.Units[u.Name] = normalUnit(mu)
	}
	return st
}

// normalUnit drops what makes no difference on a node: enabled = true where enabling links
// nothing (no [Install] section; mcp import leaves it out, Ignition only warns).
func normalUnit(u model.Unit) model.Unit {
	if u.Enabled != nil && *u.Enabled && u.Contents != "" {
		files := []string{u.Contents}
		for _, d := range u.Dropins {
			files = append(files, d.Contents)
		}
		if info, err := unitinstall.Parse(files...); err == nil && !info.Installable(u.Name) {
			u.Enabled = nil
		}
	}
	slices.SortFunc(u.Dropins, func(a, b model.Dropin) int { return strings.Compare(a.Name, b.Name) })
	if len(u.Dropins) == 0 {
		u.Dropins = nil
	}
	return u
}

// mcpState imports the MachineConfigs at paths with mcp import's writer, loads the HCL it
// writes beside a worker pool, and renders the pool as mcp plan would.
func mcpState(t *testing.T, pools []string, paths ...string) (state, error) {
	t.Helper()
	var all []machineconfig.MachineConfig
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		mcs, problems := machineconfig.Parse(b)
		if mcs == nil {
			t.Fatalf("%s: %v", p, problems)
		}
		all = append(all, mcs...)
	}
	hcl, _, err := machineconfig.HCL(all, pools)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	main := "provider \"local\" { fleet = \"./fleet\" }\npool \"worker\" {}\n"
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "imported.hcl"), hcl, 0o644); err != nil {
		t.Fatal(err)
	}
	res, diags := config.Load(dir, config.Options{Schemas: config.Schemas{
		Providers: []model.BlockSpec{local.Spec.BlockSpec}, Backends: []model.BlockSpec{localstate.Spec.BlockSpec}}})
	if diags.HasErrors() {
		t.Fatalf("the HCL written does not load: %s\n%s", diags, hcl)
	}
	rendered, diags := planner.Render(res.Desired, ignition.Renderer{})
	if diags.HasErrors() {
		return state{}, diags
	}
	r := rendered["worker"]
	st := state{Files: map[string]file{}, Units: map[string]model.Unit{}, KernelArgs: r.KernelArgs, OSImage: r.OSImage}
	for _, f := range r.Files {
		st.Files[f.Path] = file{f.Mode, string(f.Contents)}
	}
	for _, u := range r.Units {
		st.Units[u.Name] = normalUnit(model.Unit{Name: u.Name, Enabled: u.Enabled, Mask: u.Mask, Contents: u.Contents, Dropins: u.Dropins})
	}
	return st, nil
}

// dedup is args without repeats, the first kept: mcp's rendered config holds an argument
// once where the MCO appends it as often as it is given (docs/decisions.md).
func dedup(args []string) []string {
	var out []string
	for _, a := range args {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// Each of the MCO's examples, imported as HCL, plans the files (content and mode), units
// (enabled, masked, contents, drop-ins), kernel arguments and OS image the MCO renders
// from it; and all of them together, merged in the MCO's order, too.
func TestImportPlansAsTheMCO(t *testing.T) {
	dir := filepath.Join("testdata", "mco")
	var together []string
	for _, name := range accepted {
		p := filepath.Join(dir, name)
		got, err := mcpState(t, nil, p)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		want := mcoState(t, p)
		want.KernelArgs = dedup(want.KernelArgs)
		if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b *bool) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) })); diff != "" {
			t.Errorf("%s: mcp's plan differs from the MCO's render (-mco +mcp):\n%s", name, diff)
		}
		together = append(together, p)
	}
	got, err := mcpState(t, nil, together...)
	if err != nil {
		t.Fatal(err)
	}
	want := mcoState(t, together...)
	want.KernelArgs = dedup(want.KernelArgs)
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b *bool) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) })); diff != "" {
		t.Errorf("merged: mcp's plan differs from the MCO's render (-mco +mcp):\n%s", diff)
	}
}

// The MCO's spec 2.2 example (no role label: the pool is given) imports to HCL that plans
// what mcp reads from it: files, units and kernel arguments, with its odd content intact.
func TestImportSpec22Example(t *testing.T) {
	p := filepath.Join("testdata", "mco", "test-config.yaml")
	b, _ := os.ReadFile(p)
	mcs, _ := machineconfig.Parse(b)
	if _, _, err := machineconfig.HCL(mcs, nil); err == nil || !strings.Contains(err.Error(), "no machineconfiguration.openshift.io/role label") {
		t.Errorf("without a role label or pools: %v", err)
	}
	got, err := mcpState(t, []string{"worker"}, p)
	if err != nil {
		t.Fatal(err)
	}
	want := state{Files: map[string]file{}, Units: map[string]model.Unit{}, KernelArgs: mcs[0].KernelArgs, OSImage: mcs[0].OSImage}
	for _, f := range mcs[0].Ignition.Files {
		want.Files[f.Path] = file{f.Mode, string(f.Contents)}
	}
	for _, u := range mcs[0].Ignition.Units {
		want.Units[u.Name] = normalUnit(model.Unit{Name: u.Name, Enabled: u.Enabled, Mask: u.Mask, Contents: u.Contents, Dropins: u.Dropins})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-read +planned):\n%s", diff)
	}
}

// renderDir loads the configuration in dir and renders pool as mcp plan would.
func renderDir(t *testing.T, dir, pool string) (model.Rendered, model.Diagnostics) {
	t.Helper()
	res, diags := config.Load(dir, config.Options{Schemas: config.Schemas{
		Providers: []model.BlockSpec{local.Spec.BlockSpec}, Backends: []model.BlockSpec{localstate.Spec.BlockSpec}}})
	if diags.HasErrors() {
		return model.Rendered{}, diags
	}
	rendered, rdiags := planner.Render(res.Desired, ignition.Renderer{})
	if rendered[pool] == nil {
		return model.Rendered{}, append(diags, rdiags...)
	}
	return *rendered[pool], append(diags, rdiags...)
}

// A MachineConfig given to a config block as machineconfig = file(…) renders the same
// config as the HCL mcp import machineconfig writes from it: files (any bytes), units,
// directories, links, the core user's SSH keys, kernel arguments, the OS image and the
// first-boot part (disks, RAID, filesystems; files under /home), with the same warnings
// about what is first boot only.
func TestImportIsTheMachineconfigAttribute(t *testing.T) {
	binary := "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: 50-tree\n" +
		"  labels: {machineconfiguration.openshift.io/role: worker}\nspec:\n  config:\n    ignition: {version: 3.4.0}\n" +
		"    passwd: {users: [{name: core, sshAuthorizedKeys: [ssh-ed25519 AAAA a@b]}, {name: ops, groups: [wheel]}]}\n" +
		"    storage:\n      files: [{path: /opt/bin/tool, mode: 493, contents: {source: \"data:;base64,AP/+gA0K\"}}]\n" +
		"      directories: [{path: /var/lib/app, mode: 488, user: {name: core}}, {path: /var/lib/fresh, overwrite: true}]\n" +
		"      links: [{path: /etc/localtime, target: ../usr/share/zoneinfo/UTC}, {path: /etc/app.conf, target: /etc/os-release, hard: true}]\n"
	extra := t.TempDir()
	if err := os.WriteFile(filepath.Join(extra, "50-tree.yaml"), []byte(binary), 0o644); err != nil {
		t.Fatal(err)
	}
	mco, _ := filepath.Abs(filepath.Join("testdata", "mco"))
	files := append(slices.Clone(accepted), "90-infra-testfile.yaml", "test-config.yaml", "99-worker-ssh-docs.yaml")
	for i := range files {
		files[i] = filepath.Join(mco, files[i])
	}
	files = append(files, filepath.Join(extra, "50-tree.yaml"))
	for _, p := range files {
		b, _ := os.ReadFile(p)
		mcs, problems := machineconfig.ParseWith(b, config.MachineConfigChecks())
		if mcs == nil {
			t.Fatalf("%s: %v", p, problems)
		}
		imported, warnings, err := machineconfig.HCL(mcs, []string{"worker"})
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		main := "provider \"local\" { fleet = \"./fleet\" }\npool \"worker\" {}\n"
		a, b2 := t.TempDir(), t.TempDir()
		os.WriteFile(filepath.Join(a, "main.hcl"), []byte(main), 0o644)
		os.WriteFile(filepath.Join(a, "imported.hcl"), imported, 0o644)
		os.WriteFile(filepath.Join(b2, "main.hcl"), []byte(main+fmt.Sprintf("config %q {\n  pools = [\"worker\"]\n  machineconfig = file(%q)\n}\n", mcs[0].Name, p)), 0o644)
		gotImport, d1 := renderDir(t, a, "worker")
		gotAttr, d2 := renderDir(t, b2, "worker")
		if d1.HasErrors() || d2.HasErrors() {
			t.Errorf("%s: import: %s\nattribute: %s\n%s", p, d1, d2, imported)
			continue
		}
		// The import leaves out enabled where enabling links nothing (no [Install]; mcp's
		// unit blocks refuse it): the node is the same, the config's name is not.
		noop := false
		for _, r := range []*model.Rendered{&gotAttr, &gotImport} {
			for i, u := range r.Units {
				if n := normalUnit(u); !reflect.DeepEqual(n.Enabled, u.Enabled) {
					r.Units[i].Enabled, noop = n.Enabled, true
				}
			}
		}
		ignored := []string{"Provenance"}
		if noop {
			ignored = append(ignored, "Name")
		}
		if diff := cmp.Diff(gotAttr, gotImport, cmpopts.IgnoreFields(model.Rendered{}, ignored...),
			cmpopts.IgnoreFields(model.File{}, "DeclRange", "Text"), cmpopts.IgnoreFields(model.Unit{}, "DeclRange", "Text"),
			cmpopts.IgnoreFields(model.Directory{}, "DeclRange", "Text"), cmpopts.IgnoreFields(model.Link{}, "DeclRange", "Text"),
			cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: (-machineconfig attribute +imported HCL):\n%s\n%s", p, diff, imported)
		}
		if firstBootWarned(d2) != firstBootWarned(d1) || (firstBootWarned(d1) && !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, "first boot only") })) {
			t.Errorf("%s: first-boot warnings differ: attribute %s, import %s, import's own %q", p, d2, d1, warnings)
		}
		if strings.HasSuffix(p, "ssh-docs.yaml") && !slices.ContainsFunc(gotImport.Files, func(f model.File) bool {
			return f.Path == model.SSHKeysFile && string(f.Contents) == "ssh-rsa ABC123....\nssh-ed25519 XYZ7890....\n"
		}) {
			t.Errorf("the spec 2.2 SSH keys example: %+v", gotImport.Files)
		}
		if strings.HasSuffix(p, "90-infra-testfile.yaml") && (!strings.Contains(string(gotAttr.FirstBoot), "/home/core/test") || !firstBootWarned(d2) ||
			slices.ContainsFunc(gotAttr.Files, func(f model.File) bool { return f.Path == "/home/core/test" })) {
			t.Errorf("a file under /home is first boot only, with a warning: first boot %s, %s", gotAttr.FirstBoot, d2)
		}
		if strings.HasSuffix(p, "50-tree.yaml") {
			checkTree(t, gotImport, string(imported))
		}
	}
}

func firstBootWarned(d model.Diagnostics) bool {
	return slices.ContainsFunc(d, func(x *model.Diagnostic) bool { return x.Summary == "First boot only" })
}

// checkTree: the hand-written MachineConfig's tree is all there, binary content as
// content_base64, and the other user first boot only.
func checkTree(t *testing.T, r model.Rendered, imported string) {
	t.Helper()
	for _, want := range []string{`content_base64 = "AP/+gA0K"`, `directory "/var/lib/app"`, `link "/etc/localtime"`, "hard   = true",
		"ssh_authorized_keys {", `"overwrite": true`, `"name": "ops"`} {
		if !strings.Contains(imported, want) {
			t.Errorf("the HCL written lacks %q:\n%s", want, imported)
		}
	}
	i := slices.IndexFunc(r.Files, func(f model.File) bool { return f.Path == "/opt/bin/tool" })
	if i < 0 || string(r.Files[i].Contents) != "\x00\xff\xfe\x80\r\n" || r.Files[i].Mode != 0o755 {
		t.Errorf("binary file: %+v", r.Files)
	}
	j := slices.IndexFunc(r.Directories, func(d model.Directory) bool { return d.Path == "/var/lib/fresh" })
	if j < 0 || !r.Directories[j].Overwrite || len(r.Links) != 2 || !strings.Contains(string(r.FirstBoot), `"ops"`) {
		t.Errorf("directories %+v, links %+v, first boot %s", r.Directories, r.Links, r.FirstBoot)
	}
}
