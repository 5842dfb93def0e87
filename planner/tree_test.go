package planner

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/steps"
)

// Directories and links merge by path across a pool's configs, later wins whatever each
// declared; the core user's keys of every config are one file, each key once; all of it is
// in the Ignition config, which Ignition's parser takes.
func TestRenderMergesDirectoriesLinksAndKeys(t *testing.T) {
	d := desired(model.Pool{Name: "worker"})
	d.Configs = []model.Config{
		{Name: "10-a", Pools: []string{"worker"},
			Directories: []model.Directory{{Entry: model.Entry{Path: "/etc/a"}, Mode: 0o755}, {Entry: model.Entry{Path: "/var/lib/d", User: "core"}, Mode: 0o1777}},
			Links:       []model.Link{{Entry: model.Entry{Path: "/etc/localtime"}, Target: "../usr/share/zoneinfo/UTC"}},
			SSHKeys:     []string{"ssh-ed25519 AAAA one"}},
		{Name: "20-b", Pools: []string{"worker"},
			Files:   []model.File{{Entry: model.Entry{Path: "/etc/a"}, Mode: 0o644, Contents: []byte("a file now\n")}},
			Links:   []model.Link{{Entry: model.Entry{Path: "/etc/localtime"}, Target: "../usr/share/zoneinfo/Europe/Paris"}},
			SSHKeys: []string{"ssh-ed25519 AAAA one", "ssh-rsa AAAA two"}},
	}
	out, diags := Render(d, ignition.Renderer{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	r := out["worker"]
	var dirs, links []string
	for _, x := range r.Directories {
		dirs = append(dirs, x.Path)
	}
	for _, x := range r.Links {
		links = append(links, x.Path+" → "+x.Target)
	}
	if diff := cmp.Diff([]string{"/home/core/.ssh", "/home/core/.ssh/authorized_keys.d", "/var/lib/d"}, dirs); diff != "" {
		t.Errorf("directories (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/etc/localtime → ../usr/share/zoneinfo/Europe/Paris"}, links); diff != "" {
		t.Errorf("links (-want +got):\n%s", diff)
	}
	keys := r.File(model.SSHKeysFile)
	if keys == nil || string(keys.Contents) != "ssh-ed25519 AAAA one\nssh-rsa AAAA two\n" || keys.Mode != 0o600 ||
		keys.User != "core" || len(keys.OnChange) != 1 || keys.OnChange[0].Kind != model.PolicyNone {
		t.Errorf("keys file: %+v", keys)
	}
	if r.File("/etc/a") == nil || r.Directory("/etc/a") != nil {
		t.Error("the later file at /etc/a did not replace the earlier directory")
	}
	var ign struct {
		Storage struct {
			Directories []map[string]any `json:"directories"`
			Links       []map[string]any `json:"links"`
		} `json:"storage"`
	}
	if err := json.Unmarshal(content.Ignition(r), &ign); err != nil {
		t.Fatal(err)
	}
	if len(ign.Storage.Directories) != 3 || ign.Storage.Directories[2]["mode"] != float64(0o1777) ||
		len(ign.Storage.Links) != 1 || ign.Storage.Links[0]["overwrite"] != true {
		t.Errorf("Ignition storage: %s", content.Ignition(r))
	}
	if by := r.Provenance.Files["/etc/localtime"]; by.By.Block != "config.20-b" || len(by.Overrode) != 1 {
		t.Errorf("provenance of the link: %+v", by)
	}
}

// A config without directories, links, keys or a first-boot part renders the Ignition
// config (and so the name) it rendered before they existed.
func TestRenderWithoutTreesIsByteIdentical(t *testing.T) {
	r := &model.Rendered{Pool: "worker", IgnitionVersion: "3.4.0", KernelArgs: []string{"nosmt"},
		Files: []model.File{{Entry: model.Entry{Path: "/etc/chrony.conf"}, Mode: 0o644, Contents: []byte("server x iburst\n")}},
		Units: []model.Unit{{Name: "a.service", Contents: "[Service]\nExecStart=/bin/true\n"}}}
	const want = `{"ignition":{"version":"3.4.0"},"kernelArguments":{"shouldExist":["nosmt"]},"storage":{"files":[{"contents":{"source":"data:,server%20x%20iburst%0A"},"mode":420,"overwrite":true,"path":"/etc/chrony.conf"}]},"systemd":{"units":[{"contents":"[Service]\nExecStart=/bin/true\n","name":"a.service"}]}}`
	if got := string(content.Ignition(r)); got != want {
		t.Errorf("Ignition config changed:\n got %s\nwant %s", got, want)
	}
}

// The first-boot part is merged as Ignition merges configs (a later config's user replaces
// an earlier one's), served in the Ignition config, and names the rendered config; a change
// to it alone gives running nodes no step, and the plan warns that it cannot reach them.
func TestFirstBootPartNamesButStepsNothing(t *testing.T) {
	d := desired(model.Pool{Name: "worker"})
	d.Configs = []model.Config{
		{Name: "10-a", Pools: []string{"worker"}, Files: []model.File{{Entry: model.Entry{Path: "/etc/x"}, Mode: 0o644, Contents: []byte("x")}},
			FirstBoot: []byte(`{"passwd":{"users":[{"name":"alice","groups":["wheel"]}]}}`)},
		{Name: "20-b", Pools: []string{"worker"},
			FirstBoot: []byte(`{"passwd":{"groups":[{"name":"ops"}],"users":[{"name":"alice","groups":["ops"]}]},"storage":{"disks":[{"device":"/dev/vdb","wipeTable":true}]}}`)},
	}
	out, diags := Render(d, ignition.Renderer{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	r1 := out["worker"]
	if got, want := string(r1.FirstBoot), `{"passwd":{"groups":[{"name":"ops"}],"users":[{"groups":["wheel","ops"],"name":"alice"}]},"storage":{"disks":[{"device":"/dev/vdb","wipeTable":true}]}}`; got != want {
		t.Errorf("merged first-boot part:\n got %s\nwant %s", got, want)
	}
	ign := string(content.Ignition(r1))
	if !strings.Contains(ign, `"passwd":{"groups":[{"name":"ops"}]`) || !strings.Contains(ign, `"disks":[{"device":"/dev/vdb"`) ||
		!strings.Contains(ign, `"path":"/etc/x"`) {
		t.Errorf("served Ignition config lacks the first-boot part: %s", ign)
	}
	d.Configs[1].FirstBoot = []byte(`{"passwd":{"groups":[{"name":"ops2"}]}}`)
	out, diags = Render(d, ignition.Renderer{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	r2 := out["worker"]
	if r1.Name == r2.Name {
		t.Fatal("a changed first-boot part left the rendered config's name as it was")
	}
	if s := steps.Derive(r1, r2); len(s) != 0 {
		t.Errorf("a first-boot change gives running nodes steps: %v", s)
	}
	n := node("w-0", "worker", "a", 0)
	n.CurrentConfig = r1.Name
	p, err := MakePlan(Input{Desired: d, Rendered: out, Known: map[string]*model.Rendered{r1.Name: r1},
		Pointers: map[string]string{"worker": r1.Name}, Fleet: &model.Fleet{Nodes: []model.Node{n}}})
	if err != nil {
		t.Fatal(err)
	}
	if w := p.Pools[0].Warnings; len(w) != 1 || !strings.Contains(w[0], "cannot reach the 1 node running") {
		t.Errorf("pool warnings: %q", w)
	}
	items := p.Pools[0].Changes[0].Items
	if len(items) != 1 || items[0].Kind != ItemFirstBoot || !strings.Contains(items[0].After.Content.Text, `"ops2"`) {
		t.Errorf("changes: %+v", items)
	}
}

// A first-boot part using a field the rendered config's spec lacks is an error at the
// config that declared it: Ignition would drop the field at boot.
func TestFirstBootPartNeedsItsSpec(t *testing.T) {
	d := desired(model.Pool{Name: "worker"})
	d.IgnitionVersion = "3.4.0"
	at := model.Range{Filename: "main.hcl", Start: model.Pos{Line: 7, Column: 3}}
	d.Configs = []model.Config{{Name: "10-a", Pools: []string{"worker"}, FirstBootRange: at,
		FirstBoot: []byte(`{"storage":{"luks":[{"name":"data","device":"/dev/vdb","cex":{"enabled":true}}]}}`)}}
	_, diags := Render(d, ignition.Renderer{})
	if !diags.HasErrors() {
		t.Fatal("a 3.5 field (luks cex) in a 3.4 config rendered")
	}
	i := slices.IndexFunc(diags, func(d *model.Diagnostic) bool { return d.Severity == model.DiagError })
	e := diags[i].Error()
	if !strings.Contains(e, "main.hcl:7,3") || !strings.Contains(e, "unused key") {
		t.Errorf("diagnostic: %s", e)
	}
}

// Steps for directories and links: added, changed (mode, owner, target) and removed ones are
// writes with their on_change policies, as files.
func TestStepsForDirectoriesAndLinks(t *testing.T) {
	none := []model.Policy{{Kind: model.PolicyNone}}
	old := &model.Rendered{Directories: []model.Directory{{Entry: model.Entry{Path: "/etc/d", OnChange: none}, Mode: 0o755}, {Entry: model.Entry{Path: "/etc/gone", OnChange: none}, Mode: 0o755}},
		Links: []model.Link{{Entry: model.Entry{Path: "/etc/l", OnChange: none}, Target: "a"}}}
	new := &model.Rendered{Directories: []model.Directory{{Entry: model.Entry{Path: "/etc/d", OnChange: none}, Mode: 0o700}},
		Links: []model.Link{{Entry: model.Entry{Path: "/etc/l"}, Target: "b"}}}
	var got []string
	for _, s := range steps.Derive(old, new) {
		got = append(got, s.String()+": "+s.Reason)
	}
	want := []string{
		"cordon: link /etc/l changed (target a → b); no on_change policy: reboot",
		"drain: link /etc/l changed (target a → b); no on_change policy: reboot",
		"write /etc/d: directory /etc/d changed (mode 0755 → 0700)",
		"write /etc/gone: directory /etc/gone removed (no longer in any config; removed when empty)",
		"write /etc/l: link /etc/l changed (target a → b)",
		"reboot: link /etc/l changed (target a → b); no on_change policy: reboot",
		"verify: link /etc/l changed (target a → b); no on_change policy: reboot",
		"uncordon: link /etc/l changed (target a → b); no on_change policy: reboot",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}
