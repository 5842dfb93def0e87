package config

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpfleet/mcp/internal/hclpos"
	"github.com/mcpfleet/mcp/model"
)

var healthCheckSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "http_get"}, {Name: "command"}, {Name: "timeout"}},
}

// healthCheck reads a pool's health_check "NAME" block. Its http_get may use node.name and
// node.address, which stay in the URL as placeholders filled in per node at apply time
// (as Terraform's self in a provisioner, which is known only then).
func (l *loader) healthCheck(b *hcl.Block) (model.HealthCheck, hcl.Diagnostics) {
	h := model.HealthCheck{Name: b.Labels[0], Timeout: model.DefaultHealthCheckTimeout, DeclRange: hclpos.From(b.LabelRanges[0])}
	content, diags := b.Body.Content(healthCheckSchema)
	if a := content.Attributes["command"]; a != nil {
		// Running a command needs it carried to the node's agent and its output back: the
		// agent protocol has no such message yet. Refused rather than accepted and ignored.
		diags = append(diags, errAt(a.NameRange, "health_check command is not supported yet",
			fmt.Sprintf("health_check %q: a command run by the node's agent is not supported yet; use http_get = \"http://${node.address}:PORT/PATH\" instead.", h.Name)))
	}
	if a := content.Attributes["timeout"]; a != nil {
		d, dd := l.duration(a)
		diags = append(diags, dd...)
		if d > 0 {
			h.Timeout = d
		}
	}
	a := content.Attributes["http_get"]
	if a == nil {
		if content.Attributes["command"] == nil {
			diags = append(diags, errAt(b.DefRange, "Empty health_check",
				fmt.Sprintf("health_check %q checks nothing: give http_get = \"URL\".", h.Name)))
		}
		return h, diags
	}
	u, d := l.healthURL(a)
	diags = append(diags, d...)
	h.HTTPGet = u
	return h, diags
}

// nodeObject is what node.name and node.address evaluate to while the configuration loads:
// the placeholders model.HealthCheck.URLFor replaces.
var nodeObject = cty.ObjectVal(map[string]cty.Value{
	"name": cty.StringVal(model.NodeNameVar), "address": cty.StringVal(model.NodeAddressVar)})

// healthURL evaluates http_get with node in scope and checks that it is an http(s) URL
// once the node's name and address are put in.
func (l *loader) healthURL(a *hcl.Attribute) (string, hcl.Diagnostics) {
	ctx := l.ctx.NewChild()
	ctx.Variables = map[string]cty.Value{"node": nodeObject}
	v, diags := a.Expr.Value(ctx)
	if diags.HasErrors() {
		return "", diags
	}
	if d := checkWhole(v, a); d != nil {
		return "", append(diags, d)
	}
	if v.Type() != cty.String {
		return "", append(diags, errAt(a.Expr.Range(), "Invalid http_get", "http_get must be a URL string."))
	}
	s := v.AsString()
	filled := strings.NewReplacer(model.NodeNameVar, "node-0", model.NodeAddressVar, "192.0.2.1").Replace(s)
	if strings.Contains(filled, "${") {
		return "", append(diags, errAt(a.Expr.Range(), "Invalid http_get",
			fmt.Sprintf("http_get %q: node.name and node.address can only be put into the URL as they are (no function applied to them).", s)))
	}
	p, err := url.Parse(filled)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return "", append(diags, errAt(a.Expr.Range(), "Invalid http_get",
			fmt.Sprintf("http_get %q must be an http:// or https:// URL with a host, such as \"http://${node.address}:10256/healthz\".", s)))
	}
	return s, diags
}
