package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/testkit/printed"
)

// hclText is printed.Text(tag) as an HCL string literal, quotes included.
func hclText(tag string) string {
	s := strconv.QuoteToASCII(printed.Text(tag))
	return strings.ReplaceAll(strings.ReplaceAll(s, `\x1b`, `\u001b`), `\a`, `\u0007`)
}

// yamlText is printed.Text(tag) as a YAML double-quoted string (YAML takes Go's \x, \u
// and \r escapes, and no raw control character).
func yamlText(tag string) string { return strconv.QuoteToASCII(printed.Text(tag)) }

// forging is text whose line break forges a line (where printed.Text's slashes would be
// cut off: a path's last element), and forgedLine finds that line printed.
const forging = "x\n│ Error: FORGED"

var forgedLine = regexp.MustCompile(`(?m)^[│ ]*Error: FORGED.*$`)

// TestHostileTextInRefusalsIsEscaped: what validate says when it refuses (or warns of) a
// configuration quotes the configuration's text escaped — a path reaching mcp's records
// through a link, a file a function cannot read, Butane's paths, unit names and local
// files, a health check's program, an alert gate's pattern —: a line break in it never
// starts a line of the error box.
func TestHostileTextInRefusalsIsEscaped(t *testing.T) {
	bu := func(body string) string { // a config of Butane text read from x.bu
		return "config \"x\" {\n  pools = [\"worker\"]\n  butane = file(\"x.bu\")\n}\n#BU\nvariant: fcos\nversion: 1.5.0\n" + body
	}
	for _, tc := range []struct{ name, hcl string }{
		{"records through a link", `config "x" {
  pools = ["worker"]
  link "/etc/a" { target = "/var" }
  link "/etc/a/lib" { target = "/etc/` + strings.Trim(hclText("LINK"), `"`) + `" }
  file "/etc/` + strings.Trim(hclText("LINK"), `"`) + `/mcp/desired" { content = "x" }
}`},
		{"file()", `config "x" {
  pools = ["worker"]
  file "/etc/x" { content = file(` + hclText("FN") + `) }
}`},
		{"templatefile()", `config "x" {
  pools = ["worker"]
  file "/etc/x" { content = templatefile(` + hclText("FN") + `, {}) }
}`},
		{"a function of HCL's library", `config "x" {
  pools = ["worker"]
  file "/etc/x" { content = regex(` + strconv.Quote("("+forging) + `, "x") }
}`},
		{"machineconfig path", "config \"x\" {\n  machineconfig = file(\"x.bu\")\n}\n#BU\n" + `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 99-x
  labels: {machineconfiguration.openshift.io/role: worker}
spec:
  config:
    ignition: {version: 3.2.0}
    storage:
      files:
        - path: ` + yamlText("/usr/MC") + `
          contents: {source: "data:,x"}
`},
		{"butane path outside the managed trees", bu("storage:\n  files:\n    - path: " + yamlText("/usr/BU") + "\n      contents: {inline: x}\n")},
		{"butane path in the records", bu("storage:\n  files:\n    - path: " + yamlText("/var/lib/mcp/BU") + "\n      contents: {inline: x}\n")},
		{"butane owner by number", bu("storage:\n  files:\n    - path: " + yamlText("/etc/BU") + "\n      user: {id: 5}\n      contents: {inline: x}\n")},
		{"butane file from a URL", bu("storage:\n  files:\n    - path: " + yamlText("/etc/BU") + "\n      contents: {source: \"https://example.com/x\"}\n")},
		{"butane file in /home", bu("storage:\n  files:\n    - path: " + yamlText("/home/BU") + "\n      contents: {inline: x}\n")},
		{"butane unit name", bu("systemd:\n  units:\n    - name: " + strconv.QuoteToASCII(forging+".service") + "\n      contents: \"[Service]\\n\"\n")},
		{"butane local file", bu("storage:\n  files:\n    - path: /etc/x\n      contents: {local: " + yamlText("BU") + "}\n")},
		{"health check program", `pool "p" {
  health_check "h" { command = [` + strconv.Quote(forging) + `] }
}`},
		{"alert gate pattern", `pool "p" {
  alert_gate {
    prometheus_url = "http://prometheus:9090"
    ignore         = [` + strconv.Quote("["+forging) + `]
  }
}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "main.hcl"), []byte("provider \"local\" { fleet = \"./fleet\" }\npool \"worker\" {}\n"), 0o644)
			cfg, butane, _ := strings.Cut(tc.hcl, "#BU\n")
			os.WriteFile(filepath.Join(dir, "c.hcl"), []byte(cfg), 0o644)
			os.WriteFile(filepath.Join(dir, "x.bu"), []byte(butane), 0o644)
			_, out, errOut := mcp(t, dir, "validate", "-no-color")
			if !strings.Contains(out+errOut, "╷") {
				t.Fatalf("validate says nothing of it:\n%s%s", out, errOut)
			}
			printed.Check(t, "mcp validate", out+errOut, printed.Options{})
			if forged := forgedLine.FindString(out + errOut); forged != "" {
				t.Errorf("validate prints a forged line %q:\n%s%s", forged, out, errOut)
			}
		})
	}
}

// TestCommandLineTextIsEscaped: what a command line gives — an unknown option, a -target,
// a -chdir, as a CI job may pass them from a pull request — is quoted escaped in the
// error that refuses it: a line break in it does not start a line of the box.
func TestCommandLineTextIsEscaped(t *testing.T) {
	dir := quickstart(t)
	for _, args := range [][]string{
		{"plan", "-no-color", "-x" + printed.Text("OPT")},
		{"plan", "-no-color", "-target=node." + forging},
		{"-chdir=" + filepath.Join(dir, forging), "validate"},
	} {
		_, out, errOut := mcp(t, dir, args...)
		if !strings.Contains(errOut, "╷") {
			t.Fatalf("mcp %q says nothing of it:\n%s%s", args, out, errOut)
		}
		printed.Check(t, "mcp "+strings.Join(args, " "), out+errOut, printed.Options{})
		if forged := forgedLine.FindString(out + errOut); forged != "" {
			t.Errorf("mcp %q prints a forged line %q:\n%s", args, forged, errOut)
		}
	}
}
