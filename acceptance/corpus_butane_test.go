package acceptance

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	butane "github.com/coreos/ignition/v2/butane/config"
	"github.com/coreos/ignition/v2/butane/config/common"
	v36 "github.com/coreos/ignition/v2/config/v3_6"
	"github.com/coreos/ignition/v2/config/v3_6/types"
	"sigs.k8s.io/yaml"
)

// The Butane and MachineConfig part of the corpus (testdata/corpus/README.md): Fedora
// CoreOS documentation's Butane configs, Typhoon's Butane templates filled with plain
// values, and the MCO's example MachineConfigs. Each is given to a config block as it is
// (butane = file(…), machineconfig = file(…)); what it must do on a node is read apart
// from mcp: Butane's own translation, Ignition's own parser.

// refusedCorpus are the entries mcp refuses, with the reason `mcp validate` must give.
var refusedCorpus = map[string]string{
	// What the MCO does and mcp cannot (config/machineconfig).
	"mco/50-fips.yaml":            "spec.fips: true",
	"mco/50-ignition-kargs.yaml":  "spec.config.kernelArguments",
	"mco/50-realtime-kernel.yaml": "spec.kernelType: realtime",
	"mco/50-usbguard.yaml":        "spec.extensions",
	// The same, written in Butane (variant openshift): refused at the Butane field.
	"openshift-docs/worker-storage.bu":          "line 20, column 9: MachineConfig worker-storage: openshift.fips: true",
	"openshift-docs/butane-config-openshift.bu": "openshift.kernel_type: realtime",
	// Owners by number, which mcp does not manage (it takes owners by name).
	"butane-docs/examples-5.bu":                      "file /opt/file (storage.files.0): owner by number",
	"flatcar-docs/fb-provision-butane-examples-4.bu": "file /opt/file (storage.files.0): owner by number",
	// Flatcar's OEM partition, which is not one of the trees mcp manages.
	"flatcar-docs/updates-releases-releases-update-strategies-6.bu": `File path "/oem/bin/oem-postinst": outside /etc, /var, /usr/local and /opt`,
}

// spec22 are the MCO's Ignition spec 2.2 MachineConfigs: mcp reads them (translated as
// the MCO translates them), but Ignition's own parser, which this test judges by, reads
// spec 3 only; the machineconfig package's tests cover them.
var spec22 = []string{"mco/test-config.yaml", "mco/99-worker-ssh-docs.yaml"}

// buEntry is one Butane or MachineConfig of the corpus with what it declares.
type buEntry struct {
	name string // fcos-docs/x.bu, typhoon/x.bu, mco/x.yaml, gitops/x.yaml…
	file string // its path from the acceptance directory
	cfg  types.Config
	// kargs are the kernel arguments it gives: kernelArguments.shouldExist, a
	// MachineConfig's spec.kernelArguments (a Butane openshift's kernel_arguments).
	kargs []string
	// noBoot says why the real Ignition client cannot boot it on a scratch root ("": it
	// can): then it is applied and judged in the served config only.
	noBoot string
	pool   string
}

