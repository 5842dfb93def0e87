package config

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpfleet/mcp/model"
)

// TestAwkwardValuesAreDiagnosed feeds null, unknown and mistyped values to every attribute
// kind: each must give an error at the place marked @ in src, never a panic.
func TestAwkwardValuesAreDiagnosed(t *testing.T) {
	tests := []struct {
		name, src string
		varFile   string // written as vars.in and passed as a -var-file when set
		vars      []string
	}{
		{"null pool", `config "x" { pools = [@null] }`, "", nil},
		{"null pools", `config "x" { pools = @null }`, "", nil},
		{"null pool kernel arg", `pool "p" { kernel_args = ["a", @null] }`, "", nil},
		{"null config kernel arg", "config \"x\" {\n  pools       = [\"worker\"]\n  kernel_args = [@null]\n}", "", nil},
		{"null file on_change", "config \"x\" {\n  pools = [\"worker\"]\n  file \"/etc/a\" {\n    content   = \"x\"\n    on_change = [@null]\n  }\n}", "", nil},
		{"null unit on_change", "config \"x\" {\n  pools = [\"worker\"]\n  unit \"a.service\" {\n    contents  = \"x\"\n    on_change = [\"none\", @null]\n  }\n}", "", nil},
		{"null node_selector value", `pool "p" { node_selector = { a = "x", b = @null } }`, "", nil},
		{"null quoted node_selector key", `pool "p" { node_selector = { "a/b" = @null } }`, "", nil},
		{"null set element", `pool "p" { kernel_args = @toset([null]) }`, "", nil},
		{"null list default", "variable \"v\" {\n  type    = list(string)\n  default = [null]\n}\nconfig \"x\" { pools = @var.v }", "", nil},
		{"null map default", "variable \"v\" {\n  type    = map(string)\n  default = { a = null }\n}\npool \"p\" { node_selector = @var.v }", "", nil},
		{"null default", "variable \"v\" { default = null }\npool \"p\" { os_image = @var.v }", "", nil},
		{"null from var file", "variable \"v\" { type = list(string) }\npool \"p\" { kernel_args = @var.v }", "v = [null]\n", nil},
		{"null from -var", "variable \"v\" { type = list(string) }\npool \"p\" { kernel_args = @var.v }", "", []string{"v=[\"a\", null]"}},
		{"null string as max_unavailable", `pool "p" { max_unavailable = @tostring(null) }`, "", nil},
		{"null number as max_unavailable", `pool "p" { max_unavailable = @tonumber(null) }`, "", nil},
		{"null mode", "config \"x\" {\n  pools = [\"worker\"]\n  file \"/etc/a\" {\n    content = \"x\"\n    mode    = @tostring(null)\n  }\n}", "", nil},
		{"null paused", `pool "p" { paused = @null }`, "", nil},
		{"null drain_timeout", `pool "p" { drain_timeout = @null }`, "", nil},
		{"null enabled", "config \"x\" {\n  pools = [\"worker\"]\n  unit \"a.service\" { enabled = @null }\n}", "", nil},
		{"null dropin", "config \"x\" {\n  pools = [\"worker\"]\n  unit \"a.service\" {\n    dropin \"a.conf\" { contents = @null }\n  }\n}", "", nil},
		{"null boot image policy", "pool \"p\" {\n  boot_image { policy = @null }\n}", "", nil},
		{"null state path", `state { path = @null }`, "", nil},
		{"null in templatefile vars", "config \"x\" {\n  pools = [\"worker\"]\n  file \"/etc/a\" { content = @templatefile(\"t.tpl\", { a = [null] }) }\n}", "", nil},
		{"nested null in templatefile vars", "config \"x\" {\n  pools = [\"worker\"]\n  file \"/etc/a\" { content = @templatefile(\"attr.tpl\", { a = { b = null } }) }\n}", "", nil},
		{"null templatefile vars", "config \"x\" {\n  pools = [\"worker\"]\n  file \"/etc/a\" { content = templatefile(\"t.tpl\", @null) }\n}", "", nil},
		{"null file()", "config \"x\" {\n  pools = [\"worker\"]\n  file \"/etc/a\" { content = file(@null) }\n}", "", nil},
		{"unknown percentage", "variable \"s\" { type = string }\npool \"p\" { max_unavailable = @\"${var.s}%\" }", "", nil},
		{"unknown mode", "variable \"n\" { type = number }\nconfig \"x\" {\n  pools = [\"worker\"]\n  file \"/etc/a\" {\n    content = \"x\"\n    mode    = @var.n + 1\n  }\n}", "", nil},
		{"unknown list element", "variable \"n\" {}\npool \"p\" { kernel_args = [@var.n] }", "", nil},
		{"map for a list", `pool "p" { kernel_args = @{ a = "b" } }`, "", nil},
		{"list for a map", `pool "p" { node_selector = @["a"] }`, "", nil},
		{"list for a bool", `pool "p" { paused = @[true] }`, "", nil},
		{"list for a number", `pool "p" { max_unavailable = @[1] }`, "", nil},
		{"number for a string", `mcp { ignition_version = @3.4 }`, "", nil},
		{"object for a mode", "config \"x\" {\n  pools = [\"worker\"]\n  file \"/etc/a\" {\n    content = \"x\"\n    mode    = @{}\n  }\n}", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at := strings.Index(tt.src, "@")
			line := 1 + strings.Count(tt.src[:at], "\n")
			col := at - strings.LastIndex(tt.src[:at], "\n")
			dir := t.TempDir()
			write(t, dir, "base.hcl", "provider \"local\" { fleet = \"f\" }\npool \"worker\" {}\n")
			write(t, dir, "t.tpl", "%{ for x in a }${x}%{ endfor }")
			write(t, dir, "attr.tpl", "${a.b}")
			write(t, dir, "main.hcl", strings.Replace(tt.src, "@", "", 1))
			opts := Options{Schemas: testSchemas, Vars: tt.vars}
			if tt.varFile != "" {
				write(t, dir, "vars.in", tt.varFile)
				opts.VarFiles = []string{filepath.Join(dir, "vars.in")}
			}
			var diags model.Diagnostics
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("Load panicked: %v", r)
					}
				}()
				_, diags = Load(dir, opts)
			}()
			for _, d := range diags {
				s := d.Subject
				if d.Severity == model.DiagError && s != nil && filepath.Base(s.Filename) == "main.hcl" &&
					s.Start.Line == line && s.Start.Column == col {
					return
				}
			}
			t.Errorf("no error at main.hcl:%d:%d; got %v", line, col, diags)
		})
	}
}

