package config

import (
	"strings"
	"testing"
)

// TestSensitiveVariables: a variable declared sensitive makes a file that uses it
// sensitive; a variable a sensitive file uses is sensitive; one declared sensitive is
// refused anywhere it would be shown in clear, at the reference.
func TestSensitiveVariables(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "main.hcl", `provider "local" { fleet = "f" }
variable "tok" {
  sensitive = true
  default   = "t"
}
variable "pw" { default = "p" }
variable "motd" { default = "hello" }
pool "worker" {}
config "x" {
  pools = ["worker"]
  file "/etc/a" { content = "token=${var.tok}" }
  file "/etc/b" {
    content   = var.pw
    sensitive = true
  }
  file "/etc/motd" { content = var.motd }
}
`)
	res, diags := Load(dir, Options{Schemas: testSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	files := res.Desired.Configs[0].Files
	if !files[0].Sensitive || !files[1].Sensitive || files[2].Sensitive {
		t.Errorf("sensitive files: %v %v %v, want true true false", files[0].Sensitive, files[1].Sensitive, files[2].Sensitive)
	}
	if want := map[string]bool{"tok": true, "pw": true}; len(res.SensitiveVariables) != 2 || !res.SensitiveVariables["tok"] || !res.SensitiveVariables["pw"] {
		t.Errorf("sensitive variables %v, want %v", res.SensitiveVariables, want)
	}

	base := "provider \"local\" { fleet = \"f\" }\nvariable \"tok\" {\n  sensitive = true\n  default = \"t\"\n}\npool \"worker\" {}\n"
	d := diagAt(t, base, `config "x" {
  pools = ["worker"]
  unit "a.service" { contents = "[Service]\nEnvironment=T=${var.tok}\n" }
}`, "Sensitive variable used in clear", 3, 61)
	if !strings.Contains(d.Detail, "var.tok is sensitive") || !strings.Contains(d.Detail, "base.hcl:2,10") {
		t.Errorf("detail %q does not name the variable and its declaration", d.Detail)
	}
	diagAt(t, base, "config \"x\" {\n  pools = [\"worker\"]\n  kernel_args = [var.tok]\n}", "Sensitive variable used in clear", 3, 18)
	diagAt(t, base, "variable \"s\" {\n  sensitive = \"maybe\"\n}", "Invalid sensitive", 2, 15)
}
