// Render fills Typhoon's Butane templates (src/*.yaml.tmpl, Terraform templatefile
// syntax) with the plain values below, as Typhoon's Terraform modules do with a cluster's
// variables, and writes PLATFORM-KIND.bu beside src. Run here: go run render.go
package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://demo.example.com:6443
    certificate-authority-data: Y2VydGlmaWNhdGUtYXV0aG9yaXR5LWRhdGEK
users:
- name: kubelet
  user:
    token: abcdef.0123456789abcdef
contexts:
- context:
    cluster: local
    user: kubelet
`

// values are what a cluster "demo" in zone example.com with one controller would give
// (controllers.tf, workers.tf): kubeconfig indented by 10 as the modules' indent(10, …).
var values = map[string]cty.Value{
	"etcd_name":              cty.StringVal("etcd0"),
	"etcd_domain":            cty.StringVal("demo-etcd0.example.com"),
	"etcd_initial_cluster":   cty.StringVal("etcd0=https://demo-etcd0.example.com:2380"),
	"domain_name":            cty.StringVal("node1.example.com"),
	"kubeconfig":             cty.StringVal(strings.ReplaceAll(strings.TrimSuffix(kubeconfig, "\n"), "\n", "\n          ")),
	"ssh_authorized_key":     cty.StringVal("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGRlbW8ga2V5IGZvciB0aGUgY29ycHVzIG9ubHkgISEh demo@example.com"),
	"cluster_dns_service_ip": cty.StringVal("10.3.0.10"),
	"node_labels":            cty.StringVal("node.example.com/pool=demo"),
	"node_taints":            cty.StringVal(""),
	"cloud_provider":         cty.NullVal(cty.String),
	// Flatcar's bare-metal installer (install.yaml), as Matchbox serves it.
	"ignition_endpoint": cty.StringVal("http://matchbox.example.com:8080/ignition"),
	"mac":               cty.StringVal("52:54:00:a1:9c:ae"),
	"install_disk":      cty.StringVal("/dev/sda"),
	"os_channel":        cty.StringVal("stable"),
	"os_version":        cty.StringVal("current"),
	"oem_flag":          cty.StringVal(""),
	"baseurl_flag":      cty.StringVal(""),
}

func main() {
	srcs, _ := filepath.Glob("src/*.yaml.tmpl")
	ctx := &hcl.EvalContext{Variables: values, Functions: map[string]function.Function{
		"split": stdlib.SplitFunc, "compact": stdlib.CompactFunc}}
	for _, src := range srcs {
		b, err := os.ReadFile(src)
		if err != nil {
			panic(err)
		}
		expr, diags := hclsyntax.ParseTemplate(b, src, hcl.InitialPos)
		if diags.HasErrors() {
			panic(diags)
		}
		v, diags := expr.Value(ctx)
		if diags.HasErrors() {
			panic(diags)
		}
		out := strings.TrimSuffix(filepath.Base(src), ".yaml.tmpl") + ".bu"
		if err := os.WriteFile(out, []byte(v.AsString()), 0o644); err != nil {
			panic(err)
		}
	}
}
