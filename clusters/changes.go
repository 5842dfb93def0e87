package clusters

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/mcpfleet/mcp/planner"
)

// Part is what grouping the changes across clusters needs of one cluster's plan.
type Part struct {
	Cluster string
	Rollout *planner.Rollout
	// Overrides are the places ("FILE:LINE,COL") of the cluster's own variable values, by
	// variable (model.Cluster.Values).
	Overrides map[string]string
	// Reach are the variables each item (a file's path, a unit's name) uses
	// (model.Desired.Reach).
	Reach map[string][]string
}

// PartOf is p's Part; ok is false for a cluster without a plan.
func PartOf(p Planned) (Part, bool) {
	if p.Plan == nil {
		return Part{}, false
	}
	part := Part{Cluster: p.Cluster.Name, Rollout: p.Plan.File.Rollout, Overrides: map[string]string{}}
	for name, r := range p.Cluster.Values {
		// Relative to the configuration's directory, as the files are named there.
		if rel, err := filepath.Rel(p.Plan.File.ConfigDir, r.Filename); err == nil && filepath.IsAbs(r.Filename) && !strings.HasPrefix(rel, "..") {
			r.Filename = rel
		}
		part.Overrides[name] = r.String()
	}
	if p.Workspace != nil {
		part.Reach = p.Workspace.Desired.Reach
	}
	return part, true
}

// PoolChanges is one pool's change across the clusters whose plan changes it: shown once,
// then only what differs from cluster to cluster (docs/fleets.md). Display only.
type PoolChanges struct {
	Pool string `json:"pool"`
	// Configs are the pool's new rendered configs by content name, each with the clusters
	// that get it: identical rendered configs are one change, whatever the cluster.
	Configs []Config `json:"rendered_configs"`
	// Alike are the items ("file /etc/motd") the change sets alike in every such cluster.
	Alike []string `json:"alike"`
	// Differs are the items it does not set alike, cluster by cluster.
	Differs []Difference `json:"differs"`
}

// Config is one rendered config and the clusters whose pool gets it.
type Config struct {
	Rendered string   `json:"rendered"`
	Clusters []string `json:"clusters"`
}

// Difference is one item the change does not set alike in every cluster: the clusters
// grouped by what they get, each with its own values that reach the item.
type Difference struct {
	Item   string    `json:"item"`
	Groups []Variant `json:"variants"`
}

// Variant is what some clusters get of an item: Digest names it ("" when these clusters'
// change leaves the item as it is).
type Variant struct {
	Digest   string         `json:"digest,omitempty"`
	Clusters []ClusterValue `json:"clusters"`
}

// ClusterValue is one cluster of a Variant, with the overrides that reach the item.
type ClusterValue struct {
	Cluster   string     `json:"cluster"`
	Overrides []Override `json:"overrides"`
}

// Override is a cluster's own value of a variable that reaches an item, and its place.
type Override struct {
	Variable string `json:"variable"`
	At       string `json:"at"`
}

// Changes groups the changes of parts pool by pool (pools by name).
func Changes(parts []Part) []PoolChanges {
	byPool := map[string][]Part{}
	for _, part := range parts {
		for _, pp := range part.Rollout.Pools {
			if len(pp.Changes) > 0 {
				byPool[pp.Name] = append(byPool[pp.Name], part)
			}
		}
	}
	out := []PoolChanges{}
	for _, pool := range slices.Sorted(maps.Keys(byPool)) {
		out = append(out, poolChanges(pool, byPool[pool]))
	}
	return out
}

// poolChanges groups pool's change in parts, each of which changes it.
func poolChanges(pool string, parts []Part) PoolChanges {
	pc := PoolChanges{Pool: pool, Alike: []string{}, Differs: []Difference{}}
	items := make([]map[string]string, len(parts))
	keys := map[string]bool{}
	for i, part := range parts {
		pp := poolOf(part.Rollout, pool)
		pc.Configs = addConfig(pc.Configs, pp.Rendered, part.Cluster)
		items[i] = itemsOf(pp)
		for k := range items[i] {
			keys[k] = true
		}
	}
	for _, key := range slices.Sorted(maps.Keys(keys)) {
		byDigest := map[string][]int{}
		for i := range parts {
			byDigest[items[i][key]] = append(byDigest[items[i][key]], i)
		}
		if len(byDigest) == 1 {
			pc.Alike = append(pc.Alike, key)
			continue
		}
		d := Difference{Item: key}
		for digest, idx := range byDigest {
			v := Variant{Digest: digest}
			for _, i := range idx {
				v.Clusters = append(v.Clusters, ClusterValue{Cluster: parts[i].Cluster, Overrides: overrides(parts[i], key)})
			}
			d.Groups = append(d.Groups, v)
		}
		// In the parts' (stage) order, by each variant's first cluster.
		sort.Slice(d.Groups, func(a, b int) bool { return byDigest[d.Groups[a].Digest][0] < byDigest[d.Groups[b].Digest][0] })
		pc.Differs = append(pc.Differs, d)
	}
	return pc
}

func addConfig(cs []Config, rendered, cluster string) []Config {
	for i := range cs {
		if cs[i].Rendered == rendered {
			cs[i].Clusters = append(cs[i].Clusters, cluster)
			return cs
		}
	}
	return append(cs, Config{Rendered: rendered, Clusters: []string{cluster}})
}

func poolOf(r *planner.Rollout, pool string) planner.PoolPlan {
	for _, pp := range r.Pools {
		if pp.Name == pool {
			return pp
		}
	}
	return planner.PoolPlan{}
}

// itemsOf names what a pool's change makes of each item ("file /etc/motd"): a digest of
// the item as the change leaves it ("removed" when it removes it).
func itemsOf(pp planner.PoolPlan) map[string]string {
	out := map[string]string{}
	for _, ch := range pp.Changes {
		if ch.To != pp.Rendered {
			continue // a variant for chosen nodes: their own, not the pool's across clusters
		}
		for _, it := range ch.Items {
			key := string(it.Kind)
			if it.Name != "" {
				key += " " + it.Name
			}
			if it.After == nil {
				out[key] = "removed"
				continue
			}
			b, _ := json.Marshal(it.After)
			sum := sha256.Sum256(b)
			out[key] = hex.EncodeToString(sum[:6])
		}
	}
	return out
}

// overrides are part's own values of the variables that reach the item key.
func overrides(part Part, key string) []Override {
	out := []Override{}
	name := key
	if _, n, ok := strings.Cut(key, " "); ok {
		name = n
	}
	for _, v := range part.Reach[name] {
		if at, ok := part.Overrides[v]; ok {
			out = append(out, Override{Variable: v, At: at})
		}
	}
	return out
}
