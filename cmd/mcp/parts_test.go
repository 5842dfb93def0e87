package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/config"
	"github.com/mcpfleet/mcp/providers"
	"github.com/mcpfleet/mcp/providers/kubernetes"
	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/providers/record"
	"github.com/mcpfleet/mcp/state/localstate"
)

// A provider "kubernetes" block loads and gives this provider through the parts of this build.
func TestPartsBuildKubernetesProvider(t *testing.T) {
	dir := t.TempDir()
	kc := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://c.example:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: prod, context: {cluster: c, user: u}}]
`
	hcl := `provider "kubernetes" {
  kubeconfig = "kc.yaml"
  context    = "prod"
}
`
	for name, s := range map[string]string{"kc.yaml": kc, "main.hcl": hcl} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	res, diags := config.Load(dir, config.Options{Schemas: parts.Schemas()})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if s := res.Desired.Provider.Settings; s.Str("context") != "prod" || s.Str("kubeconfig") != filepath.Join(dir, "kc.yaml") {
		t.Errorf("provider settings %v", s)
	}
	p, err := parts.Engine().Provider(res.Desired)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.(*kubernetes.Provider); !ok {
		t.Errorf("parts built %T", p)
	}
	if _, ok := p.(providers.RequestCounter); !ok {
		t.Error("the kubernetes provider does not count its requests")
	}
}

// The parts of this build declare their settings; a bad value is refused at its place,
// and a part that cannot be built from what it was given is refused at the setting it
// names, before anything is planned.
func TestPartsSettingsRefusedAtTheirPlace(t *testing.T) {
	fleet := filepath.Join(t.TempDir(), "fleet")
	if err := local.Init(fleet, local.InitSpec{Pools: []local.PoolSize{{Name: "worker", Count: 1}}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, src, want string
	}{
		{"duration", `provider "local" {
  fleet           = "` + fleet + `"
  reboot_duration = "soon"
}`, `Error: Invalid duration
│
│   on DIR/main.hcl:3,21, in provider "local":`},
		{"positive", `provider "kubernetes" {
  node_timeout = "0s"
}`, `node_timeout = "0s": want a positive duration such as "30s" or "10m".`},
		{"namespace", `provider "kubernetes" {
  namespace = "MCP/System"
}`, `main.hcl:2,15`},
		{"bool", `provider "kubernetes" {
  delete_emptydir_data = "maybe"
}`, `delete_emptydir_data must be true or false`},
		{"no fleet there", `provider "local" {
  fleet = "nofleet"
}`, `Error: Cannot start provider
│
│   on DIR/main.hcl:2,11, in provider "local":
│      2:   fleet = "nofleet"`},
		{"no kubeconfig there", `provider "local" { fleet = "` + fleet + `" }
state {
  backend    = "kubernetes"
  kubeconfig = "missing.yaml"
}`, `Error: Cannot open state backend
│
│   on DIR/main.hcl:4,16, in state:`},
		{"unknown provider", `provider "openstack" {}`, `Provider "openstack" is not one mcp knows: use "local" or "kubernetes".`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(c.src+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := mcp(t, dir, "plan", "-no-color")
			if want := strings.ReplaceAll(c.want, "DIR", dir); code != 1 || !strings.Contains(errOut, want) {
				t.Errorf("plan exit %d, want 1 and %q in:\n%s%s", code, want, out, errOut)
			}
		})
	}
}

// Every part of this build declares a sound spec under a name of its own, and `mcp serve`
// can follow every state backend.
func TestPartsDeclareThemselves(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range parts.Providers {
		if err := p.Check(); err != nil || seen["provider "+p.Name] || p.New == nil {
			t.Errorf("provider %q: %v (declared before: %v)", p.Name, err, seen["provider "+p.Name])
		}
		seen["provider "+p.Name] = true
	}
	for _, b := range parts.Backends {
		if err := b.Check(); err != nil || seen["backend "+b.Name] || b.Open == nil {
			t.Errorf("state backend %q: %v (declared before: %v)", b.Name, err, seen["backend "+b.Name])
		}
		seen["backend "+b.Name] = true
		if b.Boot == nil {
			t.Errorf("mcp serve cannot follow state backend %q", b.Name)
		}
	}
	// The engine is given the same backends in the same order: the first is the default.
	e := parts.Engine()
	if len(e.Backends) != len(parts.Backends) || e.Backends[0].Name != localstate.Spec.Name {
		t.Fatalf("the engine's backends are %d, the first %q; want the parts' %d, the first %q",
			len(e.Backends), e.Backends[0].Name, len(parts.Backends), localstate.Spec.Name)
	}
	for i, b := range e.Backends {
		if b.Name != parts.Backends[i].Name {
			t.Errorf("the engine's backend %d is %q, the parts' %q", i, b.Name, parts.Backends[i].Name)
		}
	}
}

// A provider is its package and a line here: with the record provider added to this
// build's parts (nothing in the engine names it), a configuration that names it validates,
// plans and applies, every node cordoned, drained, updated (a write and a reboot) and
// uncordoned in its turn, and
// a bad value of its settings is refused at its place.
func TestAProviderIsItsPackageAndALine(t *testing.T) {
	withRecord := buildParts{Providers: append(slices.Clone(parts.Providers), record.Spec), Backends: parts.Backends}
	dir := t.TempDir()
	write := func(src string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (int, string) {
		t.Helper()
		var out, errb bytes.Buffer
		code := runWith(context.Background(), withRecord, append([]string{"-chdir=" + dir}, args...), strings.NewReader(""), &out, &errb)
		return code, out.String() + errb.String()
	}
	write(`provider "record" {
  nodes     = 2
  zones     = ["a", "b"]
  step_time = "1ms"
  log       = "calls.log"
}

pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = 1
}

config "00-motd" {
  pools = ["worker"]
  file "/etc/motd" {
    content = "managed by mcp\n" # no on_change: a reboot
  }
}
`)
	if code, out := run("validate", "-no-color"); code != 0 {
		t.Fatalf("validate: exit %d\n%s", code, out)
	}
	if code, out := run("plan", "-no-color", "-detailed-exitcode"); code != 2 || !strings.Contains(out, "worker-1") {
		t.Fatalf("plan: exit %d, want 2 (changes) naming worker-1\n%s", code, out)
	}
	if code, out := run("apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "calls.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"worker-0", "worker-1"} {
		var seq []string
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[1] == n && f[0] != "observe-nodes" {
				seq = append(seq, f[0])
			}
		}
		want := []string{"cordon", "drain", "run-node-steps", "uncordon"}
		if got := slices.DeleteFunc(seq, func(op string) bool { return !slices.Contains(want, op) }); !slices.Equal(got, want) {
			t.Errorf("%s was asked %v, want %v in order; the log:\n%s", n, got, want, b)
		}
	}
	write(`provider "record" {
  nodes = 2.5
}
`)
	if code, out := run("plan", "-no-color"); code != 1 || !strings.Contains(out, "main.hcl:2,11") ||
		!strings.Contains(out, "nodes = 2.5: want a whole number") {
		t.Errorf("a bad nodes setting: exit %d\n%s", code, out)
	}
}
