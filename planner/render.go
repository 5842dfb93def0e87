package planner

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpfleet/mcp/model"
)

// DefaultIgnitionVersion is the Ignition spec rendered configs are written in by default.
const DefaultIgnitionVersion = "3.4.0"

// Ignition is what render asks of the Ignition room (package ignition's Renderer): it is
// handed to Render so that the planner links no Ignition parser.
type Ignition interface {
	// RenderVersion refuses a spec version render may not write configs in.
	RenderVersion(version string) error
	// Render checks r's Ignition config with Ignition's parser of its spec and names r
	// when the parser takes it; the report's entries are at JSON paths of that config.
	Render(r *model.Rendered) ([]model.ReportEntry, error)
	// MergeFirstBoot merges first-boot parts in order, as Ignition merges configs, and
	// drops from their removed kernel arguments those the pool adds (kernelArgs).
	MergeFirstBoot(parts [][]byte, kernelArgs []string) ([]byte, error)
}

// Render merges, per pool, the configs that name it (in lexical order of config name, later
// wins) into a rendered config, and has the ignition room ign check its Ignition config
// with Ignition's own parser of the spec and name it. Problems become diagnostics pointing
// at the file or unit concerned.
func Render(d *model.Desired, ign Ignition) (map[string]*model.Rendered, model.Diagnostics) {
	var diags model.Diagnostics
	version := d.IgnitionVersion
	if version == "" {
		version = DefaultIgnitionVersion
	}
	if err := ign.RenderVersion(version); err != nil {
		return nil, model.Diagnostics{{Severity: model.DiagError, Summary: "Unsupported Ignition version", Detail: err.Error()}}
	}
	out := make(map[string]*model.Rendered, len(d.Pools))
	var overrides overrideSet
	rel := relativeTo(d.Dir)
	for i := range d.Pools {
		p := &d.Pools[i]
		r, ovs, rdiags := renderPool(d, p, poolConfigs(d, p.Name, nil), version, ign, rel)
		overrides.add(p.Name, ovs)
		diags = appendOnce(diags, rdiags)
		if r != nil {
			out[r.Pool] = r
			diags = append(diags, bootImageDiags(d, p, r.OSImage)...)
		}
	}
	if !diags.HasErrors() {
		diags = appendOnce(diags, RenderTargeted(d, ign))
	}
	return out, append(overrides.diags(), diags...)
}

// poolConfigs are the configs of pool in merge order that apply to its nodes with the
// targeted configs named in chosen (sorted) and no others: a pool's own config (chosen
// nil) has only the configs of all its nodes.
func poolConfigs(d *model.Desired, pool string, chosen []string) []model.Config {
	var out []model.Config
	for _, c := range d.Configs {
		if !slices.Contains(c.Pools, pool) {
			continue
		}
		if _, ok := slices.BinarySearch(chosen, c.Name); !c.Targeted() || ok {
			out = append(out, c)
		}
	}
	return out
}

// renderPool merges configs (all of them apply to p's node) into p's rendered config in
// version, checked by Ignition's parser and named; nil with the diagnostics that say why
// it cannot be.
func renderPool(d *model.Desired, p *model.Pool, configs []model.Config, version string, ign Ignition,
	rel func(model.Origin) model.Origin) (*model.Rendered, []override, model.Diagnostics) {
	r, ovs := merge(p, configs, rel)
	r.IgnitionVersion = version
	if rd := append(recordsDiags(r, rel), parentsDiags(r, rel)...); len(rd) > 0 {
		return nil, ovs, rd
	}
	if dg := firstBoot(r, configs, ign); dg != nil {
		return nil, ovs, model.Diagnostics{dg}
	}
	rpt, err := ign.Render(r)
	diags := reportDiags(r, configs, p, rpt)
	if err != nil && !fatal(rpt) {
		diags = append(diags, &model.Diagnostic{Severity: model.DiagError,
			Summary: fmt.Sprintf("Ignition rejects rendered config for pool %q", r.Pool),
			Detail:  err.Error(), Subject: model.Subject(p.DeclRange)})
	}
	if err != nil {
		return nil, ovs, diags
	}
	return r, ovs, diags
}

