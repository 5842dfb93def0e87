package config

import (
	"fmt"
	"strings"
	"testing"
)

// Values no node can take — a path with a NUL byte or a component past NAME_MAX, a drop-in
// name with one, a kernel argument the kernel would read as none, two or a swallowing
// quote, a blank OS image, an owner name no /etc/passwd holds — are refused at their place (main.hcl line:col), not left for
// the apply to fail on the nodes.
func TestValuesNoNodeTakesAreRefused(t *testing.T) {
	long := strings.Repeat("x", 256)
	for _, c := range []struct {
		name, body, summary, detail string
		line, col                   int
	}{
		{"NUL in a file path", `  file "/etc/a\u0000b" { content = "x" }` + "\n", "Invalid path", "holds a NUL byte", 5, 8},
		{"NUL in a directory path", `  directory "/var/a\u0000" {}` + "\n", "Invalid path", "holds a NUL byte", 5, 13},
		{"NUL in a link path", `  link "/etc/l\u0000" { target = "x" }` + "\n", "Invalid path", "holds a NUL byte", 5, 8},
		{"component past NAME_MAX", `  file "/etc/` + long + `" { content = "x" }` + "\n", "Invalid path", "component of 256 bytes", 5, 8},
		{"NUL in a drop-in name", "  unit \"a.service\" {\n    dropin \"x\\u0000.conf\" { contents = \"\" }\n  }\n",
			"Invalid drop-in name", "control character", 6, 12},
		{"empty kernel argument", `  kernel_args = ["nosmt", ""]` + "\n", "Invalid kernel argument", "is empty", 5, 27},
		{"blank kernel argument", `  kernel_args = [" "]` + "\n", "Invalid kernel argument", "blank outside double quotes", 5, 18},
		{"two kernel arguments in one", `  kernel_args = ["a b"]` + "\n", "Invalid kernel argument", "more than one argument", 5, 18},
		{"tab in a kernel argument", `  kernel_args = ["x\ty"]` + "\n", "Invalid kernel argument", `control character ("\t")`, 5, 18},
		{"newline in a kernel argument", `  kernel_args = ["x\ny"]` + "\n", "Invalid kernel argument", `control character ("\n")`, 5, 18},
		{"unterminated quote", `  kernel_args = ["q=\"a"]` + "\n", "Invalid kernel argument", "unterminated double quote", 5, 18},
		{"blank os_image", `  os_image = ""` + "\n", "Invalid os_image", "is empty", 5, 14},
		{"os_image with a newline", `  os_image = "q:t\nx"` + "\n", "Invalid os_image", "no blank or control character", 5, 14},
		{"newline in a file's user", "  file \"/etc/a\" {\n    content = \"x\"\n    user = \"a\\nb\"\n  }\n", "Invalid user", `user "a\nb" holds "\n"`, 7, 12},
		{"a number as a directory's group", `  directory "/etc/d" { group = "1000" }` + "\n", "Invalid group", "is a number", 5, 32},
		{"colon in a link's user", `  link "/etc/l" {` + "\n" + `    target = "x"` + "\n" + `    user = "a:b"` + "\n  }\n", "Invalid user", `holds ":"`, 7, 12},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := findDiag(loadWithin(t, treeConfig(t, c.body, nil), Options{Schemas: testSchemas}), c.summary)
			if d == nil {
				t.Fatalf("no %q error", c.summary)
			}
			if !strings.Contains(d.Detail, c.detail) {
				t.Errorf("detail %q lacks %q", d.Detail, c.detail)
			}
			if s := d.Subject; s == nil || !strings.HasSuffix(s.Filename, "main.hcl") || s.Start.Line != c.line || s.Start.Column != c.col {
				t.Errorf("at %v, want main.hcl:%d,%d", s, c.line, c.col)
			}
		})
	}
}

