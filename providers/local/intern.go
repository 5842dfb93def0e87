package local

import "github.com/mcpfleet/mcp/model"

// interner keeps one copy of the strings that repeat from node to node — label keys and
// their common values, zones, images, configs, states — so that a refreshed fleet of
// 100,000 nodes holds each once rather than once per node (a fifth of its memory).
// Strings unique to a node (its name, boot id) are not kept in it.
type interner map[string]string

// maxInterned bounds the table: past it, strings are kept as they come.
const maxInterned = 4096

func (in interner) s(v string) string {
	if w, ok := in[v]; ok {
		return w
	}
	if len(in) < maxInterned {
		in[v] = v
	}
	return v
}

// node replaces n's repeating strings by their kept copies. The labels are copied into a
// map with kept keys (a map's keys cannot be replaced in place); a label whose value is
// the node's name (kubernetes.io/hostname) shares the name.
func (in interner) node(n *model.Node) {
	n.Zone, n.CurrentConfig, n.DesiredConfig = in.s(n.Zone), in.s(n.CurrentConfig), in.s(n.DesiredConfig)
	n.OSImage, n.BootImage, n.State = in.s(n.OSImage), in.s(n.BootImage), in.s(n.State)
	for i, a := range n.KernelArgs {
		n.KernelArgs[i] = in.s(a)
	}
	if len(n.Labels) > 0 {
		labels := make(map[string]string, len(n.Labels))
		for k, v := range n.Labels {
			if v == n.Name {
				v = n.Name
			} else {
				v = in.s(v)
			}
			labels[in.s(k)] = v
		}
		n.Labels = labels
	}
}
