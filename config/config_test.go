package config

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

func TestLoadValid(t *testing.T) {
	res, diags := Load("../examples/quickstart", Options{Schemas: testSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	d := res.Desired
	if fleet := d.Provider.Settings.Str("fleet"); d.Provider.Type != "local" || !filepath.IsAbs(fleet) ||
		!strings.HasSuffix(fleet, "examples/quickstart/fleet") {
		t.Errorf("provider = %+v", d.Provider)
	}
	var pools []string
	for _, p := range d.Pools {
		pools = append(pools, p.Name+"/"+p.MaxUnavailable.String())
	}
	if diff := cmp.Diff([]string{"infra/1", "worker/50%"}, pools); diff != "" {
		t.Errorf("pools (-want +got):\n%s", diff)
	}
	var configs []string
	for _, c := range d.Configs {
		configs = append(configs, c.Name)
	}
	if diff := cmp.Diff([]string{"00-motd", "50-chrony", "60-node-exporter", "70-infra-kargs"}, configs); diff != "" {
		t.Errorf("configs in merge order (-want +got):\n%s", diff)
	}
	chrony := d.Configs[1].Files[0]
	if chrony.Path != "/etc/chrony.conf" || chrony.Mode != 0o644 ||
		!bytes.Contains(chrony.Contents, []byte("server time.example.com iburst")) ||
		!cmp.Equal(chrony.OnChange, []model.Policy{{Kind: model.PolicyRestart, Unit: "chronyd.service"}}) {
		t.Errorf("chrony file = %+v (%s)", chrony, chrony.Contents)
	}
	u := d.Configs[2].Units[0]
	if u.Name != "node-exporter.service" || u.Enabled == nil || !*u.Enabled || !strings.Contains(u.Contents, "ExecStart=") {
		t.Errorf("unit = %+v", u)
	}
	if d.Configs[2].Files[0].Mode != 0o600 {
		t.Errorf("mode = %o, want 600", d.Configs[2].Files[0].Mode)
	}
	if chrony.DeclRange.Filename == "" || chrony.DeclRange.Start.Line == 0 {
		t.Errorf("file has no source range: %+v", chrony.DeclRange)
	}
}

func TestVariablePrecedence(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "main.hcl", `provider "local" { fleet = "f" }
variable "a" { default = "default" }
variable "b" { default = "default" }
variable "c" { default = "default" }
variable "n" {
  type    = number
  default = 1
}
pool "worker" { max_unavailable = var.n }
config "x" {
  pools = ["worker"]
  file "/etc/x" { content = "${var.a} ${var.b} ${var.c}" }
}
`)
	write(t, dir, "vars.hcl.in", `b = "file"
c = "file"
`)
	res, diags := Load(dir, Options{Schemas: testSchemas,
		Environ:  []string{"MCP_VAR_a=env", "MCP_VAR_b=env", "MCP_VAR_c=env", "MCP_VAR_n=3"},
		VarFiles: []string{filepath.Join(dir, "vars.hcl.in")},
		Vars:     []string{"c=flag"},
	})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if got := string(res.Desired.Configs[0].Files[0].Contents); got != "env file flag" {
		t.Errorf("content %q, want env < var file < -var", got)
	}
	if got := res.Desired.Pools[0].MaxUnavailable; got.Value != 3 {
		t.Errorf("typed variable from the environment: %+v", got)
	}
}

func TestTemplatefileAndFunctions(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "t.tpl", "%{ for s in servers ~}\nserver ${upper(s)}\n%{ endfor ~}\n")
	write(t, dir, "main.hcl", `provider "local" { fleet = "f" }
pool "worker" {}
config "x" {
  pools = ["worker"]
  file "/etc/a" { content = templatefile("t.tpl", { servers = ["a", "b"] }) }
  file "/etc/b" { content = base64decode(base64encode(jsonencode({ k = join(",", ["x", "y"]) }))) }
}
`)
	res, diags := Load(dir, Options{Schemas: testSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	files := res.Desired.Configs[0].Files
	if got := string(files[0].Contents); got != "server A\nserver B\n" {
		t.Errorf("templatefile: %q", got)
	}
	if got := string(files[1].Contents); got != `{"k":"x,y"}` {
		t.Errorf("functions: %q", got)
	}
}

// TestErrorsHavePlaces checks that each semantic error is reported at the place it was made.
func TestErrorsHavePlaces(t *testing.T) {
	tests := []struct {
		name, src string
		summary   string
		line, col int
	}{
		{"unknown pool", `config "x" {
  pools = ["worker", "nope"]
  file "/etc/a" { content = "x" }
}`, "Unknown pool", 2, 22},
		{"duplicate pool", "pool \"worker\" {}", "Duplicate pool", 1, 6},
		{"duplicate config", `config "x" {
  pools = ["worker"]
}
config "x" {
  pools = ["worker"]
}`, "Duplicate config", 4, 8},
		{"relative path", `config "x" {
  pools = ["worker"]
  file "etc/a" { content = "x" }
}`, "Relative path", 3, 8},
		{"outside allow-list", `config "x" {
  pools = ["worker"]
  file "/usr/bin/x" { content = "x" }
}`, "Path outside the managed trees", 3, 8},
		{"bad mode", `config "x" {
  pools = ["worker"]
  file "/etc/a" {
    content = "x"
    mode    = "0999"
  }
}`, "Invalid mode", 5, 15},
		{"bad percent", `pool "p" { max_unavailable = "150%" }`, "Invalid max_unavailable", 1, 30},
		{"zero", `pool "p" { max_unavailable = 0 }`, "Invalid max_unavailable", 1, 30},
		// As Kubernetes' IntOrString: a count in a string is refused, not taken as nodes.
		{"count in a string", `pool "p" { max_unavailable = "50" }`, "Invalid max_unavailable", 1, 30},
		{"spaced count in a string", `pool "p" { max_unavailable = " 2" }`, "Invalid max_unavailable", 1, 30},
		{"bad drain timeout", `pool "p" { drain_timeout = "soon" }`, "Invalid drain_timeout", 1, 28},
		{"bad policy", `config "x" {
  pools = ["worker"]
  file "/etc/a" {
    content   = "x"
    on_change = ["restart"]
  }
}`, "Invalid on_change policy", 5, 18},
		{"misspelt policy", `config "x" {
  pools = ["worker"]
  file "/etc/a" {
    content   = "x"
    on_change = ["none", "restrt:chronyd.service"]
  }
}`, "Invalid on_change policy", 5, 26},
		{"unknown function", `config "x" {
  pools = ["worker"]
  file "/etc/a" { content = nosuch("x") }
}`, "Call to unknown function", 3, 29},
		{"missing file()", `config "x" {
  pools = ["worker"]
  file "/etc/a" { content = file("missing.txt") }
}`, "Error in function call", 3, 29},
		{"unit suffix", `config "x" {
  pools = ["worker"]
  unit "foo" { contents = "x" }
}`, "Invalid unit name", 3, 8},
		{"enabled without [Install]", `config "x" {
  pools = ["worker"]
  unit "a.service" {
    contents = "[Service]\nExecStart=/bin/a\n"
    enabled  = true
  }
}`, "Unit cannot be enabled", 5, 16},
		{"template enabled without an instance", `config "x" {
  pools = ["worker"]
  unit "a@.service" {
    contents = "[Service]\nExecStart=/bin/a %i\n[Install]\nWantedBy=multi-user.target\n"
    enabled  = true
  }
}`, "Unit cannot be enabled", 5, 16},
		{"unknown attribute", `pool "p" { colour = "red" }`, "Unsupported argument", 1, 12},
		{"bad on_drift", "pool \"p\" {\n  on_drift = \"ignore\"\n}", "Invalid on_drift", 2, 14},
		{"bad paused", "pool \"p\" {\n  paused = \"reboot\"\n}", "Invalid paused", 2, 12},
		{"paused number", `pool "p" { paused = 1 }`, "Invalid paused", 1, 21},
		{"bad order", `pool "p" { order = "oldest-first" }`, "Invalid order", 1, 20},
		{"order not a name", `pool "p" { order = ["w-1", "W_2"] }`, "Invalid order", 1, 28},
		{"order twice", `pool "p" { order = ["w-1", "w-1"] }`, "Invalid order", 1, 28},
		{"order empty", `pool "p" { order = [] }`, "Invalid order", 1, 20},
		{"bad on_failure", "pool \"p\" {\n  on_failure = \"rollback\"\n}", "Invalid on_failure", 2, 16},
		{"chosen nodes in a reverting pool", "pool \"p\" {\n  on_failure = \"revert\"\n}\nconfig \"x\" {\n  pools = [\"p\"]\n  nodes = [\"p-1\"]\n  file \"/etc/a\" { content = \"x\" }\n}", "Chosen nodes in a pool that reverts", 6, 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			found := diagAt(t, "provider \"local\" { fleet = \"f\" }\npool \"worker\" {}\n", tt.src, tt.summary, tt.line, tt.col)
			if tt.name == "duplicate pool" && !strings.Contains(found.Detail, "base.hcl:2,6") {
				t.Errorf("duplicate does not name the first declaration: %s", found.Detail)
			}
			if tt.name == "misspelt policy" && !strings.HasSuffix(found.Detail, `Did you mean "restart:chronyd.service"?`) {
				t.Errorf("a misspelt policy gets no suggestion: %s", found.Detail)
			}
			if tt.name == "bad paused" && !strings.Contains(found.Detail, `paused = "reboot": use true (hold every change of the pool), false, or "disruptive"`) {
				t.Errorf("a bad paused is not explained: %s", found.Detail)
			}
			if tt.name == "count in a string" && !strings.Contains(found.Detail, `max_unavailable = "50" is a string without %: a string must be a percentage such as "50%"`) {
				t.Errorf("a count in a string is not explained: %s", found.Detail)
			}
		})
	}
}

// A diagnostic has its place and the block it is in, read by the language (cmd/mcp/views
// prints it in Terraform's box from these alone), and the result keeps the sources' lines.
func TestDiagnosticsFileLineCol(t *testing.T) {
	dir := t.TempDir()
	src := "provider \"local\" { fleet = \"f\" }\nconfig \"x\" {\n  pools = [\"nope\"]\n}\n"
	write(t, dir, "main.hcl", src)
	res, diags := Load(dir, Options{Schemas: testSchemas})
	name := filepath.Join(dir, "main.hcl")
	if len(diags) != 1 || diags[0].Subject == nil || diags[0].Subject.Filename != name ||
		diags[0].Subject.Start.Line != 3 || diags[0].Subject.Start.Column != 12 || diags[0].Summary != "Unknown pool" {
		t.Fatalf("diagnostics: %v", diags)
	}
	if diags[0].In != `config "x"` {
		t.Errorf("the block the place is in: %q, want config \"x\"", diags[0].In)
	}
	if res == nil || string(res.Sources[name]) != src {
		t.Errorf("sources: %v", res)
	}
}

func TestMissingProviderAndUndeclaredVariable(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "main.hcl", "pool \"worker\" {}\n")
	_, diags := Load(dir, Options{Schemas: testSchemas, Vars: []string{"nope=1"}})
	var summaries []string
	for _, d := range diags {
		summaries = append(summaries, d.Summary)
	}
	if diff := cmp.Diff([]string{"Undeclared variable", "No provider"}, summaries); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestFormat(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.hcl", "pool \"w\" {\nmax_unavailable=1\n}\n")
	write(t, dir, "b.hcl", "pool \"x\" {\n  paused = true\n}\n")
	changed, err := FormatDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(changed) != 1 || string(changed[filepath.Join(dir, "a.hcl")]) != "pool \"w\" {\n  max_unavailable = 1\n}\n" {
		t.Errorf("FormatDir = %q", changed)
	}
}

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestKubernetesStateBlock(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "main.hcl", `provider "local" { fleet = "./fleet" }
state {
  backend    = "kubernetes"
  namespace  = "mcp-system"
  kubeconfig = "kube/config"
  context    = "prod"
}
`)
	res, diags := Load(dir, Options{Schemas: testSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	st := res.Desired.State
	got := map[string]string{}
	for name, v := range st.Settings {
		got[name] = v.String
	}
	want := map[string]string{"namespace": "mcp-system", "kubeconfig": filepath.Join(dir, "kube/config"), "context": "prod"}
	if st.Backend != "kubernetes" || !cmp.Equal(want, got) {
		t.Errorf("state = %+v, want backend kubernetes and settings %v", st, want)
	}
}

func TestKubeconfigTildeIsHome(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	write(t, dir, "main.hcl", `provider "kubernetes" { kubeconfig = "~/.kube/config" }`+"\n")
	res, diags := Load(dir, Options{Schemas: testSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if got, want := res.Desired.Provider.Settings.Str("kubeconfig"), filepath.Join(home, ".kube/config"); got != want {
		t.Errorf("kubeconfig = %q, want %q", got, want)
	}
}

// Provider durations are checked where they are written, and the local provider takes a
// node_timeout.
func TestProviderDurations(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(`provider "local" {
  fleet           = "./fleet"
  node_timeout    = "30s"
  reboot_duration = "soon"
}
`), 0o644)
	_, diags := Load(dir, Options{Schemas: testSchemas})
	if !diags.HasErrors() || len(diags) != 1 || diags[0].Subject == nil || diags[0].Subject.Start.Line != 4 ||
		!strings.Contains(diags[0].Detail, "reboot_duration") {
		t.Fatalf("diags: %v", diags)
	}
}

// diagAt loads base.hcl and main.hcl (src) and returns the diagnostic summarised summary,
// failing the test unless there is one and it is at main.hcl line:col.
func diagAt(t *testing.T, base, src, summary string, line, col int) *model.Diagnostic {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "base.hcl", base)
	write(t, dir, "main.hcl", src)
	_, diags := Load(dir, Options{Schemas: testSchemas})
	var found *model.Diagnostic
	for _, d := range diags {
		if d.Summary == summary {
			found = d
		}
	}
	if found == nil {
		t.Fatalf("no %q diagnostic; got %v", summary, diags)
	}
	s := found.Subject
	if s == nil || filepath.Base(s.Filename) != "main.hcl" || s.Start.Line != line || s.Start.Column != col {
		t.Errorf("%q at %v, want main.hcl line %d column %d", summary, s, line, col)
	}
	return found
}

// enabled = true is refused only on contents that link nothing: an [Install] section in a
// drop-in counts, as does a template's DefaultInstance, and a unit without contents (the
// OS's own) or disabled is not read.
func TestEnabledUnitsThatCanBeEnabled(t *testing.T) {
	for name, unit := range map[string]string{
		"drop-in installs": `unit "a.service" {
    contents = "[Service]\nExecStart=/bin/a\n"
    enabled  = true
    dropin "10-install.conf" { contents = "[Install]\nWantedBy=multi-user.target\n" }
  }`,
		"template with a default instance": `unit "a@.service" {
    contents = "[Service]\nExecStart=/bin/a %i\n[Install]\nWantedBy=multi-user.target\nDefaultInstance=x\n"
    enabled  = true
  }`,
		"the OS's unit": `unit "chronyd.service" { enabled = true }`,
		"disabled, no [Install]": `unit "a.service" {
    contents = "[Service]\nExecStart=/bin/a\n"
    enabled  = false
  }`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "main.hcl", "provider \"local\" { fleet = \"f\" }\npool \"worker\" {}\nconfig \"x\" {\n  pools = [\"worker\"]\n  "+unit+"\n}\n")
			if _, diags := Load(dir, Options{Schemas: testSchemas}); diags.HasErrors() {
				t.Error(diags)
			}
		})
	}
}

