package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mcpfleet/mcp/model"
)

func TestAlertGate(t *testing.T) {
	for _, tt := range []struct {
		body string
		want *model.AlertGate
	}{
		{``, nil},
		{`alert_gate { prometheus_url = "http://prometheus:9090" }`,
			&model.AlertGate{PrometheusURL: "http://prometheus:9090", Timeout: model.DefaultAlertGateTimeout}},
		{`alert_gate {
    prometheus_url = "https://mon.example/prometheus/"
    ignore         = ["^Watchdog$", "^InfoInhibitor$"]
    match_labels   = { severity = "critical", team = "nodes" }
    timeout        = "0s"
  }`, &model.AlertGate{PrometheusURL: "https://mon.example/prometheus/", Ignore: []string{"^Watchdog$", "^InfoInhibitor$"},
			MatchLabels: map[string]string{"severity": "critical", "team": "nodes"}, Timeout: 0}},
		{`alert_gate {
    prometheus_url = "http://p:9090"
    match_labels   = {}
    timeout        = "90s"
  }`, &model.AlertGate{PrometheusURL: "http://p:9090", Timeout: 90 * time.Second}},
	} {
		dir := t.TempDir()
		write(t, dir, "main.hcl", "provider \"local\" { fleet = \"f\" }\npool \"worker\" {\n  "+tt.body+"\n}\n")
		res, diags := Load(dir, Options{Schemas: testSchemas})
		if diags.HasErrors() {
			t.Fatalf("%s: %v", tt.body, diags)
		}
		if d := cmp.Diff(tt.want, res.Desired.Pool("worker").AlertGate, cmpopts.IgnoreFields(model.AlertGate{}, "DeclRange")); d != "" {
			t.Errorf("%s: gate (-want +got):\n%s", tt.body, d)
		}
	}
}

func TestAlertGateErrors(t *testing.T) {
	tests := []struct {
		name, src, summary string
		line, col          int
	}{
		{"no URL", `pool "p" {
  alert_gate { timeout = "1m" }
}`, "Missing required argument", 2, 16},
		{"not http", `pool "p" {
  alert_gate { prometheus_url = "prometheus:9090" }
}`, "Invalid prometheus_url", 2, 33},
		{"a query", `pool "p" {
  alert_gate { prometheus_url = "http://p:9090/?x=1" }
}`, "Invalid prometheus_url", 2, 33},
		{"bad regexp", `pool "p" {
  alert_gate {
    prometheus_url = "http://p:9090"
    ignore         = ["^Watchdog$", "^(Info"]
  }
}`, "Invalid regular expression", 4, 37},
		{"bad label name", `pool "p" {
  alert_gate {
    prometheus_url = "http://p:9090"
    match_labels   = { "team-name" = "nodes" }
  }
}`, "Invalid label name", 4, 38},
		{"negative timeout", `pool "p" {
  alert_gate {
    prometheus_url = "http://p:9090"
    timeout        = "-1m"
  }
}`, "Invalid timeout", 4, 22},
		{"timeout not a duration", `pool "p" {
  alert_gate {
    prometheus_url = "http://p:9090"
    timeout        = "ten minutes"
  }
}`, "Invalid timeout", 4, 22},
		{"duplicate", `pool "p" {
  alert_gate { prometheus_url = "http://a:9090" }
  alert_gate { prometheus_url = "http://b:9090" }
}`, "Duplicate alert_gate block", 3, 3},
		{"unknown attribute", `pool "p" {
  alert_gate {
    prometheus_url = "http://p:9090"
    alert_filter_regexp = "Watchdog"
  }
}`, "Unsupported argument", 4, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diagAt(t, localProvider, tt.src, tt.summary, tt.line, tt.col)
		})
	}
}
