package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpfleet/mcp/model"

	"github.com/mcpfleet/mcp/testkit/within"
)

// loadWithin runs Load and fails the test if it does not return in time: a FIFO must not
// block it.
func loadWithin(t *testing.T, dir string, opts Options) model.Diagnostics {
	t.Helper()
	return within.Call(t, "Load", func() model.Diagnostics {
		_, diags := Load(dir, opts)
		return diags
	})
}

func findDiag(diags model.Diagnostics, summary string) *model.Diagnostic {
	for _, d := range diags {
		if d.Severity == model.DiagError && strings.Contains(d.Summary, summary) {
			return d
		}
	}
	return nil
}

// TestDeepNestingRefused: HCL's parser and evaluator recurse per level, and enough levels
// crash the process with a stack overflow; the pre-scan refuses them where the 101st
// level opens.
func TestDeepNestingRefused(t *testing.T) {
	const n = 60000
	rep := strings.Repeat
	tests := []struct {
		name, src string
		line, col int
	}{
		// Where the 101st level opens: x = [[[…, the 101st [ after "x = ".
		{"brackets", "x = " + rep("[", n) + rep("]", n) + "\n", 1, 5 + 100},
		{"braces", "x = " + rep("{a = ", n) + "1" + rep("}", n) + "\n", 1, 5 + 100*5},
		{"parentheses", "\n\nx = " + rep("(", n) + "1" + rep(")", n) + "\n", 3, 5 + 100},
		{"calls", "x = " + rep("f(", n) + "1" + rep(")", n) + "\n", 1, 6 + 100*2},
		{"blocks", rep("a {\n", n) + rep("}\n", n), 101, 3},
		// A string and an interpolation are a level each: the 101st is the 51st quote.
		{"interpolations", "x = " + rep(`"${`, n) + "1" + rep(`}"`, n) + "\n", 1, 5 + 50*3},
		// In the string (level 1), the 99th %{if} is level 100 and its %{ level 101.
		{"directives", `x = "` + rep("%{if a}", n) + rep("%{endif}", n) + "\"\n", 1, 6 + 98*7},
		// Each line ${<<A is two levels, after the outer heredoc.
		{"heredocs", "x = <<A\n" + rep("${<<A\n", n) + rep("A\n}\n", n) + "A\n", 51, 3},
		{"unary minus", "x = " + rep("-", n) + "1\n", 1, 5 + 100},
		{"negation", "x = " + rep("!", n) + "true\n", 1, 5 + 100},
		{"conditionals", "x = " + rep("a ? b : ", n) + "c\n", 1, 7 + 100*8},
		{"a long sum", "x = 1" + rep(" + 1", n) + "\n", 1, 7 + 100*4},
		{"splats", "x = a" + rep("[*].b", n) + "\n", 1, 6 + 100*5},
		// == is a level, then the 100th [; columns count characters, not bytes.
		{"after a multi-byte character", "x = \"é\" == " + rep("[", n) + "\n", 1, 12 + 99},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "main.hcl", tt.src)
			d := findDiag(loadWithin(t, dir, Options{Schemas: testSchemas}), "nesting deeper than 100 levels")
			if d == nil {
				t.Fatal("no nesting diagnostic")
			}
			if s := d.Subject; s == nil || s.Filename != filepath.Join(dir, "main.hcl") || s.Start.Line != tt.line || s.Start.Column != tt.col {
				t.Errorf("nesting refused at %v, want main.hcl:%d:%d", d.Subject, tt.line, tt.col)
			}
		})
	}
}

// TestNestingScanIgnoresTextAndComments: brackets in strings, heredocs and comments are
// not nesting, and ordinary configurations pass.
func TestNestingScanIgnoresTextAndComments(t *testing.T) {
	deep := strings.Repeat("[({", 200)
	src := `provider "local" { fleet = "f" } # ` + deep + `
// ` + deep + `
/* ` + deep + ` */
variable "text" {
  default = "` + deep + `\"${"}"}$${ %%{"
}
pool "worker" {
  node_selector = { "a-b-c-d" = "" }
  os_image      = regex_replace(<<-EOT
    ` + deep + ` ${"x"} %{ if true }y%{ endif }
    EOT
  , "\\s", "")
  kernel_args = [for i, a in ["x"] : "${a}-${i}" if !(i > 1 - -1 || i == 2 && a != "b")]
}
`
	dir := t.TempDir()
	write(t, dir, "main.hcl", src)
	write(t, dir, "t.tpl", deep+"%{ for s in x }{${s}}[%{ endfor }")
	write(t, dir, "cfg.hcl", `config "x" {
  pools = ["worker"]
  file "/etc/a" { content = templatefile("t.tpl", { x = ["a"] }) }
}`)
	if _, diags := Load(dir, Options{Schemas: testSchemas}); diags.HasErrors() {
		t.Fatal(diags)
	}
	for _, p := range []string{"../examples/quickstart"} {
		if _, diags := Load(p, Options{Schemas: testSchemas}); diags.HasErrors() {
			t.Errorf("%s: %v", p, diags)
		}
	}
}