// A misspelt variable, pool or -var gets the declared name nearest to it, as HCL suggests
// attribute names.
func TestDidYouMean(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "main.hcl", `provider "local" { fleet = "f" }
variable "ntp_server" { default = "a" }
pool "worker" {}
config "x" {
  pools = ["workers"]
  file "/etc/a" { content = var.ntp_servr }
}
`)
	_, diags := Load(dir, Options{Vars: []string{"ntp_srever=b"}})
	var details []string
	for _, d := range diags {
		details = append(details, d.Detail)
	}
	for _, want := range []string{`names pool "workers", which no pool block declares. Did you mean "worker"?`,
		`named "ntp_servr". Did you mean "ntp_server"?`, `sets variable "ntp_srever", which no variable block declares. Did you mean "ntp_server"?`} {
		if !strings.Contains(strings.Join(details, "\n"), want) {
			t.Errorf("no diagnostic says %q:\n%s", want, strings.Join(details, "\n"))
		}
	}
}

// paused is true, false or "disruptive"; order "oldest" (the default), "newest" or a list
// of node names, each with its place for the plan's warnings.
func TestPausedAndOrder(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "main.hcl", `provider "local" { fleet = "f" }
pool "a" { paused = true }
pool "b" {
  paused = "disruptive"
  order  = "newest"
}
pool "c" {
  paused = false
  order  = ["w-3", "w-1"]
}
pool "d" {}
`)
	res, diags := Load(dir, Options{Schemas: testSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	got := map[string]model.Pool{}
	for _, p := range res.Desired.Pools {
		got[p.Name] = p
	}
	if got["a"].Paused != model.PauseAll || got["b"].Paused != model.PauseDisruptive || got["c"].Paused != model.PauseOff || got["d"].Paused != model.PauseOff {
		t.Errorf("paused: a %q, b %q, c %q, d %q", got["a"].Paused, got["b"].Paused, got["c"].Paused, got["d"].Paused)
	}
	if got["b"].Order.By != model.OrderNewest || got["d"].Order.By != model.OrderOldest || got["a"].Order.Nodes != nil {
		t.Errorf("order: b %+v, d %+v", got["b"].Order, got["d"].Order)
	}
	c := got["c"].Order
	if !slices.Equal(c.Nodes, []string{"w-3", "w-1"}) || c.By != model.OrderOldest || len(c.NodeRanges) != 2 ||
		c.NodeRanges[1].Start.Line != 9 || c.NodeRanges[1].Start.Column != 20 {
		t.Errorf("order list: %+v", c)
	}
}
