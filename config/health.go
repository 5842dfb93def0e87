package config

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpfleet/mcp/internal/hclpos"
	"github.com/mcpfleet/mcp/model"
)

var healthCheckSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "http_get"}, {Name: "command"}, {Name: "timeout"}},
}

// healthCheck reads a pool's health_check "NAME" block: exactly one of http_get, asked from
// the machine that runs apply, and command, run on the node. Its http_get may use node.name
// and node.address, which stay in the URL as placeholders filled in per node at apply time
// (as Terraform's self in a provisioner, which is known only then).
func (l *loader) healthCheck(b *hcl.Block) (model.HealthCheck, hcl.Diagnostics) {
	h := model.HealthCheck{Name: b.Labels[0], Timeout: model.DefaultHealthCheckTimeout, DeclRange: hclpos.From(b.LabelRanges[0])}
	content, diags := b.Body.Content(healthCheckSchema)
	if a := content.Attributes["timeout"]; a != nil {
		d, dd := l.duration(a)
		diags = append(diags, dd...)
		if d > 0 {
			h.Timeout = d
		}
	}
	get, cmd := content.Attributes["http_get"], content.Attributes["command"]
	switch {
	case get != nil && cmd != nil:
		first, second := get, cmd
		if cmd.Range.Start.Byte < get.Range.Start.Byte {
			first, second = cmd, get
		}
		diags = append(diags, errAt(second.NameRange, "Conflicting health_check",
			fmt.Sprintf("health_check %q has both http_get and command (%s at %s): a check is either asked over HTTP from the machine that runs apply or run on the node; give one, and another health_check block for the other.",
				h.Name, first.Name, posOf(first.NameRange))))
	case get == nil && cmd == nil:
		diags = append(diags, errAt(b.DefRange, "Empty health_check",
			fmt.Sprintf("health_check %q checks nothing: give http_get = \"URL\" or command = [\"/usr/bin/PROGRAM\", ARGS...].", h.Name)))
	case cmd != nil:
		c, d := l.healthCommand(cmd)
		diags = append(diags, d...)
		h.Command = c
		if a := content.Attributes["timeout"]; a != nil && h.Timeout > model.MaxCommandCheckTimeout {
			diags = append(diags, errAt(a.Expr.Range(), "Invalid timeout",
				fmt.Sprintf("A command check's timeout is at most %s (it bounds a run of the command on the node).", model.MaxCommandCheckTimeout)))
		}
	default:
		u, d := l.healthURL(get)
		diags = append(diags, d...)
		h.HTTPGet = u
	}
	return h, diags
}

// healthCommand reads command: an argv run without a shell, so its program is an absolute
// path (there is no PATH search to trust).
func (l *loader) healthCommand(a *hcl.Attribute) ([]string, hcl.Diagnostics) {
	argv, diags := l.strList(a)
	if diags.HasErrors() {
		return nil, diags
	}
	if len(argv) == 0 {
		return nil, append(diags, errAt(a.Expr.Range(), "Invalid command",
			"command lists the program and its arguments, such as [\"/usr/bin/systemctl\", \"is-active\", \"kubelet\"]; it is empty."))
	}
	if !path.IsAbs(argv[0]) {
		return nil, append(diags, errAt(elementRange(a, 0), "Invalid command",
			fmt.Sprintf("command's program %q must be an absolute path, such as \"/usr/bin/%s\": it runs without a shell or a search of PATH (for a shell, give [\"/bin/sh\", \"-c\", \"...\"]).", argv[0], path.Base(argv[0]))))
	}
	for i, arg := range argv {
		if strings.ContainsRune(arg, 0) {
			return nil, append(diags, errAt(elementRange(a, i), "Invalid command", "A command argument cannot hold a NUL character."))
		}
	}
	return argv, diags
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
