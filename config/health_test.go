package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mcpfleet/mcp/model"
)

func TestHealthChecks(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "main.hcl", `provider "local" { fleet = "f" }
variable "port" { default = 10256 }
pool "worker" {
  health_check "kube-proxy" {
    http_get = "http://${node.address}:${var.port}/healthz?node=${node.name}"
  }
  health_check "app" {
    http_get = "https://app.example.com/ready/${node.name}"
    timeout  = "30s"
  }
  health_check "kubelet" {
    command = ["/usr/bin/systemctl", "is-active", "kubelet"]
    timeout = "2m"
  }
}
`)
	res, diags := Load(dir, Options{Schemas: testSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	want := []model.HealthCheck{
		{Name: "kube-proxy", HTTPGet: "http://${node.address}:10256/healthz?node=${node.name}", Timeout: model.DefaultHealthCheckTimeout},
		{Name: "app", HTTPGet: "https://app.example.com/ready/${node.name}", Timeout: 30 * time.Second},
		{Name: "kubelet", Command: []string{"/usr/bin/systemctl", "is-active", "kubelet"}, Timeout: 2 * time.Minute},
	}
	got := res.Desired.Pool("worker").HealthChecks
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(model.HealthCheck{}, "DeclRange")); diff != "" {
		t.Errorf("health checks (-want +got):\n%s", diff)
	}
	if u := got[0].URLFor("worker-1", "10.0.0.7"); u != "http://10.0.0.7:10256/healthz?node=worker-1" {
		t.Errorf("URL for worker-1 = %s", u)
	}
}

func TestHealthCheckErrors(t *testing.T) {
	tests := []struct {
		name, src, summary string
		line, col          int
	}{
		{"empty", `pool "p" {
  health_check "x" {}
}`, "Empty health_check", 2, 3},
		{"only a timeout", `pool "p" {
  health_check "x" { timeout = "1m" }
}`, "Empty health_check", 2, 3},
		{"both", `pool "p" {
  health_check "x" {
    http_get = "http://${node.address}/"
    command  = ["/bin/true"]
  }
}`, "Conflicting health_check", 4, 5},
		{"both, command first", `pool "p" {
  health_check "x" {
    command  = ["/bin/true"]
    http_get = "http://${node.address}/"
  }
}`, "Conflicting health_check", 4, 5},
		{"relative program", `pool "p" {
  health_check "x" { command = ["/bin/sh", "-c", "true"] }
  health_check "y" { command = ["systemctl", "is-active", "kubelet"] }
}`, "Invalid command", 3, 33},
		{"empty command", `pool "p" {
  health_check "x" { command = [] }
}`, "Invalid command", 2, 32},
		{"command not a list", `pool "p" {
  health_check "x" { command = "/usr/bin/systemctl is-active kubelet" }
}`, "Invalid command", 2, 32},
		{"NUL in an argument", `pool "p" {
  health_check "x" { command = ["/bin/echo", "a\u0000b"] }
}`, "Invalid command", 2, 46},
		{"command timeout too long", `pool "p" {
  health_check "x" {
    command = ["/bin/true"]
    timeout = "48h"
  }
}`, "Invalid timeout", 4, 15},
		{"not a URL", `pool "p" {
  health_check "x" { http_get = "localhost/healthz" }
}`, "Invalid http_get", 2, 33},
		{"function on node", `pool "p" {
  health_check "x" { http_get = "http://${upper(node.name)}/" }
}`, "Invalid http_get", 2, 33},
		{"bad timeout", `pool "p" {
  health_check "x" {
    http_get = "http://${node.address}/"
    timeout  = "soon"
  }
}`, "Invalid timeout", 4, 16},
		{"duplicate", `pool "p" {
  health_check "x" { http_get = "http://a/" }
  health_check "x" { http_get = "http://b/" }
}`, "Duplicate health_check", 3, 16},
		{"unknown object", `pool "p" {
  health_check "x" { http_get = "http://${nodes.name}/" }
}`, "Unknown variable", 2, 43},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := diagAt(t, localProvider, tt.src, tt.summary, tt.line, tt.col)
			if strings.HasPrefix(tt.name, "both") && !strings.Contains(d.Detail, "give one") {
				t.Errorf("the conflict does not say what to do: %s", d.Detail)
			}
		})
	}
}

// localProvider is base.hcl of the diagnostic tests: a local provider.
const localProvider = "provider \"local\" { fleet = \"f\" }\n"
