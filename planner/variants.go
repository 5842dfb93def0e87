package planner

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/mcpfleet/mcp/model"
)

// A config may target chosen nodes of its pools (nodes, node_selector): each pool then has
// a variant of its rendered config per distinct set of targeted configs that apply to
// some of its nodes or machines, and each such node's target is its variant. Variants
// are rendered when the nodes are known (at refresh), once per pool and set.

// Chosen is the names, sorted, of the targeted configs of pool that apply to a node (or
// machine) named name with labels; none: the node gets the pool's own config.
func Chosen(d *model.Desired, pool, name string, labels map[string]string) []string {
	var out []string
	for i := range d.Configs {
		if c := &d.Configs[i]; c.Targeted() && c.AppliesTo(pool, name, labels) {
			out = append(out, c.Name)
		}
	}
	return out // d.Configs is sorted by name
}

// Variants renders the variants of d's pools, each once. Safe for concurrent use.
type Variants struct {
	d    *model.Desired
	ign  Ignition
	mu   sync.Mutex
	memo map[string]variant // pool + "\x00" + chosen joined by "\x00"
}

type variant struct {
	r   *model.Rendered
	err error
}

// NewVariants renders d's variants with ign.
func NewVariants(d *model.Desired, ign Ignition) *Variants {
	return &Variants{d: d, ign: ign, memo: map[string]variant{}}
}

// Render is pool's variant with the targeted configs chosen (sorted, not empty): its
// configs of every node and those, merged in the usual order. An error names the configs
// and the problem, as the diagnostics would.
func (v *Variants) Render(pool string, chosen []string) (*model.Rendered, error) {
	key := pool + "\x00" + strings.Join(chosen, "\x00")
	v.mu.Lock()
	got, ok := v.memo[key]
	v.mu.Unlock()
	if ok {
		return got.r, got.err
	}
	p := v.d.Pool(pool)
	if p == nil {
		return nil, fmt.Errorf("no pool %q", pool)
	}
	version := cmp.Or(v.d.IgnitionVersion, DefaultIgnitionVersion)
	r, _, diags := renderPool(v.d, p, poolConfigs(v.d, pool, chosen), version, v.ign, relativeTo(v.d.Dir))
	got = variant{r: r}
	if diags.HasErrors() || r == nil {
		got = variant{err: fmt.Errorf("the config of pool %s with %s does not render: %s", pool, configsWord(chosen), firstError(v.d, diags))}
	}
	v.mu.Lock()
	v.memo[key] = got
	v.mu.Unlock()
	return got.r, got.err
}

// ForNodes is the variant of each node whose pool's targeted configs apply to it, by node
// name: absent, a node's target is its pool's config. A node no pool (or two) selects is
// left out (the plan reports it).
func (v *Variants) ForNodes(nodes []model.Node) (map[string]*model.Rendered, error) {
	if !hasTargeted(v.d) {
		return nil, nil
	}
	out := map[string]*model.Rendered{}
	for i := range nodes {
		n := &nodes[i]
		pool := poolOf(v.d.Pools, n.Labels)
		if pool == "" {
			continue
		}
		if chosen := Chosen(v.d, pool, n.Name, n.Labels); len(chosen) > 0 {
			r, err := v.Render(pool, chosen)
			if err != nil {
				return nil, fmt.Errorf("node %s: %w", n.Name, err)
			}
			out[n.Name] = r
		}
	}
	return out, nil
}

// ForMachines is the variant of each machine block the targeted configs of its pool
// apply to (by its name and labels), by machine: absent, it boots its pool's config.
func (v *Variants) ForMachines() (map[string]*model.Rendered, error) {
	out := map[string]*model.Rendered{}
	for _, m := range v.d.Machines {
		if chosen := Chosen(v.d, m.Pool, m.Name, m.Labels); len(chosen) > 0 {
			r, err := v.Render(m.Pool, chosen)
			if err != nil {
				return nil, fmt.Errorf("machine %s: %w", m.Name, err)
			}
			out[m.Name] = r
		}
	}
	return out, nil
}

// RenderTargeted renders, for each targeted config, each of its pools' variant with it
// alone: what it declares is checked when the configuration is (mcp validate), not only
// once a node it applies to turns up. Its diagnostics point at the config's own items.
func RenderTargeted(d *model.Desired, ign Ignition) model.Diagnostics {
	var diags model.Diagnostics
	version := cmp.Or(d.IgnitionVersion, DefaultIgnitionVersion)
	for i := range d.Configs {
		c := &d.Configs[i]
		if !c.Targeted() {
			continue
		}
		for _, pool := range c.Pools {
			if p := d.Pool(pool); p != nil {
				_, _, dg := renderPool(d, p, poolConfigs(d, pool, []string{c.Name}), version, ign, relativeTo(d.Dir))
				diags = appendOnce(diags, dg)
			}
		}
	}
	return diags
}

func hasTargeted(d *model.Desired) bool {
	return slices.ContainsFunc(d.Configs, func(c model.Config) bool { return c.Targeted() })
}

// poolOf is the one pool whose node_selector labels match; "" for none or two.
func poolOf(pools []model.Pool, labels map[string]string) string {
	owner := ""
	for _, p := range pools {
		if selects(p.NodeSelector, labels) {
			if owner != "" {
				return ""
			}
			owner = p.Name
		}
	}
	return owner
}

// place is r as diagnostics print it, its file relative to the configuration directory.
func place(d *model.Desired, r model.Range) string {
	if rel, err := filepath.Rel(d.Dir, r.Filename); d.Dir != "" && err == nil && filepath.IsLocal(rel) {
		r.Filename = rel
	}
	return r.String()
}