// TestMarkedValuesAreRefused: nothing in mcp's language marks a value today, but cty's
// accessors panic on marked ones, so the readers refuse them rather than trust that.
func TestMarkedValuesAreRefused(t *testing.T) {
	rng := hcl.Range{Filename: "main.hcl", Start: hcl.Pos{Line: 2, Column: 3, Byte: 10}, End: hcl.Pos{Line: 2, Column: 9, Byte: 16}}
	secret := func(v cty.Value) *hcl.Attribute {
		return &hcl.Attribute{Name: "x", Expr: hcl.StaticExpr(v, rng), Range: rng, NameRange: rng}
	}
	l := &loader{}
	checks := map[string]func() hcl.Diagnostics{
		"str": func() hcl.Diagnostics { _, d := l.str(secret(cty.StringVal("s").Mark("sensitive"))); return d },
		"strList": func() hcl.Diagnostics {
			_, d := l.strList(secret(cty.ListVal([]cty.Value{cty.StringVal("a").Mark("sensitive")})))
			return d
		},
		"strMap": func() hcl.Diagnostics {
			_, d := l.strMap(secret(cty.MapVal(map[string]cty.Value{"a": cty.StringVal("a").Mark("sensitive")})))
			return d
		},
		"boolean": func() hcl.Diagnostics { _, d := l.boolean(secret(cty.True.Mark("sensitive"))); return d },
		"maxUnavailable": func() hcl.Diagnostics {
			_, d := l.maxUnavailable(secret(cty.NumberIntVal(2).Mark("sensitive")))
			return d
		},
		"mode": func() hcl.Diagnostics { _, d := l.mode(secret(cty.StringVal("0644").Mark("sensitive"))); return d },
	}
	for name, check := range checks {
		t.Run(name, func(t *testing.T) {
			var diags hcl.Diagnostics
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("panicked: %v", r)
					}
				}()
				diags = check()
			}()
			if !diags.HasErrors() || diags[0].Subject == nil || *diags[0].Subject != rng {
				t.Errorf("want an error at %v; got %v", rng, diags)
			}
		})
	}
}
