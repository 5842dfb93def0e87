package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/model"
)

// treeConfig is a configuration with one config "50-t" whose body is body (from line 4).
func treeConfig(t *testing.T, body string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "main.hcl", "provider \"local\" { fleet = \"./fleet\" }\npool \"worker\" {}\nconfig \"50-t\" {\n  pools = [\"worker\"]\n"+body+"}\n")
	for name, text := range files {
		write(t, dir, name, text)
	}
	return dir
}

// Directory, link and ssh_authorized_keys blocks join their config as files do, each at
// its label (or block) with its attributes.
func TestDirectoryLinkAndKeysBlocks(t *testing.T) {
	dir := treeConfig(t, `  directory "/etc/foo" {
    mode  = "0750"
    user  = "core"
    group = "core"
  }
  directory "/var/lib/bar" {}
  link "/etc/localtime" { target = "../usr/share/zoneinfo/UTC" }
  link "/etc/hard" {
    target    = "/etc/foo/real"
    hard      = true
    on_change = ["none"]
  }
  ssh_authorized_keys {
    user = "core"
    keys = ["ssh-ed25519 AAAA one", "ssh-rsa AAAA two"]
  }
`, nil)
	res, diags := Load(dir, Options{Schemas: testSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	c := res.Desired.Configs[0]
	d := c.Directories
	if len(d) != 2 || d[0].Path != "/etc/foo" || d[0].Mode != 0o750 || d[0].User != "core" || d[0].Group != "core" ||
		d[0].DeclRange.Start.Line != 5 || d[1].Mode != 0o755 || d[1].Path != "/var/lib/bar" {
		t.Errorf("directories: %+v", c.Directories)
	}
	if len(c.Links) != 2 || c.Links[0].Target != "../usr/share/zoneinfo/UTC" || c.Links[0].Hard ||
		!c.Links[1].Hard || c.Links[1].OnChange[0].Kind != model.PolicyNone || c.Links[1].DeclRange.Start.Line != 12 {
		t.Errorf("links: %+v", c.Links)
	}
	if strings.Join(c.SSHKeys, "|") != "ssh-ed25519 AAAA one|ssh-rsa AAAA two" || c.SSHKeysSource.Range.Start.Line != 17 {
		t.Errorf("keys %q at %+v", c.SSHKeys, c.SSHKeysSource)
	}
}

// Each mistake in a directory, link or ssh_authorized_keys block is an error at the place
// it is, saying what to do.
func TestTreeBlockDiagnostics(t *testing.T) {
	for _, c := range []struct {
		name, body, summary, detail string
		line                        int
	}{
		{"relative directory", `  directory "etc/foo" {}` + "\n", "Relative path", "must be absolute", 5},
		{"directory outside the trees", `  directory "/usr/lib/foo" {}` + "\n", "Path outside the managed trees", "/usr/lib/foo", 5},
		{"bad mode", "  directory \"/etc/foo\" {\n    mode = \"0999\"\n  }\n", "Invalid mode", "octal", 6},
		{"link without target", `  link "/etc/l" {}` + "\n", "Missing required argument", "target", 5},
		{"empty target", `  link "/etc/l" { target = "" }` + "\n", "Invalid link target", "needs a target", 5},
		{"hard link out of the trees", `  link "/etc/l" {` + "\n    target = \"/usr/bin/x\"\n    hard = true\n  }\n",
			"Invalid hard link target", "a file of the node", 6},
		{"same path twice", "  file \"/etc/x\" { content = \"x\" }\n  directory \"/etc/x\" {}\n", "Path declared twice",
			"/etc/x is also declared by the file block at", 6},
		{"a Butane directory at a directory block's path", "  directory \"/etc/d\" {}\n  butane = \"variant: fcos\\nversion: 1.5.0\\nstorage:\\n  directories:\\n    - path: /etc/d\\n\"\n",
			"Duplicate directory", "/etc/d (storage.directories.0) is also declared by the directory block at", 6},
		{"a Butane link at a link block's path", "  link \"/etc/l\" { target = \"a\" }\n  butane = \"variant: fcos\\nversion: 1.5.0\\nstorage:\\n  links:\\n    - path: /etc/l\\n      target: b\\n\"\n",
			"Duplicate link", "/etc/l (storage.links.0) is also declared by the link block at", 6},
		{"another user's keys", "  ssh_authorized_keys {\n    user = \"alice\"\n    keys = [\"ssh-ed25519 AAAA\"]\n  }\n",
			"Unsupported user", "core user only", 6},
		{"a key of two lines", "  ssh_authorized_keys {\n    keys = [\"ssh-ed25519 AAAA\", \"a\\nb\"]\n  }\n",
			"Invalid SSH key", "one non-empty line", 6},
		{"no keys", "  ssh_authorized_keys {\n    keys = []\n  }\n", "No SSH keys", "at least one", 6},
		{"two key blocks", "  ssh_authorized_keys { keys = [\"a\"] }\n  ssh_authorized_keys { keys = [\"b\"] }\n",
			"Duplicate ssh_authorized_keys block", "already declared at", 6},
		{"butane and ignition", "  butane = \"variant: fcos\\nversion: 1.5.0\\n\"\n  ignition = \"{}\"\n", "Both butane and ignition",
			"give one", 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			diags := loadWithin(t, treeConfig(t, c.body, nil), Options{Schemas: testSchemas})
			d := findDiag(diags, c.summary)
			if d == nil {
				t.Fatalf("no %q in %v", c.summary, diags)
			}
			if !strings.Contains(d.Detail, c.detail) {
				t.Errorf("detail %q lacks %q", d.Detail, c.detail)
			}
			if d.Subject == nil || d.Subject.Start.Line != c.line || !strings.HasSuffix(d.Subject.Filename, "main.hcl") {
				t.Errorf("at %v, want line %d", d.Subject, c.line)
			}
		})
	}
}

// The real Fedora CoreOS Butane configs of testdata/fcos load: their links and the core
// user's keys managed, their other users (and, for the tutorial, the files, directories
// and link in a user's home) first boot only, with a warning naming those paths; the
// linger file under /var managed.
func TestRealButaneConfigs(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "fcos", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	load := func(name string) (model.Config, model.Diagnostics) {
		dir := treeConfig(t, "  butane = file(\""+name+"\")\n", map[string]string{name: read(name)})
		res, diags := Load(dir, Options{Schemas: testSchemas})
		if diags.HasErrors() {
			t.Fatalf("%s: %v", name, diags)
		}
		return res.Desired.Configs[0], diags
	}
	c, _ := load("time-zone.bu")
	if len(c.Links) != 1 || c.Links[0].Path != "/etc/localtime" || c.Links[0].Target != "../usr/share/zoneinfo/America/New_York" ||
		c.Links[0].Text.Path != "storage.links.0" || c.FirstBoot != nil {
		t.Errorf("time-zone: links %+v, first boot %s", c.Links, c.FirstBoot)
	}
	c, _ = load("authentication.bu")
	if len(c.SSHKeys) != 1 || !strings.HasPrefix(c.SSHKeys[0], "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQDHn2eh") ||
		c.SSHKeysSource.Text.Path != "passwd.users.0.sshAuthorizedKeys" {
		t.Errorf("authentication: core keys %q from %+v", c.SSHKeys, c.SSHKeysSource)
	}
	fb := string(c.FirstBoot)
	if strings.Contains(fb, `"core"`) || !strings.Contains(fb, `"name":"jlebon"`) || !strings.Contains(fb, `"name":"miabbott"`) ||
		strings.Join(c.FirstBootParts, ", ") != "passwd.users.0 (user jlebon), passwd.users.1 (user miabbott)" {
		t.Errorf("authentication: first boot %s (%v)", fb, c.FirstBootParts)
	}
	c, diags := load("user-systemd-unit.bu")
	if len(c.Files) != 1 || c.Files[0].Path != "/var/lib/systemd/linger/sleeper" || len(c.Directories)+len(c.Links) != 0 ||
		len(c.SSHKeys) != 1 {
		t.Errorf("tutorial: files %+v, directories %+v, links %+v, keys %q", c.Files, c.Directories, c.Links, c.SSHKeys)
	}
	fb = string(c.FirstBoot)
	for _, want := range []string{`"name":"sleeper"`, `"/home/sleeper/.config/systemd/user/linger-example.service"`,
		`"target":"/home/sleeper/.config/systemd/user/linger-example.service"`, `"path":"/home/sleeper/.config"`} {
		if !strings.Contains(fb, want) {
			t.Errorf("tutorial: first boot lacks %s: %s", want, fb)
		}
	}
	var warned bool
	for _, d := range diags {
		if d.Severity == model.DiagWarning && d.Summary == "First boot only" &&
			strings.Contains(d.Detail, "/home/sleeper/.config (storage.directories.0)") &&
			strings.Contains(d.Detail, "linger-example.service (storage.links.0)") && d.Subject.Start.Line == 5 {
			warned = true
		}
	}
	if !warned {
		t.Errorf("tutorial: no first-boot warning naming the home's paths: %v", diags)
	}
}

// An ignition attribute reads a raw Ignition config as Butane's translation is read: the
// managed parts out, the rest first boot only, Ignition's own errors at the attribute.
func TestIgnitionAttribute(t *testing.T) {
	ign := `{"ignition":{"version":"3.4.0"},"passwd":{"groups":[{"name":"ops"}],"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA k"]}]},` +
		`"storage":{"directories":[{"path":"/etc/d","mode":448}],"disks":[{"device":"/dev/vdb","wipeTable":true}]}}`
	dir := treeConfig(t, "  ignition = file(\"extra.ign\")\n", map[string]string{"extra.ign": ign})
	res, diags := Load(dir, Options{Schemas: testSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	c := res.Desired.Configs[0]
	if len(c.Directories) != 1 || c.Directories[0].Mode != 0o700 || len(c.SSHKeys) != 1 ||
		string(c.FirstBoot) != `{"passwd":{"groups":[{"name":"ops"}]},"storage":{"disks":[{"device":"/dev/vdb","wipeTable":true}]}}` {
		t.Errorf("directories %+v, keys %q, first boot %s", c.Directories, c.SSHKeys, c.FirstBoot)
	}
	dir = treeConfig(t, "  ignition = \"{\\\"ignition\\\":{\\\"version\\\":\\\"3.4.0\\\"},\\\"storage\\\":{\\\"files\\\":[{\\\"path\\\":\\\"x\\\"}]}}\"\n", nil)
	d := findDiag(loadWithin(t, dir, Options{Schemas: testSchemas}), "Invalid Ignition")
	if d == nil || !strings.Contains(d.Detail, "the Ignition config:") || !strings.Contains(d.Detail, "storage.files.0.path") {
		t.Errorf("a bad Ignition config: %v", d)
	}
}