func TestDeepTemplateAndVarRefused(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "main.hcl", "provider \"local\" { fleet = \"f\" }\nvariable \"v\" { type = list(string) }\npool \"worker\" { kernel_args = var.v }\n"+
		"config \"x\" {\n  pools = [\"worker\"]\n  file \"/etc/a\" { content = templatefile(\"t.tpl\", {}) }\n}\n")
	write(t, dir, "t.tpl", "line\n"+strings.Repeat(`${"`, 60000))
	write(t, dir, "vars.in", "v = "+strings.Repeat("(", 60000))
	diags := loadWithin(t, dir, Options{Schemas: testSchemas, VarFiles: []string{filepath.Join(dir, "vars.in")}, Vars: []string{"v=" + strings.Repeat("[", 60000)}})
	var all []string
	for _, d := range diags {
		all = append(all, d.Error())
	}
	// The 101st level: the 51st ${ of the template, the 101st ( and [.
	for _, want := range []string{"t.tpl:2,151-", "vars.in:1,105-", "-var v:1,101-"} {
		if !strings.Contains(strings.Join(all, "\n"), want) {
			t.Errorf("no nesting error at %s; got\n%s", want, strings.Join(all, "\n"))
		}
	}
}

// TestDeepVarOfTypeAnyRefused: a variable of type any takes an HCL expression from -var
// and MCP_VAR_, as Terraform's does, held to the nesting bound of configuration files (it
// was taken as a string of 60,000 brackets); an untyped variable takes a string, in which
// brackets are text, as in a quoted string of a configuration file.
func TestDeepVarOfTypeAnyRefused(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "main.hcl", "provider \"local\" { fleet = \"f\" }\n"+
		"variable \"a\" {\n  type = any\n}\nvariable \"e\" {\n  type = any\n}\nvariable \"s\" {}\n"+
		"pool \"worker\" {}\nconfig \"x\" {\n  pools = [\"worker\"]\n  file \"/etc/x\" { content = jsonencode([var.a, var.e, var.s]) }\n}\n")
	deep := strings.Repeat("[", 60000) + strings.Repeat("]", 60000)
	diags := loadWithin(t, dir, Options{Schemas: testSchemas, Vars: []string{"a=" + deep, "s=" + deep}, Environ: []string{"MCP_VAR_e=" + deep}})
	var all []string
	for _, d := range diags {
		all = append(all, d.Error())
	}
	for _, want := range []string{"-var a:1,101-", "environment variable MCP_VAR_e:1,101-"} {
		if !strings.Contains(strings.Join(all, "\n"), want) {
			t.Errorf("no nesting error at %s; got\n%s", want, strings.Join(all, "\n"))
		}
	}
	if strings.Contains(strings.Join(all, "\n"), "-var s") {
		t.Errorf("the untyped variable's string was refused:\n%s", strings.Join(all, "\n"))
	}
	_, diags = Load(dir, Options{Schemas: testSchemas, Vars: []string{`a={ servers = ["x", "y"] }`, "e=[1]", "s=[not, an, expression"}})
	if diags.HasErrors() {
		t.Errorf("shallow values: %v", diags)
	}
}

func TestOversizedConfigurationRefused(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "main.hcl", "provider \"local\" { fleet = \"f\" }\n# "+strings.Repeat("x", maxFileSize)+"\n")
	d := findDiag(loadWithin(t, dir, Options{Schemas: testSchemas}), "Configuration file too large")
	if d == nil || d.Subject == nil || d.Subject.Filename != filepath.Join(dir, "main.hcl") {
		t.Fatalf("want a too-large error on main.hcl; got %v", d)
	}
}

