package config

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpfleet/mcp/internal/hclpos"
	"github.com/mcpfleet/mcp/model"
)

var alertGateSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "prometheus_url", Required: true},
	{Name: "ignore"}, {Name: "match_labels"}, {Name: "timeout"}}}

// labelName is Prometheus' label name syntax: a match_labels key outside it could never
// match, so the gate would silently count nothing.
var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// alertGate reads `alert_gate { prometheus_url, ignore, match_labels, timeout }`
// (docs/configuration.md, "Alert gate").
func (l *loader) alertGate(b *hcl.Block) (*model.AlertGate, hcl.Diagnostics) {
	g := &model.AlertGate{Timeout: model.DefaultAlertGateTimeout, DeclRange: hclpos.From(b.DefRange)}
	content, diags := b.Body.Content(alertGateSchema)
	if a := content.Attributes["prometheus_url"]; a != nil {
		s, d := l.str(a)
		diags = append(diags, d...)
		if !d.HasErrors() {
			if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
				diags = append(diags, errAt(a.Expr.Range(), "Invalid prometheus_url",
					fmt.Sprintf("prometheus_url %q must be the Prometheus server's http:// or https:// base URL, such as \"http://prometheus:9090\" (apply asks its /api/v1/alerts).", s)))
			}
			g.PrometheusURL = s
		}
	}
	if a := content.Attributes["ignore"]; a != nil {
		res, d := l.strList(a)
		diags = append(diags, d...)
		for i, s := range res {
			if _, err := regexp.Compile(s); err != nil {
				diags = append(diags, errAt(elementRange(a, i), "Invalid regular expression",
					fmt.Sprintf("ignore[%d] %q: %v. Each is an RE2 regular expression matched against an alert's name (unanchored: \"^Watchdog$\" for that name alone).", i, s, err)))
			}
		}
		g.Ignore = res
	}
	if a := content.Attributes["match_labels"]; a != nil {
		m, d := l.strMap(a)
		diags = append(diags, d...)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if !labelName.MatchString(k) {
				diags = append(diags, errAt(exprAt(a.Expr, cty.GetAttrPath(k)), "Invalid label name",
					fmt.Sprintf("match_labels key %q is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*): no alert could carry it.", k)))
			}
		}
		if len(m) > 0 {
			g.MatchLabels = m
		}
	}
	if a := content.Attributes["timeout"]; a != nil {
		s, d := l.str(a)
		diags = append(diags, d...)
		if !d.HasErrors() {
			// 0 is allowed, unlike the other durations: look once, wait for nothing.
			t, err := time.ParseDuration(s)
			if err != nil || t < 0 {
				diags = append(diags, errAt(a.Expr.Range(), "Invalid timeout",
					fmt.Sprintf("timeout must be a duration, 0 or more, such as \"10m\" (\"0s\": look once, do not wait); got %q.", s)))
			} else {
				g.Timeout = t
			}
		}
	}
	return g, diags
}
