package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSensitiveValuesShowNowhere: a variable declared sensitive, a variable that reaches a
// sensitive file, and a file's old content once the file is marked sensitive appear in no
// output of plan, plan -json, show (human, JSON, Markdown) of a saved plan, apply, status
// or validate; the nodes get them all the same.
func TestSensitiveValuesShowNowhere(t *testing.T) {
	const (
		declared = "s3cr3t-declared-9f2c"
		reaching = "s3cr3t-reaching-41ab"
		oldText  = "0ld-publ1c-c0ntent-77e1"
	)
	dir := quickstart(t)
	main := filepath.Join(dir, "main.hcl")
	orig, err := os.ReadFile(main)
	if err != nil {
		t.Fatal(err)
	}
	write := func(extra string) {
		t.Helper()
		if err := os.WriteFile(main, append(append([]byte{}, orig...), extra...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// First the file is public.
	write(`
config "80-app" {
  pools = ["worker"]
  file "/etc/app.conf" {
    content   = "` + oldText + `\n"
    on_change = ["none"]
  }
}
`)
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("first apply: exit %d\n%s%s", code, out, errOut)
	}
	// Then it is marked sensitive and holds the variables.
	write(`
variable "api_token" {
  sensitive = true
}
variable "db_password" {}

config "80-app" {
  pools = ["worker"]
  file "/etc/app.conf" {
    content   = "token=${var.api_token}\n"
    on_change = ["none"]
  }
  file "/etc/db.conf" {
    content   = templatefile("db.tpl", { password = var.db_password })
    sensitive = true
    on_change = ["none"]
  }
}
`)
	if err := os.WriteFile(filepath.Join(dir, "db.tpl"), []byte("password=${password}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MCP_VAR_api_token", declared)
	t.Setenv("MCP_VAR_db_password", reaching)
	plan := filepath.Join(t.TempDir(), "plan.out")
	for _, args := range [][]string{
		{"validate", "-json"},
		{"plan", "-no-color"},
		{"plan", "-json"},
		{"plan", "-no-color", "-out", plan},
		{"show", plan},
		{"show", "-json", plan},
		{"show", "-markdown", plan},
		{"apply", "-auto-approve", "-no-color", plan},
		{"status", "-nodes", "-no-color"},
		{"plan", "-json"},
	} {
		code, out, errOut := mcp(t, dir, args...)
		if code != 0 && !(args[0] == "plan" && code == 2) {
			t.Errorf("mcp %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		for _, secret := range []string{declared, reaching, oldText} {
			if strings.Contains(out+errOut, secret) {
				t.Errorf("mcp %s prints %q:\n%s%s", strings.Join(args, " "), secret, out, errOut)
			}
		}
	}
	for _, f := range []struct{ path, want string }{{"etc/app.conf", "token=" + declared + "\n"}, {"etc/db.conf", "password=" + reaching + "\n"}} {
		if got := rootFile(dir, "worker-0", f.path); got != f.want {
			t.Errorf("worker-0 %s = %q, want %q", f.path, got, f.want)
		}
	}
}