// What the kernel does read as one argument is taken: a quoted value holding a blank, as
// the kernel, rpm-ostree and the MCO read it; a pool's arguments are held to the same rule.
func TestKernelArgumentsTheKernelTakes(t *testing.T) {
	res, diags := Load(treeConfig(t, `  kernel_args = ["nosmt", "dyndbg=\"file x +p\"", "a=\"\""]`+"\n", nil), Options{Schemas: testSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if got := res.Desired.Configs[0].KernelArgs; len(got) != 3 || got[1] != `dyndbg="file x +p"` {
		t.Errorf("kernel args %q", got)
	}
	base := "provider \"local\" { fleet = \"./fleet\" }\n"
	diagAt(t, base, "pool \"worker\" {\n  kernel_args = [\"ok\", \"a b\"]\n}\n", "Invalid kernel argument", 2, 24)
	diagAt(t, base, "pool \"worker\" {\n  os_image = \"  \"\n}\n", "Invalid os_image", 2, 14)
}

// A Butane text's or an Ignition config's kernel argument, path and SSH key are held to
// the rules of the config's own blocks, named by their place in the translated config.
func TestButaneAndIgnitionValuesRefused(t *testing.T) {
	bu := func(body string) string { return "<<-EOT\n    variant: fcos\n    version: 1.5.0\n" + body + "  EOT" }
	for _, c := range []struct{ name, expr, summary, detail string }{
		{"Butane kernel argument with an unterminated quote", bu("    kernel_arguments:\n      should_exist: [\"a x=\\\"b\"]\n"),
			"Invalid kernel argument", `kernel argument "a x=\"b" (kernelArguments.shouldExist.0) has the argument "x=\"b", which has an unterminated double quote`},
		{"Butane empty kernel argument", bu("    kernel_arguments:\n      should_exist: [\"nosmt\", \"\"]\n"),
			"Invalid kernel argument", `kernel argument "" (kernelArguments.shouldExist.1) holds no kernel argument`},
		{"Butane core key of two lines", bu("    passwd:\n      users:\n        - name: core\n          ssh_authorized_keys: [\"ssh-ed25519 AAAA a@b\\nssh-rsa BBBB evil@x\"]\n"),
			"Invalid SSH key", "SSH key 1 (passwd.users.0.sshAuthorizedKeys.0) holds a line break"},
		{"Butane first-boot user's key of two lines", bu("    passwd:\n      users:\n        - name: ops\n          ssh_authorized_keys: [\"ssh-ed25519 AAAA a@b\\nssh-rsa BBBB evil@x\"]\n"),
			"Invalid SSH key", "user ops's SSH key 1 (passwd.users) holds a line break"},
		{"Butane file owner no passwd holds", bu("    storage:\n      files:\n        - path: /etc/x\n          user: {name: \"a b\"}\n          contents: {inline: x}\n"),
			"Invalid user", `file /etc/x (storage.files.0): user "a b" holds " "`},
		{"Ignition NUL path", `jsonencode({ignition = {version = "3.4.0"}, storage = {files = [{path = "/etc/a\u0000", contents = {source = "data:,x"}}]}})`,
			"Invalid path", "holds a NUL byte"},
		{"Ignition drop-in name", `jsonencode({ignition = {version = "3.4.0"}, systemd = {units = [{name = "a.service", dropins = [{name = "x y.conf", contents = ""}]}]}})`,
			"Invalid drop-in name", `drop-in "x y.conf" (systemd.units.0.dropins.0)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			attr := "butane"
			if strings.HasPrefix(c.expr, "jsonencode") {
				attr = "ignition"
			}
			dir := treeConfig(t, fmt.Sprintf("  %s = %s\n", attr, c.expr), nil)
			d := findDiag(loadWithin(t, dir, Options{Schemas: testSchemas}), c.summary)
			if d == nil || !strings.Contains(d.Detail, c.detail) {
				t.Fatalf("want %q …%s…, got %v", c.summary, c.detail, d)
			}
			if s := d.Subject; s == nil || s.Start.Line != 5 || s.Start.Column != 3 {
				t.Errorf("at %v, want the attribute at main.hcl:5,3", s)
			}
		})
	}
}

// A Butane or Ignition kernelArguments entry is split as rpm-ostree splits it: Fedora
// CoreOS's docs group "console=tty0 console=ttyS0,115200n8" in one entry to keep their
// order, and the node gets the two arguments in that order.
func TestButaneKernelArgumentEntriesSplit(t *testing.T) {
	dir := treeConfig(t, "  butane = <<-EOT\n    variant: fcos\n    version: 1.5.0\n    kernel_arguments:\n      should_exist:\n"+
		"        - console=tty0 console=ttyS0,115200n8\n        - dyndbg=\"file x +p\"\n  EOT\n", nil)
	res, diags := Load(dir, Options{Schemas: testSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	c := res.Desired.Configs[0]
	if want := []string{"console=tty0", "console=ttyS0,115200n8", `dyndbg="file x +p"`}; strings.Join(c.KernelArgs, "|") != strings.Join(want, "|") ||
		len(c.KernelArgSources) != 3 || c.KernelArgSources[1].Text.Path != "kernelArguments.shouldExist.0" {
		t.Errorf("kernel args %q from %+v", c.KernelArgs, c.KernelArgSources)
	}
}

// A MachineConfig is read strictly and held to the same rules, each refusal at its line
// and column in the YAML file: a key given twice (the second spec: would be dropped), an
// osImageURL that is a number, a kernel argument with an unterminated quote or an empty
// entry, a path mcp refuses and an SSH key of two lines inside spec.config.
func TestMachineConfigReadStrictly(t *testing.T) {
	for _, c := range []struct{ name, old, new, want string }{
		{"spec twice", "spec:\n", "spec:\n  osImageURL: quay.io/first:1\nspec:\n",
			`mc.yaml: line 9, column 1: key "spec" is given twice in one mapping (first at line 7, column 1)`},
		{"kernelArguments twice", "  config:\n", "  kernelArguments: [\"c\"]\n  config:\n",
			`mc.yaml: line 10, column 3: key "kernelArguments" is given twice in one mapping (first at line 9, column 3)`},
		{"osImageURL a number", "  osImageURL: quay.io/example/os@sha256:1111111111111111111111111111111111111111111111111111111111111111\n",
			"  osImageURL: 123\n", "mc.yaml: line 8, column 15: MachineConfig 99-worker-chrony: spec.osImageURL must be a string (an image reference), not a number"},
		{"unterminated quote", `["nosmt mitigations=auto", "quiet"]`, `["nosmt mitigations=auto", "x=\"a"]`,
			`mc.yaml: line 9, column 47: MachineConfig 99-worker-chrony: spec.kernelArguments: entry "x=\"a" has the argument "x=\"a", which has an unterminated double quote`},
		{"empty entry", `["nosmt mitigations=auto", "quiet"]`, `["nosmt mitigations=auto", " "]`,
			`mc.yaml: line 9, column 47: MachineConfig 99-worker-chrony: spec.kernelArguments: entry " " holds no kernel argument`},
		{"path mcp refuses", "/etc/chrony.conf", "/usr/lib/x",
			"mc.yaml: line 14, column 9: MachineConfig 99-worker-chrony: spec.config: /usr/lib/x (storage.files.0): File path \"/usr/lib/x\""},
		{"NUL in a path", "/etc/chrony.conf", `"/etc/a\0b"`,
			"mc.yaml: line 14, column 9: MachineConfig 99-worker-chrony: spec.config: /etc/a\\x00b (storage.files.0): File path \"/etc/a\\x00b\" holds a NUL byte"},
		{"SSH key of two lines", "    systemd:\n", "    passwd:\n      users:\n      - name: core\n        sshAuthorizedKeys:\n        - \"ssh-ed25519 AAAA a@b\\nssh-rsa BBBB evil@x\"\n    systemd:\n",
			"mc.yaml: line 21, column 11: MachineConfig 99-worker-chrony: spec.config: the core user's SSH key 1 (passwd.users.0.sshAuthorizedKeys.0) holds a line break"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(chronyMC, c.old) {
				t.Fatalf("%q is not in the MachineConfig", c.old)
			}
			_, diags := Load(mcConfig(t, "", strings.Replace(chronyMC, c.old, c.new, 1)), Options{Schemas: testSchemas})
			if d := findDiag(diags, "Invalid MachineConfig"); d == nil || !strings.Contains(d.Detail, c.want) {
				t.Errorf("want …%s…, got %v", c.want, diags)
			}
		})
	}
	// An empty osImageURL is none, as the MCO reads it; a quoted argument with a blank is one.
	mc := strings.Replace(strings.Replace(chronyMC, "quay.io/example/os@sha256:1111111111111111111111111111111111111111111111111111111111111111", `""`, 1),
		`"quiet"`, `"dyndbg=\"file x +p\""`, 1)
	res, diags := Load(mcConfig(t, "", mc), Options{Schemas: testSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if c := res.Desired.Configs[0]; c.OSImage != "" || len(c.KernelArgs) != 3 || c.KernelArgs[2] != `dyndbg="file x +p"` {
		t.Errorf("os image %q, kernel args %q", c.OSImage, c.KernelArgs)
	}
}

// A pool's node_selector (and a machine_templates' match_labels) holds labels the API
// server takes: one it refuses is on no node, and the pool would select none, silently.
func TestLabelsNoNodeCarriesAreRefused(t *testing.T) {
	base := "provider \"local\" { fleet = \"./fleet\" }\n"
	d := diagAt(t, base, "pool \"worker\" {\n  node_selector = { \"node-role.kubernetes.io/worker \" = \"\" }\n}\n", "Invalid label", 2, 57)
	if !strings.Contains(d.Detail, `node_selector key "node-role.kubernetes.io/worker "`) {
		t.Errorf("detail %q", d.Detail)
	}
	d = diagAt(t, base, "pool \"worker\" {\n  node_selector = { tier = \"a b\" }\n}\n", "Invalid label", 2, 28)
	if !strings.Contains(d.Detail, `node_selector value "a b" of "tier"`) {
		t.Errorf("detail %q", d.Detail)
	}
	diagAt(t, base, "pool \"worker\" {\n  boot_image {\n    machine_templates {\n      selection    = \"partial\"\n      match_labels = { \"a/b/c\" = \"x\" }\n    }\n  }\n}\n", "Invalid label", 5, 34)
}
