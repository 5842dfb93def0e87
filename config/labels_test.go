package config

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Every kind of labelled block reports a second declaration of a label in the same words,
// at the second label, naming where the first one is; in the order the blocks come.
func TestDuplicateLabels(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "main.hcl", `provider "local" { fleet = "f" }
pool "worker" {}
pool "worker" {}
variable "v" { default = 1 }
variable "v" { default = 1 }
config "x" {
  pools = ["worker"]
  file "/etc/a" { content = "a" }
  file "/etc/a" { content = "b" }
  unit "a.service" {
    dropin "10.conf" { contents = "" }
    dropin "10.conf" { contents = "" }
  }
  unit "a.service" { mask = true }
}
config "x" {
  pools = ["worker"]
}
`)
	_, diags := Load(dir, Options{Schemas: testSchemas})
	var got []string
	for _, d := range diags {
		got = append(got, fmt.Sprintf("%s:%d,%d %s: %s", filepath.Base(d.Subject.Filename), d.Subject.Start.Line, d.Subject.Start.Column, d.Summary, d.Detail))
	}
	at := func(line, col int) string { return fmt.Sprintf("%s:%d,%d", filepath.Join(dir, "main.hcl"), line, col) }
	want := []string{
		"main.hcl:5,10 Duplicate variable: Variable \"v\" is already declared at " + at(4, 10) + ".",
		"main.hcl:3,6 Duplicate pool: Pool \"worker\" is already declared at " + at(2, 6) + ".",
		"main.hcl:9,8 Duplicate file: File \"/etc/a\" is already declared at " + at(8, 8) + ".",
		"main.hcl:12,12 Duplicate dropin: Dropin \"10.conf\" is already declared at " + at(11, 12) + ".",
		"main.hcl:14,8 Duplicate unit: Unit \"a.service\" is already declared at " + at(10, 8) + ".",
		"main.hcl:16,8 Duplicate config: Config \"x\" is already declared at " + at(6, 8) + ".",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("diagnostics (-want +got):\n%s", d)
	}
}
