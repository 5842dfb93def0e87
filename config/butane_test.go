package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/model"
)

const workerBu = `variant: fcos
version: 1.6.0
storage:
  files:
    - path: /etc/hello.conf
      mode: 0640
      user: {name: core}
      contents:
        inline: |
          hello from butane
systemd:
  units:
    - name: hello.service
      enabled: true
      contents: |
        [Service]
        ExecStart=/bin/true
kernel_arguments:
  should_exist: [nosmt]
`

// butaneConfig is a configuration whose config "40-b" has butane = EXPR on line 5,
// column 3, and a file block for /etc/block.conf.
func butaneConfig(t *testing.T, expr string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "main.hcl", fmt.Sprintf(`provider "local" { fleet = "./fleet" }
pool "worker" {}
config "40-b" {
  pools  = ["worker"]
  butane = %s
  file "/etc/block.conf" { content = "b" }
}
`, expr))
	for name, body := range files {
		write(t, dir, name, body)
	}
	return dir
}

// A Butane file, unit and kernel argument join the config after its blocks, each at the
// butane attribute with its place in the translated Ignition config.
func TestButaneTranslatesIntoTheConfig(t *testing.T) {
	res, diags := Load(butaneConfig(t, `file("worker.bu")`, map[string]string{"worker.bu": workerBu}), Options{Schemas: testSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	c := res.Desired.Configs[0]
	if len(c.Files) != 2 || c.Files[0].Path != "/etc/block.conf" || c.Files[0].Text != (model.TextRef{}) {
		t.Fatalf("files: %+v", c.Files)
	}
	f := c.Files[1]
	if f.Path != "/etc/hello.conf" || f.Mode != 0o640 || f.User != "core" || string(f.Contents) != "hello from butane\n" ||
		f.Text != (model.TextRef{Kind: model.TextButane, Path: "storage.files.0", File: "worker.bu"}) || f.DeclRange.Start.Line != 5 || f.DeclRange.Start.Column != 3 || len(f.OnChange) != 0 {
		t.Errorf("Butane file: %+v", f)
	}
	if len(c.Units) != 1 || c.Units[0].Name != "hello.service" || c.Units[0].Enabled == nil || !*c.Units[0].Enabled ||
		c.Units[0].Text.Path != "systemd.units.0" || !strings.Contains(c.Units[0].Contents, "ExecStart=/bin/true") {
		t.Errorf("Butane unit: %+v", c.Units)
	}
	want := []model.Source{{Range: f.DeclRange, Text: model.TextRef{Kind: model.TextButane, Path: "kernelArguments.shouldExist.0"}}}
	if len(c.KernelArgs) != 1 || c.KernelArgs[0] != "nosmt" || len(c.KernelArgSources) != 1 || c.KernelArgSources[0] != want[0] {
		t.Errorf("kernel args %v from %+v", c.KernelArgs, c.KernelArgSources)
	}
}

// Every problem with Butane is a diagnostic at the butane attribute (main.hcl:5,3) that
// says what is wrong — with Butane's own line and column when the problem is inside the
// text — and nothing panics.
func TestButaneProblemsAreDiagnosed(t *testing.T) {
	deep := "variant: fcos\nversion: 1.5.0\nx: " + strings.Repeat("[", 20000) + "\n"
	for _, c := range []struct {
		name, expr string
		files      map[string]string
		summary    string
		detail     []string
		warning    bool
	}{
		{"null", `null`, nil, "Missing value", []string{"butane is null"}, false},
		{"not a string", `["variant: fcos"]`, nil, "Invalid butane", []string{"must be a string"}, false},
		{"wrong variant", `"variant: fcoss\nversion: 1.5.0\n"`, nil, "Invalid Butane",
			[]string{`no variant "fcoss" with version 1.5.0`, "fcos, flatcar, openshift"}, false},
		{"no variant", `"version: 1.5.0\n"`, nil, "Invalid Butane", []string{"names no variant"}, false},
		{"bad version", `"variant: fcos\nversion: one\n"`, nil, "Invalid Butane", []string{"not a semantic version"}, false},
		{"unknown version", `"variant: fcos\nversion: 9.9.9\n"`, nil, "Invalid Butane", []string{`no variant "fcos" with version 9.9.9`}, false},
		{"experimental spec", `"variant: fcos\nversion: 1.8.0-experimental\n"`, nil, "Invalid Butane",
			[]string{`Ignition spec "3.7.0-experimental" is not one mcp knows`}, false},
		{"not YAML", `file("bad.bu")`, map[string]string{"bad.bu": "variant: fcos\nversion: 1.5.0\nstorage: [\n"}, "Invalid Butane",
			[]string{"Butane bad.bu: the Butane text is not valid YAML", "line 3"}, false},
		{"error inside", `file("w.bu")`, map[string]string{"w.bu": "variant: fcos\nversion: 1.5.0\nstorage:\n  files:\n    - path: /etc/x\n      contents:\n        inline: a\n        source: data:,b\n"},
			"Invalid Butane", []string{"Butane w.bu: line 8, column 17", "storage.files.0.contents"}, false},
		{"warning inside", `file("w.bu")`, map[string]string{"w.bu": "variant: fcos\nversion: 1.5.0\nbogus: 1\n"},
			"Butane warning", []string{"Butane w.bu: line 3, column 1", "unused key bogus"}, true},
		{"outside the managed trees", `"variant: fcos\nversion: 1.5.0\nstorage:\n  files:\n    - path: /usr/bin/x\n"`, nil,
			"Path outside the managed trees", []string{"/usr/bin/x (storage.files.0)"}, false},
		{"first boot only", `"variant: fcos\nversion: 1.5.0\nstorage:\n  files:\n    - path: /root/.bashrc\n"`, nil,
			"First boot only", []string{"the Butane text: /root/.bashrc (storage.files.0): outside the trees"}, true},
		{"link outside the managed trees", `"variant: fcos\nversion: 1.5.0\nstorage:\n  links:\n    - path: /usr/lib/l\n      target: x\n"`, nil,
			"Path outside the managed trees", []string{"link /usr/lib/l (storage.links.0)"}, false},
		{"link without target", `"variant: fcos\nversion: 1.5.0\nstorage:\n  links:\n    - path: /etc/l\n      user: {name: core}\n"`, nil,
			"Invalid Butane", []string{"line 5, column 7, storage.links.0.target: link target is required"}, false},
		{"remote contents", `"variant: fcos\nversion: 1.5.0\nstorage:\n  files:\n    - path: /etc/r\n      contents:\n        source: https://example.com/r\n"`, nil,
			"First boot only", []string{"the Butane text: file /etc/r (storage.files.0): contents from https://example.com/r: mcp cannot know its bytes", "drift"}, true},
		{"corrupt compressed contents", `"variant: fcos\nversion: 1.5.0\nstorage:\n  files:\n    - path: /etc/z\n      contents:\n        compression: gzip\n        source: data:;base64,H4sIAAAAAAAC/0sEAIOx09cBAAAA\n"`, nil,
			"Invalid Butane", []string{"file /etc/z (storage.files.0): contents: gzip: invalid checksum"}, false},
		{"append", `"variant: fcos\nversion: 1.5.0\nstorage:\n  files:\n    - path: /etc/a\n      append:\n        - inline: more\n"`, nil,
			"First boot only", []string{"file /etc/a (storage.files.0): 1 fragment(s) to append"}, true},
		{"local file", `"variant: fcos\nversion: 1.5.0\nstorage:\n  files:\n    - path: /etc/l\n      contents:\n        local: l.txt\n"`, nil,
			"Invalid Butane", []string{"line 7, column 16", "reads local files named in Butane from the directory of the Butane file"}, false},
		{"same path as a block", `"variant: fcos\nversion: 1.5.0\nstorage:\n  files:\n    - path: /etc/block.conf\n"`, nil,
			"Duplicate file", []string{"/etc/block.conf (storage.files.0) is also declared by the file block at", "main.hcl:6,8"}, false},
		{"bad unit name", `"variant: fcos\nversion: 1.5.0\nsystemd:\n  units:\n    - name: x.snapshot\n      contents: x\n"`, nil,
			"Invalid unit name", []string{"unit x.snapshot (systemd.units.0): needs a systemd unit suffix"}, false},
		{"deeply nested", `file("deep.bu")`, map[string]string{"deep.bu": deep}, "Invalid Butane", []string{"exceeded max depth"}, false},
		{"huge", `file("huge.bu")`, map[string]string{"huge.bu": "variant: fcos\nversion: 1.5.0\n#" + strings.Repeat("x", 1<<20)},
			"Invalid Butane", []string{"more than mcp takes"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			diags := loadWithin(t, butaneConfig(t, c.expr, c.files), Options{Schemas: testSchemas})
			var d *model.Diagnostic
			for _, x := range diags {
				if x.Summary == c.summary && (d == nil || strings.Contains(x.Detail, c.detail[0])) {
					d = x
				}
			}
			if d == nil {
				t.Fatalf("no %q diagnostic in %v", c.summary, diags)
			}
			if (d.Severity == model.DiagWarning) != c.warning {
				t.Errorf("severity %v", d.Severity)
			}
			if s := d.Subject; s == nil || !strings.HasSuffix(s.Filename, "main.hcl") || s.Start.Line != 5 {
				t.Errorf("%q is not at the butane attribute: %v", d.Summary, s)
			}
			for _, w := range c.detail {
				if !strings.Contains(d.Detail, w) {
					t.Errorf("detail %q does not say %q", d.Detail, w)
				}
			}
		})
	}
}

// An enabled unit of a Butane config with nothing to install is Ignition's warning, shown
// at the butane attribute (an HCL unit block gets an error): the node can link nothing for
// it, and drift checks find nothing to check.
func TestButaneEnabledWithoutInstallWarns(t *testing.T) {
	_, diags := Load(butaneConfig(t, `file("worker.bu")`, map[string]string{"worker.bu": workerBu}), Options{Schemas: testSchemas})
	for _, d := range diags {
		if d.Severity == model.DiagWarning && strings.Contains(d.Detail, `"hello.service" is enabled, but has no install section`) &&
			d.Subject != nil && d.Subject.Start.Line == 5 {
			return
		}
	}
	t.Errorf("no warning about hello.service's missing [Install] at main.hcl:5; got %v", diags)
}
