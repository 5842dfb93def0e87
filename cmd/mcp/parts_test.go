package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/engine/config"
	"github.com/mcpfleet/mcp/providers"
	"github.com/mcpfleet/mcp/providers/kubernetes"
	"github.com/mcpfleet/mcp/providers/local"
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
	p, err := parts.Provider(res.Desired)
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

  on DIR/main.hcl line 3, in provider "local":`},
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

  on DIR/main.hcl line 2, in provider "local":
   2:   fleet = "nofleet"`},
		{"no kubeconfig there", `provider "local" { fleet = "` + fleet + `" }
state {
  backend    = "kubernetes"
  kubeconfig = "missing.yaml"
}`, `Error: Cannot open state backend

  on DIR/main.hcl line 4, in state:`},
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
		if bootSources[b.Name] == nil {
			t.Errorf("mcp serve cannot follow state backend %q", b.Name)
		}
	}
}