func buEntries(t *testing.T) (ok []*buEntry, refused []string) {
	t.Helper()
	var files []string
	for _, g := range []string{"testdata/corpus/fcos-docs/*.bu", "testdata/corpus/typhoon/*.bu", "testdata/corpus/openshift-docs/*.bu",
		"testdata/corpus/butane-docs/*.bu", "testdata/corpus/flatcar-docs/*.bu", "testdata/corpus/gitops/*.yaml",
		"../config/machineconfig/testdata/mco/*.yaml"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	for _, f := range files {
		e := &buEntry{file: f, name: filepath.Base(filepath.Dir(f)) + "/" + filepath.Base(f)}
		if slices.Contains(spec22, e.name) {
			continue
		}
		if _, no := refusedCorpus[e.name]; no {
			refused = append(refused, e.name)
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		raw, kargs := entryConfig(t, f, b)
		if e.cfg, _, err = v36.ParseCompatibleVersion(raw); err != nil {
			t.Fatalf("%s: Ignition: %v", f, err)
		}
		e.kargs = kargs
		for _, k := range e.cfg.KernelArguments.ShouldExist { // an entry may hold several, as rpm-ostree splits it
			e.kargs = append(e.kargs, strings.Fields(string(k))...)
		}
		ic := e.cfg.Ignition
		switch {
		case ic.Config.Replace.Source != nil || len(ic.Config.Merge) > 0 || len(ic.Security.TLS.CertificateAuthorities) > 0:
			e.noBoot = "it points Ignition at configs or certificates on other hosts (example.com)"
		case slices.ContainsFunc(e.cfg.Storage.Files, func(f types.File) bool { return remote(f.Contents) }):
			e.noBoot = "a file's contents come from another host (example.com)"
		case len(e.cfg.Storage.Luks) > 0:
			e.noBoot = "LUKS: Ignition's files stage reads the volumes' UUIDs from the devices its disks stage made"
		case slices.ContainsFunc(e.cfg.Systemd.Units, func(u types.Unit) bool { return u.Enabled != nil && strings.Contains(u.Name, "@") }):
			e.noBoot = "a template unit's instance enabled: Ignition asks the running systemd (PID 1, over D-Bus) its version"
		case missingGroup(e.cfg) != "":
			e.noBoot = "a user in the group " + missingGroup(e.cfg) + ", which the scratch root's CoreOS groups lack (useradd refuses it)"
		}
		ok = append(ok, e)
	}
	return ok, refused
}

// missingGroup is a group a user of cfg is put in that neither the scratch root's CoreOS
// groups (coreOSImage) nor cfg itself makes ("" when none): Flatcar's images have more
// (plugdev, systemd-journal), and useradd refuses a group that is not there.
func missingGroup(cfg types.Config) string {
	have := map[string]bool{"root": true, "core": true, "wheel": true, "sudo": true, "docker": true}
	for _, g := range cfg.Passwd.Groups {
		have[g.Name] = true
	}
	for _, u := range cfg.Passwd.Users {
		for _, g := range u.Groups {
			if !have[string(g)] {
				return string(g)
			}
		}
	}
	return ""
}

// entryConfig is the Ignition config of the entry in file f (b), read apart from mcp
// (Butane's own translation), and the kernel arguments of its MachineConfig: a
// MachineConfig's own, or the one Butane translates a variant openshift text to (its
// openshift section, which the raw Ignition config leaves out).
func entryConfig(t *testing.T, f string, b []byte) (json.RawMessage, []string) {
	t.Helper()
	if strings.HasSuffix(f, ".yaml") {
		return machineConfigOf(t, f, b)
	}
	// As mcp translates: compression is then the entry's own. Local references read from
	// the entry's directory, as mcp reads them from the directory of the file butane =
	// file(…) names.
	opts := common.TranslateOptions{NoResourceAutoCompression: true, FilesDir: filepath.Dir(f)}
	raw, _, err := butane.TranslateBytes(b, common.TranslateBytesOptions{Raw: true, TranslateOptions: opts})
	if err != nil {
		t.Fatalf("%s: Butane: %v", f, err)
	}
	if !strings.Contains(string(b), "variant: openshift") {
		return raw, nil
	}
	mc, _, err := butane.TranslateBytes(b, common.TranslateBytesOptions{TranslateOptions: opts})
	if err != nil {
		t.Fatalf("%s: Butane: %v", f, err)
	}
	_, kargs := machineConfigOf(t, f, mc)
	return raw, kargs
}

// machineConfigOf is the Ignition config and the kernel arguments of a MachineConfig's
// YAML, each entry split at whitespace.
func machineConfigOf(t *testing.T, f string, b []byte) (json.RawMessage, []string) {
	var mc struct {
		Spec struct {
			Config          json.RawMessage
			KernelArguments []string `json:"kernelArguments"`
		}
	}
	if err := yaml.Unmarshal(b, &mc); err != nil {
		t.Fatalf("%s: %v", f, err)
	}
	var kargs []string
	for _, k := range mc.Spec.KernelArguments {
		kargs = append(kargs, strings.Fields(k)...)
	}
	if len(mc.Spec.Config) == 0 { // a MachineConfig of kernel arguments alone
		mc.Spec.Config = json.RawMessage(`{"ignition": {"version": "3.2.0"}}`)
	}
	return mc.Spec.Config, kargs
}

// keys are what an entry claims on a node (leaves: its files and links; parents: their
// directories): two entries that share a claim, or where one's file or link is a
// directory of the other's, go to two pools, so that each node's expectation is its
// entries' own, not a merge of two.
func (e *buEntry) keys() (claims, leaves, parents []string) {
	s := &e.cfg.Storage
	leaf := func(p string) {
		leaves = append(leaves, p)
		for d := path.Dir(p); d != "/"; d = path.Dir(d) {
			parents = append(parents, d)
		}
	}
	for _, f := range s.Files {
		leaf(f.Path)
	}
	for _, l := range s.Links {
		leaf(l.Path)
	}
	claims = slices.Clone(leaves)
	for _, d := range s.Directories {
		claims = append(claims, d.Path)
	}
	for _, u := range e.cfg.Systemd.Units {
		claims = append(claims, "unit "+u.Name)
	}
	for _, u := range e.cfg.Passwd.Users {
		claims = append(claims, "user "+u.Name)
	}
	for _, g := range e.cfg.Passwd.Groups {
		claims = append(claims, "group "+g.Name)
	}
	for _, d := range s.Disks {
		claims = append(claims, "disk "+d.Device)
	}
	for _, f := range s.Filesystems {
		claims = append(claims, "filesystem "+f.Device)
	}
	for _, r := range s.Raid {
		claims = append(claims, "raid "+r.Name)
	}
	for _, l := range s.Luks {
		claims = append(claims, "luks "+l.Name)
	}
	if e.noBoot != "" || e.cfg.Ignition.Proxy.HTTPSProxy != nil {
		claims = append(claims, "ignition")
	}
	return claims, leaves, parents
}

// poolCorpus puts the entries into pools b0, b1, … so that no two in a pool conflict
// (keys).
func poolCorpus(entries []*buEntry) []string {
	type pool struct {
		claims, leaves, parents map[string]bool
		noBoot                  bool
	}
	var pools []*pool
	hit := func(keys []string, in map[string]bool) bool {
		return slices.ContainsFunc(keys, func(k string) bool { return in[k] })
	}
	for _, e := range entries {
		c, l, p := e.keys()
		i := slices.IndexFunc(pools, func(pl *pool) bool {
			return pl.noBoot == (e.noBoot != "") && !hit(c, pl.claims) && !hit(l, pl.parents) && !hit(p, pl.leaves)
		})
		if i < 0 {
			pools = append(pools, &pool{map[string]bool{}, map[string]bool{}, map[string]bool{}, e.noBoot != ""})
			i = len(pools) - 1
		}
		for _, k := range c {
			pools[i].claims[k] = true
		}
		for _, k := range l {
			pools[i].leaves[k] = true
		}
		for _, k := range p {
			pools[i].parents[k] = true
		}
		e.pool = fmt.Sprintf("b%d", i)
	}
	names := make([]string, len(pools))
	for i := range pools {
		names[i] = fmt.Sprintf("b%d", i)
	}
	return names
}

// corpusButane: every Butane and MachineConfig entry is validated (the refused ones with
// their reason), applied to a local fleet node of its pool, served and booted by the real
// Ignition client, and compared: files byte for byte with their modes, directories with
// theirs, links with their targets, units and drop-ins, the core user's keys, on the node
// and on Ignition's root; users and groups on Ignition's root; disks, RAID, filesystems,
// LUKS and remote configs in the served config. Drift is clean after.
func corpusButane(t *testing.T, ign string) {
	entries, refused := buEntries(t)
	dir := t.TempDir()
	for _, name := range refused {
		want := refusedCorpus[name]
		d := t.TempDir()
		e := &buEntry{name: name, file: corpusPath(name), pool: "worker"}
		writeCorpusDir(t, d, []*buEntry{e}, []string{"worker"})
		out, err := exec.Command(mcpBinary(t), "-chdir="+d, "validate", "-no-color").CombinedOutput()
		if err == nil || !strings.Contains(strings.Join(strings.Fields(strings.ReplaceAll(string(out), "│", "")), " "), want) {
			t.Errorf("%s: refused for %q, but validate says: %v\n%s", name, want, err, out)
		}
	}
	pools := poolCorpus(entries)
	writeCorpusDir(t, dir, entries, pools)
	t.Logf("Butane and MachineConfigs: %d entries in %d pools, %d refused", len(entries), len(pools), len(refused))
	if out, err := exec.Command(mcpBinary(t), "-chdir="+dir, "apply", "-auto-approve", "-no-color").CombinedOutput(); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	if out, err := exec.Command(mcpBinary(t), "-chdir="+dir, "drift", "-detailed-exitcode", "-no-color").CombinedOutput(); err != nil {
		t.Errorf("drift after apply: %v\n%s", err, out)
	}
	url := startServe(t, dir)
	onNodes, onIgnition, booted := tally{}, tally{}, 0
	for _, pool := range pools {
		var in []*buEntry
		for _, e := range entries {
			if e.pool == pool {
				in = append(in, e)
			}
		}
		node := filepath.Join(dir, "fleet/nodes", pool+"-0/root")
		served := servedConfig(t, url+"/config/"+pool)
		var S string
		if !slices.ContainsFunc(in, func(e *buEntry) bool { return e.noBoot != "" }) {
			S = firstBootInto(t, ign, "metal", "ignition.config.url="+url+"/config/"+pool, nil, func(S string) {
				coreOSImage(t)(S)
				osImage(t, S, entries, pool)
			})
		}
		kargs := nodeKernelArgs(t, filepath.Join(dir, "fleet/nodes", pool+"-0", "node.json"))
		for _, e := range in {
			for _, k := range e.kargs {
				if !slices.Contains(kargs, k) {
					t.Errorf("%s: node %s-0 runs kernel arguments %q, without %s", e.name, pool, kargs, k)
				}
				onNodes["kernel arguments"]++
			}
			judgeEntry(t, e, "node "+pool+"-0", node, false, onNodes)
			if S != "" {
				judgeEntry(t, e, "Ignition's root for "+pool, S, true, onIgnition)
				booted++
			} else {
				t.Logf("%s: served, not booted: %s", e.name, e.noBoot)
			}
			judgeServed(t, e, served)
		}
	}
	t.Logf("compared on the fleet's nodes: %v", onNodes)
	t.Logf("compared on Ignition's roots (%d entries booted): %v", booted, onIgnition)
	if onNodes["files"] < 150 || onIgnition["files"] < 150 || booted < 80 {
		t.Errorf("too little compared: the corpus is not read")
	}
}

// nodeKernelArgs are the kernel arguments a local node's machine runs (its node.json).
func nodeKernelArgs(t *testing.T, nodeJSON string) []string {
	t.Helper()
	var n struct {
		KernelArgs []string `json:"kernel_args"`
	}
	b, err := os.ReadFile(nodeJSON)
	if err != nil || json.Unmarshal(b, &n) != nil {
		t.Fatalf("%s: %v %s", nodeJSON, err, b)
	}
	return n.KernelArgs
}

func corpusPath(name string) string {
	if strings.HasPrefix(name, "mco/") {
		return "../config/machineconfig/testdata/mco/" + strings.TrimPrefix(name, "mco/")
	}
	return "testdata/corpus/" + name
}

// writeCorpusDir writes a configuration of a local fleet with one node per pool (a
// CoreOS root: /usr/local, /opt and /home linked into /var, the core user) and one config
// block per entry, giving it as it is.
func writeCorpusDir(t *testing.T, dir string, entries []*buEntry, pools []string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("mcp {\n  ignition_version = \"3.6.0\"\n}\n\nprovider \"local\" {\n  fleet = \"./fleet\"\n  drain_duration = \"0s\"\n  reboot_duration = \"0s\"\n}\n\n")
	passwd, _ := os.ReadFile("../examples/quickstart/fleet/nodes/worker-0/root/etc/passwd")
	group, _ := os.ReadFile("../examples/quickstart/fleet/nodes/worker-0/root/etc/group")
	os.MkdirAll(filepath.Join(dir, "fleet"), 0o755)
	os.WriteFile(filepath.Join(dir, "fleet/fleet.json"), []byte("{\"format_version\": 1}\n"), 0o644)
	for _, p := range pools {
		fmt.Fprintf(&b, "pool %q {\n  node_selector = { \"corpus-pool\" = %q }\n}\n\n", p, p)
		node := filepath.Join(dir, "fleet/nodes", p+"-0")
		root := filepath.Join(node, "root")
		os.MkdirAll(filepath.Join(root, "etc"), 0o755)
		writeFile(t, filepath.Join(root, "etc/passwd"), string(passwd))
		writeFile(t, filepath.Join(root, "etc/group"), string(group))
		coreosLinks(t, root)
		coreOSHome(t, root)
		osImage(t, root, entries, p)
		writeFile(t, filepath.Join(node, "node.json"), fmt.Sprintf(`{"name": %q, "labels": {"kubernetes.io/hostname": %[1]q, "corpus-pool": %q},
 "zone": "a", "created": "2026-01-01T00:00:00Z", "ready": true, "os_image": "quay.io/fedora/fedora-coreos:stable",
 "boot_id": "4b6bccf1db486efaa17804b843072493", "boot_image": "quay.io/fedora/fedora-coreos:stable", "state": "Done"}`, p+"-0", p))
	}
	os.MkdirAll(filepath.Join(dir, "corpus"), 0o755)
	copyLocalFiles(t, filepath.Join(dir, "corpus"))
	for i, e := range entries {
		src, err := os.ReadFile(e.file)
		if err != nil {
			t.Fatal(err)
		}
		local := fmt.Sprintf("corpus/%03d-%s", i, filepath.Base(e.file))
		writeFile(t, filepath.Join(dir, local), string(src))
		attr := "butane"
		if strings.HasSuffix(e.name, ".yaml") {
			attr = "machineconfig"
		}
		fmt.Fprintf(&b, "config %q {\n  pools = [%q]\n  %s = file(%q)\n}\n\n", fmt.Sprintf("%03d-%s", i, strings.ReplaceAll(e.name, "/", "-")), e.pool, attr, local)
	}
	writeFile(t, filepath.Join(dir, "main.hcl"), b.String())
}

// osImage gives root what the OS image of the pool's entries has and they take for
// granted: the units they enable or give drop-ins without contents (the OS's, in
// usr/lib/systemd/system), and the system users and groups that own their files.
func osImage(t *testing.T, root string, entries []*buEntry, pool string) {
	t.Helper()
	declared, owners, groups := map[string]bool{"core": true, "root": true}, map[string]bool{}, map[string]bool{}
	own := func(u types.NodeUser, g types.NodeGroup) {
		if u.Name != nil {
			owners[*u.Name] = true
		}
		if g.Name != nil {
			groups[*g.Name] = true
		}
	}
	for _, e := range entries {
		if e.pool != pool {
			continue
		}
		for _, u := range e.cfg.Passwd.Users {
			declared[u.Name] = true
		}
		for _, f := range e.cfg.Storage.Files {
			own(f.User, f.Group)
		}
		for _, d := range e.cfg.Storage.Directories {
			own(d.User, d.Group)
		}
		for _, u := range e.cfg.Systemd.Units {
			if u.Contents == nil {
				name := u.Name
				if i := strings.Index(name, "@"); i > 0 {
					name = name[:i+1] + name[strings.LastIndex(name, "."):]
				}
				os.MkdirAll(filepath.Join(root, "usr/lib/systemd/system"), 0o755)
				writeFile(t, filepath.Join(root, "usr/lib/systemd/system", name), "[Unit]\nDescription=the OS's "+name+"\n[Install]\nWantedBy=multi-user.target\n")
			}
		}
	}
	id := 2000
	for _, names := range []map[string]bool{owners, groups} {
		for n := range names {
			if declared[n] {
				continue
			}
			passwd, _ := os.ReadFile(filepath.Join(root, "etc/passwd"))
			if !strings.Contains("\n"+string(passwd), "\n"+n+":") {
				appendTo(t, filepath.Join(root, "etc/passwd"), fmt.Sprintf("%s:x:%d:%d::/:/sbin/nologin\n", n, id, id))
			}
			group, _ := os.ReadFile(filepath.Join(root, "etc/group"))
			if !strings.Contains("\n"+string(group), "\n"+n+":") {
				appendTo(t, filepath.Join(root, "etc/group"), fmt.Sprintf("%s:x:%d:\n", n, id))
			}
			id++
		}
	}
}

// coreOSImage makes a scratch root like a CoreOS image before Ignition: the core user,
// /home linked into /var, roots users can reach.
func coreOSImage(t *testing.T) func(S string) {
	return func(S string) {
		appendTo(t, filepath.Join(S, "etc/passwd"), "core:x:1000:1000:CoreOS Admin:/var/home/core:/bin/bash\n")
		appendTo(t, filepath.Join(S, "etc/group"), "core:x:1000:\nwheel:x:10:\nsudo:x:27:\ndocker:x:983:\n")
		appendTo(t, filepath.Join(S, "etc/shadow"), "core:*:19000:0:99999:7:::\n")
		appendTo(t, filepath.Join(S, "etc/gshadow"), "core:!::\nwheel:!::\nsudo:!::\ndocker:!::\n")
		// useradd reads it from the root: each new user gets its own group, as on CoreOS.
		writeFile(t, filepath.Join(S, "etc/login.defs"), "USERGROUPS_ENAB yes\nUID_MIN 1000\nGID_MIN 1000\n")
		os.Remove(filepath.Join(S, "home"))
		coreOSHome(t, S)
		for d := filepath.Dir(S); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
			os.Chmod(d, 0o755)
		}
	}
}

func servedConfig(t *testing.T, url string) types.Config {
	t.Helper()
	var b []byte
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		b, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK || time.Now().After(deadline) {
			break // mcp serve answers once it has read the state
		}
	}
	cfg, _, err := v36.ParseCompatibleVersion(b)
	if err != nil {
		t.Fatalf("%s: %v\n%s", url, err, b)
	}
	return cfg
}

// localFiles are what the Fedora CoreOS documentation's configs name as Butane local
// files (testdata/corpus/README.md): beside them, and beside their copies in a corpus
// directory.
var localFiles = []string{"ssh-key.pub", "public-ipv4.sh", "issuegen-public-ipv4.service",
	"users/core/id_rsa.pub", "users/jlebon/id_rsa.pub", "users/jlebon/id_ed25519.pub", "users/miabbott/id_rsa.pub"}

func copyLocalFiles(t *testing.T, dir string) {
	t.Helper()
	for _, f := range localFiles {
		b, err := os.ReadFile(filepath.Join("testdata/corpus/fcos-docs", f))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755)
		writeFile(t, filepath.Join(dir, f), string(b))
	}
}