// TestSpecialFilesRefused: a FIFO must not block the load, a link to /dev/zero must not
// exhaust memory, whether it is a configuration file, a -var-file, a file read by file()
// or templatefile(), or a file a Butane text names (contents.local, ssh_authorized_keys_local).
func TestSpecialFilesRefused(t *testing.T) {
	fifo := func(t *testing.T, p string) {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skip("mkfifo:", err)
		}
	}
	zero := func(t *testing.T, p string) {
		if err := os.Symlink("/dev/zero", p); err != nil {
			t.Fatal(err)
		}
	}
	big := func(t *testing.T, p string) {
		if err := os.WriteFile(p, []byte(strings.Repeat("x", maxFileSize+1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const base = "provider \"local\" { fleet = \"f\" }\npool \"worker\" {}\n"
	useFile := "config \"x\" {\n  pools = [\"worker\"]\n  file \"/etc/a\" { content = file(\"special\") }\n}\n"
	useTemplate := "config \"x\" {\n  pools = [\"worker\"]\n  file \"/etc/a\" { content = templatefile(\"special\", {}) }\n}\n"
	butaneLocal := func(key string) string {
		return "config \"x\" {\n  pools = [\"worker\"]\n  butane_files_dir = \".\"\n  butane = <<-EOT\n" +
			"    variant: fcos\n    version: 1.5.0\n" + key + "  EOT\n}\n"
	}
	useLocal := butaneLocal("    storage:\n      files:\n        - path: /etc/a\n          contents:\n            local: special\n")
	useKeysLocal := butaneLocal("    passwd:\n      users:\n        - name: core\n          ssh_authorized_keys_local: [special]\n")
	useLinked := butaneLocal("    storage:\n      files:\n        - path: /etc/a\n          contents:\n            local: linked\n")
	fifoLinked := func(t *testing.T, p string) {
		fifo(t, p)
		if err := os.Symlink("special", filepath.Join(filepath.Dir(p), "linked")); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		make    func(*testing.T, string)
		as      string // where the special file goes
		main    string
		varFile bool
		want    string
	}{
		{"FIFO configuration file", fifo, "special.hcl", "", false, "not a regular file"},
		{"dev-zero configuration file", zero, "special.hcl", "", false, "not a regular file"},
		{"FIFO var file", fifo, "special", "", true, "not a regular file"},
		{"dev-zero var file", zero, "special", "", true, "not a regular file"},
		{"big var file", big, "special", "", true, "more than mcp reads"},
		{"FIFO file()", fifo, "special", useFile, false, "not a regular file"},
		{"dev-zero file()", zero, "special", useFile, false, "not a regular file"},
		{"big file()", big, "special", useFile, false, "more than mcp reads"},
		{"FIFO templatefile()", fifo, "special", useTemplate, false, "not a regular file"},
		{"dev-zero templatefile()", zero, "special", useTemplate, false, "not a regular file"},
		{"big templatefile()", big, "special", useTemplate, false, "more than mcp reads"},
		{"FIFO Butane contents.local", fifo, "special", useLocal, false, "named pipe (FIFO), not a regular file"},
		{"FIFO Butane ssh_authorized_keys_local", fifo, "special", useKeysLocal, false, "named pipe (FIFO), not a regular file"},
		{"FIFO behind a link, Butane contents.local", fifoLinked, "special", useLinked, false, "named pipe (FIFO), not a regular file"},
		{"big Butane contents.local", big, "special", useLocal, false, "more than mcp reads"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "base.hcl", base+tt.main)
			tt.make(t, filepath.Join(dir, tt.as))
			var opts Options
			if tt.varFile {
				opts.VarFiles = []string{filepath.Join(dir, tt.as)}
			}
			diags := loadWithin(t, dir, opts)
			for _, d := range diags {
				if d.Severity == model.DiagError && strings.Contains(d.Error(), tt.want) {
					return
				}
			}
			t.Errorf("no error saying %q; got %v", tt.want, diags)
		})
	}
}

// TestFormatDirRefusesDeepNesting: formatting indents each level, so its output grows with
// the square of the nesting; 60,000 levels would be gigabytes.
func TestFormatDirRefusesDeepNesting(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "main.hcl", strings.Repeat("a {\n", 60000)+strings.Repeat("}\n", 60000))
	_, err := FormatDir(dir)
	if err == nil || !strings.Contains(err.Error(), "main.hcl:101,3") || !strings.Contains(err.Error(), "nesting deeper than 100 levels") {
		t.Errorf("FormatDir: %v, want the nesting refused at main.hcl:101,3", err)
	}
}
