package kubernetes

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers/providertest"
)

const kubeconfigYAML = `apiVersion: v1
kind: Config
clusters:
- name: prod
  cluster: {server: "https://prod.example:6443"}
- name: test
  cluster: {server: "https://test.example:6443"}
users:
- name: u
  user: {token: t}
contexts:
- name: prod
  context: {cluster: prod, user: u}
- name: test
  context: {cluster: test, user: u}
current-context: test
`

// The provider's spec: the cluster its kubeconfig and context settings name, its options
// from the other settings or their defaults, and the values it refuses.
func TestSpec(t *testing.T) {
	if err := Spec.Check(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kc := filepath.Join(dir, "kc.yaml")
	if err := os.WriteFile(kc, []byte(kubeconfigYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", filepath.Join(dir, "absent"))
	build := providertest.FromSpec[*Provider]
	host := func(given map[string]any) string {
		t.Helper()
		p, err := build(Spec, given)
		if err != nil {
			t.Fatal(err)
		}
		return p.host
	}
	if h := host(map[string]any{"kubeconfig": kc}); h != "https://test.example:6443" {
		t.Errorf("current context: host %s", h)
	}
	if h := host(map[string]any{"kubeconfig": kc, "context": "prod"}); h != "https://prod.example:6443" {
		t.Errorf("context prod: host %s", h)
	}
	p, err := build(Spec, map[string]any{"kubeconfig": kc, "delete_emptydir_data": false, "evict_unreplicated": false,
		"node_timeout": "5m", "request_timeout": "10s", "namespace": "mcp-prod", "fleet_selector": "mcpfleet.io/fleet=blue,!control-plane"})
	if err != nil {
		t.Fatal(err)
	}
	if p.o.deleteEmptyDirData() || p.o.evictUnreplicated() || p.o.NodeTimeout != 5*time.Minute || p.o.RequestTimeout != 10*time.Second ||
		p.o.Namespace != "mcp-prod" || p.o.FleetSelector.String() != "!control-plane,mcpfleet.io/fleet=blue" {
		t.Errorf("options %+v: want delete_emptydir_data and evict_unreplicated false, node_timeout 5m, request_timeout 10s, namespace mcp-prod, the fleet selector", p.o)
	}
	if p, err := build(Spec, map[string]any{"kubeconfig": kc}); err != nil || p.o.RequestTimeout != DefaultRequestTimeout ||
		p.o.Namespace != DefaultNamespace || p.o.NodeTimeout != DefaultNodeTimeout || !p.o.deleteEmptyDirData() || !p.o.evictUnreplicated() ||
		p.o.FleetSelector != nil {
		t.Errorf("defaults: %+v, %v", p.o, err)
	}
	t.Setenv("KUBECONFIG", kc)
	if h := host(map[string]any{"context": "prod"}); h != "https://prod.example:6443" {
		t.Errorf("$KUBECONFIG, context prod: host %s", h)
	}
	for _, c := range []struct {
		given map[string]any
		want  string
	}{
		{map[string]any{"context": "nope"}, `context "nope" does not exist`},
		{map[string]any{"kubeconfig": filepath.Join(dir, "missing.yaml")}, "missing.yaml"},
		{map[string]any{"fleet": "x"}, `no setting "fleet"`},
		{map[string]any{"delete_emptydir_data": "maybe"}, `"maybe" is not a bool`},
		{map[string]any{"evict_unreplicated": "yes please"}, `"yes please" is not a bool`},
		{map[string]any{"node_timeout": "-1m"}, `"-1m" is not a duration`},
		{map[string]any{"request_timeout": "0s"}, `request_timeout = "0s": want a positive duration`},
		{map[string]any{"namespace": "MCP/System"}, `namespace = "MCP/System": not a namespace name`},
		{map[string]any{"fleet_selector": "team==a==b"}, `fleet_selector = "team==a==b": not a label selector`},
	} {
		if _, err := build(Spec, c.given); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("settings %v: %v, want an error with %q", c.given, err, c.want)
		}
	}
	// A kubeconfig that does not load is refused at the kubeconfig setting.
	_, err = build(Spec, map[string]any{"kubeconfig": filepath.Join(dir, "missing.yaml")})
	var se *model.SettingError
	if !errors.As(err, &se) || se.Setting != "kubeconfig" {
		t.Errorf("a missing kubeconfig: %v, want a SettingError of kubeconfig", err)
	}
}
