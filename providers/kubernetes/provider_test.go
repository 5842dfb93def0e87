package kubernetes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

func TestFromAttrs(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kc.yaml"), []byte(kubeconfigYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", filepath.Join(dir, "absent"))
	host := func(attrs map[string]string) string {
		t.Helper()
		p, err := FromAttrs(dir, attrs)
		if err != nil {
			t.Fatal(err)
		}
		return p.host
	}
	if h := host(map[string]string{"kubeconfig": "kc.yaml"}); h != "https://test.example:6443" {
		t.Errorf("current context: host %s", h)
	}
	if h := host(map[string]string{"kubeconfig": filepath.Join(dir, "kc.yaml"), "context": "prod"}); h != "https://prod.example:6443" {
		t.Errorf("context prod: host %s", h)
	}
	p, err := FromAttrs(dir, map[string]string{"kubeconfig": "kc.yaml", "delete_emptydir_data": "false", "evict_unreplicated": "false",
		"node_timeout": "5m", "request_timeout": "10s", "namespace": "mcp-prod"})
	if err != nil {
		t.Fatal(err)
	}
	if p.o.deleteEmptyDirData() || p.o.evictUnreplicated() || p.o.NodeTimeout != 5*time.Minute || p.o.RequestTimeout != 10*time.Second ||
		p.o.Namespace != "mcp-prod" {
		t.Errorf("options %+v: want delete_emptydir_data and evict_unreplicated false, node_timeout 5m, request_timeout 10s, namespace mcp-prod", p.o)
	}
	if p, err := FromAttrs(dir, map[string]string{"kubeconfig": "kc.yaml"}); err != nil || p.o.RequestTimeout != DefaultRequestTimeout ||
		p.o.Namespace != DefaultNamespace || !p.o.deleteEmptyDirData() || !p.o.evictUnreplicated() {
		t.Errorf("defaults: request timeout %v, namespace %q, delete_emptydir_data %v, evict_unreplicated %v, %v",
			p.o.RequestTimeout, p.o.Namespace, p.o.deleteEmptyDirData(), p.o.evictUnreplicated(), err)
	}
	t.Setenv("KUBECONFIG", filepath.Join(dir, "kc.yaml"))
	if h := host(map[string]string{"context": "prod"}); h != "https://prod.example:6443" {
		t.Errorf("$KUBECONFIG, context prod: host %s", h)
	}
	for _, c := range []struct {
		attrs map[string]string
		want  string
	}{
		{map[string]string{"context": "nope"}, `context "nope" does not exist`},
		{map[string]string{"kubeconfig": "missing.yaml"}, "missing.yaml"},
		{map[string]string{"fleet": "x"}, `no attribute "fleet"`},
		{map[string]string{"delete_emptydir_data": "maybe"}, `delete_emptydir_data: "maybe"`},
		{map[string]string{"evict_unreplicated": "yes please"}, `evict_unreplicated: "yes please"`},
		{map[string]string{"node_timeout": "-1m"}, `node_timeout: "-1m"`},
		{map[string]string{"request_timeout": "0s"}, `request_timeout: "0s"`},
		{map[string]string{"namespace": "MCP/System"}, `namespace: "MCP/System" is not a namespace name`},
	} {
		if _, err := FromAttrs(dir, c.attrs); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("FromAttrs(%v): %v, want an error with %q", c.attrs, err, c.want)
		}
	}
}
