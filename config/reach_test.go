package config

import (
	"slices"
	"testing"
)

// Desired.Reach names the variables each file and unit uses (its drop-ins' included).
func TestReachNamesVariablesOfItems(t *testing.T) {
	dir := treeConfig(t, `  file "/etc/chrony.conf" {
    content = "server ${var.ntp}\n"
    mode    = var.mode
  }
  file "/etc/motd" { content = "fixed\n" }
  unit "x.service" {
    dropin "10-a.conf" { contents = "[Service]\nEnvironment=M=${var.motd}\n" }
  }
`, map[string]string{"vars.hcl": "variable \"ntp\" { default = \"a\" }\nvariable \"motd\" { default = \"b\" }\nvariable \"mode\" { default = \"0600\" }\n"})
	res, diags := Load(dir, Options{Schemas: testSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	r := res.Desired.Reach
	if !slices.Equal(r["/etc/chrony.conf"], []string{"mode", "ntp"}) || r["/etc/motd"] != nil || !slices.Equal(r["x.service"], []string{"motd"}) {
		t.Errorf("Reach = %v", r)
	}
}