func configsWord(chosen []string) string {
	if len(chosen) == 1 {
		return "config " + chosen[0]
	}
	return "configs " + strings.Join(chosen, ", ")
}

// firstError is the first error of diags as one line, its place first when it has one.
func firstError(d *model.Desired, diags model.Diagnostics) string {
	for _, dg := range diags {
		if dg.Severity != model.DiagError {
			continue
		}
		if dg.Subject != nil {
			return place(d, *dg.Subject) + ": " + dg.Summary + ": " + dg.Detail
		}
		return dg.Summary + ": " + dg.Detail
	}
	return "no rendered config"
}

// VariantPlan is one variant of a pool's config in the plan: the targeted configs it adds
// to the pool's, and the nodes (and machine blocks, for first boot) it is the target of.
type VariantPlan struct {
	Rendered string   `json:"rendered"`
	Configs  []string `json:"configs"`
	Nodes    []string `json:"nodes,omitempty"`
	Machines []string `json:"machines,omitempty"`
}

// poolVariants lists pool p's variants (by rendered name, then the configs) with their
// nodes, and warns of each targeted name or selector of its configs no node nor machine
// of the pool matches: a typo must not silently do nothing.
func poolVariants(in Input, p *model.Pool, nodes []*model.Node) ([]VariantPlan, []string) {
	if !hasTargeted(in.Desired) {
		return nil, nil // the common case, at any fleet size: nothing to look at per node
	}
	byKey := map[string]*VariantPlan{}
	add := func(name string, labels map[string]string, machine bool) {
		chosen := Chosen(in.Desired, p.Name, name, labels)
		if len(chosen) == 0 {
			return
		}
		k := strings.Join(chosen, "\x00")
		vp := byKey[k]
		if vp == nil {
			vp = &VariantPlan{Configs: chosen}
			byKey[k] = vp
		}
		if machine {
			vp.Machines = append(vp.Machines, name)
			if r := in.MachineRendered[name]; r != nil {
				vp.Rendered = r.Name
			}
			return
		}
		vp.Nodes = append(vp.Nodes, name)
		if r := in.NodeRendered[name]; r != nil {
			vp.Rendered = r.Name
		}
	}
	for _, n := range nodes {
		add(n.Name, n.Labels, false)
	}
	var machines []model.Machine
	for _, m := range in.Desired.Machines {
		if m.Pool == p.Name {
			add(m.Name, m.Labels, true)
			machines = append(machines, m)
		}
	}
	var out []VariantPlan
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		out = append(out, *byKey[k])
	}
	return out, targetWarnings(in.Desired, p.Name, nodes, machines)
}

// targetWarnings warns of each name in a targeted config's nodes, and each node_selector,
// that no node nor machine of pool matches.
func targetWarnings(d *model.Desired, pool string, nodes []*model.Node, machines []model.Machine) []string {
	var out []string
	for _, c := range d.Configs {
		if !c.Targeted() || !slices.Contains(c.Pools, pool) {
			continue
		}
		for _, name := range c.Nodes {
			if !slices.ContainsFunc(nodes, func(n *model.Node) bool { return n.Name == name }) &&
				!slices.ContainsFunc(machines, func(m model.Machine) bool { return m.Name == name }) {
				out = append(out, fmt.Sprintf("config %s names node %q (%s), which is no node of pool %s nor a machine block of it: it applies to no node there",
					c.Name, name, place(d, c.NodesRange), pool))
			}
		}
		if len(c.NodeSelector) > 0 &&
			!slices.ContainsFunc(nodes, func(n *model.Node) bool { return model.SelectorMatches(c.NodeSelector, n.Labels) }) &&
			!slices.ContainsFunc(machines, func(m model.Machine) bool { return model.SelectorMatches(c.NodeSelector, m.Labels) }) {
			out = append(out, fmt.Sprintf("config %s's node_selector (%s) matches no node of pool %s nor a machine block of it: it applies to no node there",
				c.Name, place(d, c.NodeSelectorRange), pool))
		}
	}
	return out
}

// machineTargets is the config each machine block of pool boots, by machine: its variant,
// or the pool's config (target).
func machineTargets(in Input, pool string, target *model.Rendered) map[string]string {
	var out map[string]string
	for _, m := range in.Desired.Machines {
		if m.Pool != pool {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[m.Name] = target.Name
		if r := in.MachineRendered[m.Name]; r != nil {
			out[m.Name] = r.Name
		}
	}
	return out
}

// Named is the variant named name this Variants rendered, or nil: a node's current config
// known by its name alone (a state lost on a fleet that runs variants mcp made).
func (v *Variants) Named(name string) *model.Rendered {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, got := range v.memo {
		if got.r != nil && got.r.Name == name {
			return got.r
		}
	}
	return nil
}

// machinesMoved names the machines of pool whose pointer in the state differs from what
// apply would write (targets: each machine's config; the selectors from its block), and
// those the state keeps that the pool no longer declares, sorted.
func machinesMoved(in Input, pool string, targets map[string]string) []string {
	var out []string
	for name, old := range in.Machines {
		if _, ok := targets[name]; old.Pool == pool && !ok {
			out = append(out, name)
		}
	}
	for name, rendered := range targets {
		m := in.Desired.Machine(name)
		old, ok := in.Machines[name]
		if !ok || old.Pool != pool || old.Rendered != rendered || !slices.Equal(old.MACs, m.MACs) || old.UUID != m.UUID || old.Hostname != m.Hostname {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
