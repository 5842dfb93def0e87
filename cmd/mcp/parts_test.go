package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpfleet/mcp/engine/config"
	"github.com/mcpfleet/mcp/providers"
	"github.com/mcpfleet/mcp/providers/kubernetes"
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
	res, diags := config.Load(dir, config.Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if a := res.Desired.Provider.Attrs; a["context"] != "prod" || a["kubeconfig"] != filepath.Join(dir, "kc.yaml") {
		t.Errorf("provider attributes %v", a)
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