// merge folds the configs naming pool p, in order, into one rendered config (unnamed),
// recording who wrote each file, directory, link, unit and kernel argument, and the
// overrides that changed one's on_change policy.
func merge(p *model.Pool, configs []model.Config, rel func(model.Origin) model.Origin) (*model.Rendered, []override) {
	r := &model.Rendered{Pool: p.Name, OSImage: p.OSImage}
	prov := &model.Provenance{Files: map[string]model.Written{}, Units: map[string]model.Written{},
		KernelArgs: map[string]model.Written{}}
	r.Provenance = prov
	var overrides []override
	tree := newTree()
	units := map[string]model.Unit{}
	kargs := slices.Clone(p.KernelArgs)
	kargFrom := make([]model.Origin, len(kargs))
	for i := range kargFrom {
		kargFrom[i] = rel(model.OriginAt("pool."+p.Name, p.KernelArgsRange, model.TextRef{}))
	}
	for ci := range configs {
		c := &configs[ci]
		if !slices.Contains(c.Pools, p.Name) {
			continue
		}
		r.Sources = append(r.Sources, c.Name)
		block := "config." + c.Name
		tree.add(c, block, rel, prov, &overrides)
		for _, u := range c.Units {
			by := rel(model.OriginAt(block, u.DeclRange, u.Text))
			if old, ok := units[u.Name]; ok {
				u.Dropins = mergeDropins(old.Dropins, u.Dropins)
				overrides = appendOverride(overrides, "unit", u.Name, u.DeclRange, by, prov.Units[u.Name].By, old.OnChange, u.OnChange)
			}
			prov.Units[u.Name] = written(prov.Units, u.Name, by)
			units[u.Name] = u
		}
		for i, k := range c.KernelArgs {
			src := model.Source{Range: c.DeclRange}
			if i < len(c.KernelArgSources) {
				src = c.KernelArgSources[i]
			}
			kargs = append(kargs, k)
			kargFrom = append(kargFrom, rel(model.OriginAt(block, src.Range, src.Text)))
		}
		if c.OSImage != "" {
			r.OSImage = c.OSImage
		}
	}
	tree.sshKeys(prov)
	r.SetEntries(tree.sorted())
	for _, u := range units {
		slices.SortFunc(u.Dropins, func(a, b model.Dropin) int { return strings.Compare(a.Name, b.Name) })
		r.Units = append(r.Units, u)
	}
	slices.SortFunc(r.Units, func(a, b model.Unit) int { return strings.Compare(a.Name, b.Name) })
	// A repeated argument is dropped: the first declaration is the one that put it there.
	for i, k := range kargs {
		if _, seen := prov.KernelArgs[k]; !seen {
			prov.KernelArgs[k] = model.Written{By: kargFrom[i]}
			r.KernelArgs = append(r.KernelArgs, k)
		}
	}
	return r, overrides
}

// relativeTo gives origins their file relative to the configuration directory dir, as
// the configuration names its own files: provenance then reads the same wherever the
// configuration is checked out.
func relativeTo(dir string) func(model.Origin) model.Origin {
	memo := map[string]string{}
	return func(o model.Origin) model.Origin {
		if dir == "" || o.File == "" {
			return o
		}
		r, ok := memo[o.File]
		if !ok {
			r = o.File
			if rel, err := filepath.Rel(dir, o.File); err == nil && filepath.IsLocal(rel) {
				r = rel
			}
			memo[o.File] = r
		}
		o.File = r
		return o
	}
}

// written is the provenance of an item by writes, replacing what m says wrote it before.
func written(m map[string]model.Written, key string, by model.Origin) model.Written {
	prev, ok := m[key]
	if !ok {
		return model.Written{By: by}
	}
	return model.Written{By: by, Overrode: append(slices.Clone(prev.Overrode), prev.By)}
}

// mergeDropins keeps earlier drop-ins a later unit declaration does not replace by name.
func mergeDropins(old, new []model.Dropin) []model.Dropin {
	out := slices.Clone(new)
	for _, o := range old {
		if !slices.ContainsFunc(new, func(n model.Dropin) bool { return n.Name == o.Name }) {
			out = append(out, o)
		}
	}
	return out
}

// appendOnce appends to diags each of more it does not hold yet: a config of several pools
// is refused once for what it does in each.
func appendOnce(diags, more model.Diagnostics) model.Diagnostics {
	for _, d := range more {
		if !slices.ContainsFunc(diags, func(e *model.Diagnostic) bool {
			return e.Summary == d.Summary && e.Detail == d.Detail && (e.Subject == d.Subject ||
				e.Subject != nil && d.Subject != nil && *e.Subject == *d.Subject)
		}) {
			diags = append(diags, d)
		}
	}
	return diags
}

// fatal reports whether Ignition's report says why it refused the config (an error entry).
func fatal(rpt []model.ReportEntry) bool {
	return slices.ContainsFunc(rpt, func(e model.ReportEntry) bool { return e.Severity == model.DiagError })
}

