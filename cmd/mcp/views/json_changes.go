package views

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mcpfleet/mcp/planner"
)

// itemMeta is mcp's detail of a file, unit, kernel-arguments or OS-image change: which
// move of the pool it belongs to and which nodes make it (none: the pool's boot config).
type itemMeta struct {
	Pool        string   `json:"pool"`
	From        string   `json:"from"`
	To          string   `json:"to"`
	FromUnknown bool     `json:"from_unknown,omitempty"`
	Nodes       []string `json:"nodes"`
}

// The resource types of a pool's items in plan JSON.
var itemTypes = map[planner.ItemKind]string{planner.ItemFile: "mcp_file", planner.ItemUnit: "mcp_unit",
	planner.ItemKernelArgs: "mcp_kernel_args", planner.ItemOSImage: "mcp_os_image",
	planner.ItemDirectory: "mcp_directory", planner.ItemLink: "mcp_link", planner.ItemFirstBoot: "mcp_first_boot"}

// itemChanges are the plan's pools' file, unit, kernel-argument and OS-image changes as
// Terraform resource changes: change.before/after the item's attributes (a file's content
// as text, or null when it cannot be shown: see content_hidden), before_sensitive and
// after_sensitive as Terraform marks sensitive attributes. A pool's changes from the config
// its boot pointer had (or its only one) have plain addresses — file.POOL["PATH"],
// unit.POOL["NAME"], kernel_args.POOL, os_image.POOL —; changes from any other config the
// pool's nodes run say it in their index ("PATH from CONFIG"), so that every address is
// one resource.
func itemChanges(p *planner.Rollout) []resourceChange {
	var out []resourceChange
	for _, pp := range p.Pools {
		main := mainChange(pp)
		for k, ch := range pp.Changes {
			meta := &itemMeta{Pool: pp.Name, From: ch.From, To: ch.To, FromUnknown: ch.FromUnknown, Nodes: nonNil(ch.Nodes)}
			for _, it := range ch.Items {
				rc := resourceChange{Address: string(it.Kind) + "." + pp.Name, Mode: "managed", Type: itemTypes[it.Kind],
					Name: pp.Name, MCP: meta}
				index := itemIndex(it.Name, ch, pp, k == main)
				if index != "" {
					rc.Index = index
					rc.Address += fmt.Sprintf("[%q]", index)
				}
				before, bs := itemValue(it, it.Before)
				after, as := itemValue(it, it.After)
				rc.Change = change{Actions: []string{string(it.Action)}, Before: before, After: after,
					BeforeSensitive: bs, AfterSensitive: as}
				out = append(out, rc)
			}
		}
	}
	return out
}

// itemIndex is the index of an item's resource in change ch of pool pp: the item's name
// in the main change; "NAME from CONFIG" in another from the pool's config; and "NAME
// [from CONFIG ]to VARIANT" in a move to a variant for chosen nodes (each pool's moves
// are distinct pairs of configs, so each address is one resource).
func itemIndex(name string, ch planner.Change, pp planner.PoolPlan, main bool) string {
	var parts []string
	if name != "" {
		parts = append(parts, name)
	}
	switch {
	case ch.To != pp.Rendered && ch.From != "":
		parts = append(parts, "from "+ch.From, "to "+ch.To)
	case ch.To != pp.Rendered:
		parts = append(parts, "to "+ch.To)
	case !main:
		parts = append(parts, "from "+ch.From)
	}
	return strings.Join(parts, " ")
}

// mainChange is the index of the pool's change from its boot pointer's config, else 0.
func mainChange(pp planner.PoolPlan) int {
	for k, ch := range pp.Changes {
		if ch.From == pp.Previous && ch.To == pp.Rendered {
			return k
		}
	}
	return 0
}

// itemValue is an item's attributes, and its sensitive map (false when absent, as
// Terraform's before_sensitive of a created resource).
func itemValue(ic planner.ItemChange, it *planner.Item) (any, any) {
	if it == nil {
		return nil, false
	}
	sens := map[string]any{}
	v := map[string]any{}
	switch ic.Kind {
	case planner.ItemFile:
		v["path"], v["mode"], v["user"], v["group"] = ic.Name, fmt.Sprintf("%04o", it.Mode), it.User, it.Group
		contentAttrs(v, it.Content)
		if it.Sensitive || it.Content != nil && it.Content.Hidden == planner.HiddenSensitive {
			sens["content"] = true
		}
	case planner.ItemUnit:
		v["name"], v["mask"], v["enabled"] = ic.Name, it.Mask, it.Enabled
		contentAttrs(v, it.Content)
		dropins := map[string]any{}
		for _, n := range slices.Sorted(maps.Keys(it.Dropins)) {
			d := map[string]any{}
			contentAttrs(d, it.Dropins[n])
			dropins[n] = d
		}
		v["dropins"] = dropins
	case planner.ItemKernelArgs:
		v["kernel_args"] = nonNil(it.KernelArgs)
	case planner.ItemOSImage:
		v["os_image"] = it.OSImage
		if len(it.Running) > 0 { // a first os_image's before: what the nodes run now
			running := make([]map[string]any, len(it.Running))
			for i, r := range it.Running {
				running[i] = map[string]any{"os_image": r.OSImage, "nodes": r.Nodes}
			}
			v["running"] = running
			if it.Unreported > 0 {
				v["unreported"] = it.Unreported
			}
		}
	case planner.ItemDirectory:
		v["path"], v["mode"], v["user"], v["group"] = ic.Name, fmt.Sprintf("%04o", it.Mode), it.User, it.Group
	case planner.ItemLink:
		v["path"], v["target"], v["hard"], v["user"], v["group"] = ic.Name, it.Target, it.Hard, it.User, it.Group
	case planner.ItemFirstBoot:
		contentAttrs(v, it.Content)
	}
	return v, sens
}

// contentAttrs sets content (the text, or null when it is not shown), content_hidden (why
// not: sensitive, binary, large), content_size and content_sha256 (not for sensitive
// content).
func contentAttrs(v map[string]any, c *planner.Content) {
	v["content"] = nil
	if c == nil {
		return
	}
	if c.Hidden == "" {
		v["content"] = c.Text
	} else {
		v["content_hidden"] = c.Hidden
	}
	if c.Hidden != planner.HiddenSensitive {
		v["content_size"], v["content_sha256"] = c.Size, c.SHA256
	}
}
