package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mcpfleet/mcp/internal/hclpos"
	"github.com/mcpfleet/mcp/internal/macaddr"
	"github.com/mcpfleet/mcp/model"
)

// configTarget reads a config's nodes and node_selector: the chosen nodes of its pools it
// applies to (docs/configuration.md, "Configs for chosen nodes").
func (l *loader) configTarget(attrs hcl.Attributes, c *model.Config) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if a := attrs["nodes"]; a != nil {
		names, d := l.strList(a)
		diags = append(diags, d...)
		c.NodesRange = hclpos.From(a.Expr.Range())
		if len(names) == 0 && !d.HasErrors() {
			diags = append(diags, errAt(a.Expr.Range(), "Empty nodes",
				fmt.Sprintf("Config %q: nodes names the nodes of its pools it applies to; leave it out to apply to every node.", c.Name)))
		}
		seen := map[string]bool{}
		for i, n := range names {
			if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
				diags = append(diags, errAt(elementRange(a, i), "Invalid node name",
					fmt.Sprintf("Config %q names node %q: %s. A node name is a DNS-1123 subdomain, such as \"worker-3\".", c.Name, n, strings.Join(errs, "; "))))
			} else if seen[n] {
				diags = append(diags, errAt(elementRange(a, i), "Duplicate node name", fmt.Sprintf("Config %q names node %q twice.", c.Name, n)))
			}
			seen[n] = true
		}
		c.Nodes = names
	}
	if a := attrs["node_selector"]; a != nil {
		sel, d := l.kubeLabels(a)
		diags = append(diags, d...)
		c.NodeSelectorRange = hclpos.From(a.Expr.Range())
		if len(sel) == 0 && !d.HasErrors() {
			diags = append(diags, errAt(a.Expr.Range(), "Empty node_selector",
				fmt.Sprintf("Config %q: an empty node_selector would select every node; leave it out to apply to every node of its pools.", c.Name)))
		}
		c.NodeSelector = sel
	}
	if a := attrs["os_image"]; a != nil && c.Targeted() {
		diags = append(diags, errAt(a.NameRange, "OS image per pool",
			fmt.Sprintf("Config %q targets chosen nodes (nodes, node_selector) and sets os_image: a pool's OS image and boot image are the pool's "+
				"(its boot image follows them), so set os_image in a config of the whole pool.", c.Name)))
	}
	return diags
}

var machineSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "pool", Required: true},
	{Name: "mac"}, {Name: "uuid"}, {Name: "hostname"}, {Name: "labels"}}}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// machines reads the machine blocks: machines the boot server tells apart at first boot
// by Matchbox's selectors (mac, uuid, hostname) and gives the configs for their node name
// and labels. Two machines of a pool one selector value fits would make the answer
// ambiguous: refused.
func (l *loader) machines(blocks hcl.Blocks) hcl.Diagnostics {
	var diags hcl.Diagnostics
	names := newLabels("machine")
	claimed := map[string]hcl.Range{} // pool + selector value → the first machine's block
	for _, b := range blocks {
		if d := names.declare(b); d != nil {
			diags = append(diags, d)
			continue
		}
		m := model.Machine{Name: b.Labels[0], DeclRange: hclpos.From(b.DefRange)}
		if errs := validation.IsDNS1123Subdomain(m.Name); len(errs) > 0 {
			diags = append(diags, errAt(b.LabelRanges[0], "Invalid machine name",
				fmt.Sprintf("Machine %q: %s. A machine is named by the node name it will have (a DNS-1123 subdomain).", m.Name, strings.Join(errs, "; "))))
		}
		_, d := readAttrs(b.Body, machineSchema, func(a *hcl.Attribute) hcl.Diagnostics { return l.machineAttr(a, &m) })
		diags = append(diags, d...)
		if len(m.MACs) == 0 && m.UUID == "" && m.Hostname == "" && !d.HasErrors() {
			diags = append(diags, errAt(b.DefRange, "Machine without selectors",
				fmt.Sprintf("Machine %q needs mac, uuid or hostname: what the boot server tells it apart by at first boot.", m.Name)))
		}
		for _, sel := range machineSelectors(&m) {
			key := m.Pool + "\x00" + sel
			if prev, ok := claimed[key]; ok {
				diags = append(diags, errAt(b.DefRange, "Ambiguous machine selector",
					fmt.Sprintf("Machine %q has %s, as the machine at %s of pool %q has: the boot server could not tell them apart.", m.Name, sel, posOf(prev), m.Pool)))
			} else {
				claimed[key] = b.DefRange
			}
		}
		l.d.Machines = append(l.d.Machines, m)
	}
	slices.SortFunc(l.d.Machines, func(a, b model.Machine) int { return strings.Compare(a.Name, b.Name) })
	return diags
}

func machineSelectors(m *model.Machine) []string {
	var out []string
	for _, mac := range m.MACs {
		out = append(out, "mac "+mac)
	}
	if m.UUID != "" {
		out = append(out, "uuid "+m.UUID)
	}
	if m.Hostname != "" {
		out = append(out, "hostname "+m.Hostname)
	}
	return out
}

// machineAttr reads one attribute of machine m.
func (l *loader) machineAttr(a *hcl.Attribute, m *model.Machine) (d hcl.Diagnostics) {
	switch a.Name {
	case "pool":
		m.Pool, d = l.str(a)
		if !d.HasErrors() && l.d.Pool(m.Pool) == nil {
			d = append(d, errAt(a.Expr.Range(), "Unknown pool",
				fmt.Sprintf("Machine %q names pool %q, which no pool block declares.%s", m.Name, m.Pool, didYouMean(m.Pool, l.poolNames()))))
		}
	case "mac":
		var macs []string
		macs, d = l.strList(a)
		for i, s := range macs {
			mac, ok := macaddr.Normal(s)
			if !ok {
				d = append(d, errAt(elementRange(a, i), "Invalid MAC address",
					fmt.Sprintf("Machine %q: %q is not a MAC address such as \"52:54:00:12:34:56\" (or with hyphens).", m.Name, s)))
				continue
			}
			m.MACs = append(m.MACs, mac)
		}
	case "uuid":
		m.UUID, d = l.str(a)
		m.UUID = strings.ToLower(m.UUID)
		if !d.HasErrors() && !uuidRE.MatchString(m.UUID) {
			d = append(d, errAt(a.Expr.Range(), "Invalid UUID",
				fmt.Sprintf("Machine %q: uuid %q is not a SMBIOS UUID such as \"4c4c4544-0042-3510-8054-b4c04f384d32\".", m.Name, m.UUID)))
		}
	case "hostname":
		m.Hostname, d = l.str(a)
		if errs := validation.IsDNS1123Subdomain(m.Hostname); !d.HasErrors() && len(errs) > 0 {
			d = append(d, errAt(a.Expr.Range(), "Invalid hostname", fmt.Sprintf("Machine %q: hostname %q: %s.", m.Name, m.Hostname, strings.Join(errs, "; "))))
		}
	case "labels":
		m.Labels, d = l.kubeLabels(a)
	}
	return d
}