// reportDiags turns Ignition's report entries into diagnostics on the file or unit whose
// JSON path they name.
func reportDiags(r *model.Rendered, configs []model.Config, p *model.Pool, rpt []model.ReportEntry) model.Diagnostics {
	var diags model.Diagnostics
	for _, e := range rpt {
		sev := e.Severity
		// A key the spec lacks would be dropped at boot: what a config declares is never
		// silently dropped.
		if strings.Contains(e.Message, "unused key") {
			sev = model.DiagError
		}
		subject := model.Subject(p.DeclRange)
		path := e.Path
		if e := reportedEntry(r, path); e != nil {
			subject = model.Subject(e.Common().DeclRange)
		} else if i, ok := indexAfter(path, "systemd.units."); ok && i < len(r.Units) {
			subject = model.Subject(r.Units[i].DeclRange)
		} else if at := firstBootAt(configs, r); at != nil && len(r.FirstBoot) > 0 && !managedPath(path) {
			subject = at
		}
		diags = append(diags, &model.Diagnostic{Severity: sev,
			Summary: fmt.Sprintf("Ignition rejects rendered config for pool %q", r.Pool),
			Detail:  fmt.Sprintf("%s: %s", path, e.Message), Subject: subject})
	}
	return diags
}

// firstBoot merges the first-boot parts of the configs r's pool is rendered from into r
// (the Ignition room's MergeFirstBoot), in merge order.
func firstBoot(r *model.Rendered, configs []model.Config, ign Ignition) *model.Diagnostic {
	var parts [][]byte
	var last *model.Config
	for i := range configs {
		if c := &configs[i]; slices.Contains(c.Pools, r.Pool) && len(c.FirstBoot) > 0 {
			parts, last = append(parts, c.FirstBoot), c
		}
	}
	if len(parts) == 0 {
		return nil
	}
	fb, err := ign.MergeFirstBoot(parts, r.KernelArgs)
	if err != nil {
		return &model.Diagnostic{Severity: model.DiagError, Summary: fmt.Sprintf("Cannot merge the first-boot parts of pool %q", r.Pool),
			Detail: err.Error(), Subject: model.Subject(last.FirstBootRange)}
	}
	r.FirstBoot = fb
	return nil
}

// firstBootAt is the place of the last config of r's pool with a first-boot part, for
// Ignition's report on that part; nil when none has one.
func firstBootAt(configs []model.Config, r *model.Rendered) *model.Range {
	var at *model.Range
	for i := range configs {
		if c := &configs[i]; slices.Contains(c.Pools, r.Pool) && len(c.FirstBoot) > 0 {
			at = model.Subject(c.FirstBootRange)
		}
	}
	return at
}

// managedPath reports whether a JSON path of a rendered config's Ignition config is in a
// section mcp writes from its own items (files, units, kernel arguments).
func managedPath(path string) bool {
	for _, p := range []string{"storage.files.", "systemd.units.", "kernelArguments.shouldExist", "storage.directories.", "storage.links."} {
		if strings.Contains(path, p) {
			return true
		}
	}
	return false
}

// indexAfter reads the array index that follows prefix in a JSON path like
// "$.storage.files.3.path".
// reportedEntry is the file, directory or link of r that path, a place in r's Ignition
// config (storage.links.2.target), is in, or nil.
func reportedEntry(r *model.Rendered, path string) model.TreeEntry {
	for _, k := range model.EntryKinds {
		i, ok := indexAfter(path, "storage."+k.Section()+".")
		if !ok {
			continue
		}
		for _, e := range r.Entries() {
			if e.Kind() != k {
				continue
			}
			if i == 0 {
				return e
			}
			i--
		}
	}
	return nil
}

func indexAfter(path, prefix string) (int, bool) {
	_, rest, ok := strings.Cut(path, prefix)
	if !ok {
		return 0, false
	}
	end := strings.IndexByte(rest, '.')
	if end < 0 {
		end = len(rest)
	}
	i, err := strconv.Atoi(rest[:end])
	return i, err == nil
}

// bootImageDiags checks that the pool's boot image resolves against its OS image (known
// only once its configs are merged): a managed pool needs the boot_image of its OS image.
// Pinned to another OS image is skew, not an error: the plan shows it (and refuses it with
// skew = "enforce").
func bootImageDiags(d *model.Desired, p *model.Pool, osImage string) model.Diagnostics {
	if _, err := d.ResolveBootImage(p, osImage); err != nil {
		at := p.DeclRange
		if p.BootImage.Declared {
			at = p.BootImage.DeclRange
		}
		return model.Diagnostics{{Severity: model.DiagError, Summary: "No boot image for the pool",
			Detail: capitalizeFirst(err.Error()) + ".", Subject: model.Subject(at)}}
	}
	return nil
}

func capitalizeFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
