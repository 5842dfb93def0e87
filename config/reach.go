package config

import (
	"slices"

	"github.com/hashicorp/hcl/v2"
)

// reach notes the variables attrs use as reaching item — a file's, directory's or link's
// path, or a unit's name — in Desired.Reach: a plan across clusters names the cluster
// values that made an item differ from cluster to cluster with it (docs/fleets.md). It
// follows var.NAME written in the item's own attributes, as the tracking of sensitive
// variables does (varsIn), not a variable reaching through a local.
func (l *loader) reach(item string, attrs hcl.Attributes) {
	for _, a := range attrs {
		for name := range varsIn(a.Expr) {
			if l.d.Reach == nil {
				l.d.Reach = map[string][]string{}
			}
			if !slices.Contains(l.d.Reach[item], name) {
				l.d.Reach[item] = append(l.d.Reach[item], name)
				slices.Sort(l.d.Reach[item])
			}
		}
	}
}
