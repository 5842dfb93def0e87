package planner

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	v34 "github.com/coreos/ignition/v2/config/v3_4"
	"github.com/coreos/ignition/v2/config/v3_4/types"
	v35 "github.com/coreos/ignition/v2/config/v3_5"
	v36 "github.com/coreos/ignition/v2/config/v3_6"
	"github.com/coreos/vcontext/report"
	"github.com/hashicorp/hcl/v2"

	"github.com/mcpfleet/mcp/internal/hclpos"
	"github.com/mcpfleet/mcp/model"
)

// DefaultIgnitionVersion is the Ignition spec rendered configs are written in by default.
const DefaultIgnitionVersion = "3.4.0"

// parsers are Ignition's own parsers for the specs mcp renders. Configs are built with the
// 3.4 types; their JSON is valid 3.5 and 3.6 with only the version changed.
var parsers = map[string]func([]byte) (report.Report, error){
	"3.4.0": func(b []byte) (report.Report, error) { _, r, err := v34.Parse(b); return r, err },
	"3.5.0": func(b []byte) (report.Report, error) { _, r, err := v35.Parse(b); return r, err },
	"3.6.0": func(b []byte) (report.Report, error) { _, r, err := v36.Parse(b); return r, err },
}

// Render merges, per pool, the configs that name it (in lexical order of config name, later
// wins) into a rendered config, builds its Ignition config and validates that with
// Ignition's own parser. Problems become diagnostics pointing at the file or unit concerned.
func Render(d *model.Desired) (map[string]*model.Rendered, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	version := d.IgnitionVersion
	if version == "" {
		version = DefaultIgnitionVersion
	}
	parse, ok := parsers[version]
	if !ok {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Unsupported Ignition version",
			Detail: fmt.Sprintf("ignition_version %q: mcp renders 3.4.0, 3.5.0 or 3.6.0", version)}}
	}
	out := make(map[string]*model.Rendered, len(d.Pools))
	for i := range d.Pools {
		r := merge(&d.Pools[i], d.Configs)
		r.IgnitionVersion = version
		ign, err := ignitionJSON(r)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot build Ignition config",
				Detail: fmt.Sprintf("pool %q: %v", r.Pool, err), Subject: hclpos.Subject(d.Pools[i].DeclRange)})
			continue
		}
		rpt, err := parse(ign)
		diags = append(diags, reportDiags(r, d, &d.Pools[i], rpt)...)
		if err != nil && !rpt.IsFatal() {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError,
				Summary: fmt.Sprintf("Ignition rejects rendered config for pool %q", r.Pool),
				Detail:  err.Error(), Subject: hclpos.Subject(d.Pools[i].DeclRange)})
		}
		if err != nil {
			continue
		}
		r.Ignition = ign
		r.Name = r.ContentName()
		out[r.Pool] = r
	}
	return out, diags
}

// merge folds the configs naming pool p, in order, into one rendered config (unnamed).
func merge(p *model.Pool, configs []model.Config) *model.Rendered {
	r := &model.Rendered{Pool: p.Name, OSImage: p.OSImage}
	files := map[string]model.File{}
	units := map[string]model.Unit{}
	kargs := slices.Clone(p.KernelArgs)
	for ci := range configs {
		c := &configs[ci]
		if !slices.Contains(c.Pools, p.Name) {
			continue
		}
		r.Sources = append(r.Sources, c.Name)
		for _, f := range c.Files {
			files[f.Path] = f
		}
		for _, u := range c.Units {
			if old, ok := units[u.Name]; ok {
				u.Dropins = mergeDropins(old.Dropins, u.Dropins)
			}
			units[u.Name] = u
		}
		kargs = append(kargs, c.KernelArgs...)
		if c.OSImage != "" {
			r.OSImage = c.OSImage
		}
	}
	for _, f := range files {
		r.Files = append(r.Files, f)
	}
	slices.SortFunc(r.Files, func(a, b model.File) int { return strings.Compare(a.Path, b.Path) })
	for _, u := range units {
		slices.SortFunc(u.Dropins, func(a, b model.Dropin) int { return strings.Compare(a.Name, b.Name) })
		r.Units = append(r.Units, u)
	}
	slices.SortFunc(r.Units, func(a, b model.Unit) int { return strings.Compare(a.Name, b.Name) })
	seen := map[string]bool{}
	for _, k := range kargs {
		if !seen[k] {
			seen[k] = true
			r.KernelArgs = append(r.KernelArgs, k)
		}
	}
	return r
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

// ignitionJSON builds the Ignition config of r with the 3.4 types.
func ignitionJSON(r *model.Rendered) ([]byte, error) {
	var c types.Config
	c.Ignition.Version = r.IgnitionVersion
	t := true
	// A node booting with this config gets its kernel arguments from Ignition's kargs stage
	// (spec 3.3+), so it comes up with them instead of needing a second reboot.
	for _, k := range r.KernelArgs {
		c.KernelArguments.ShouldExist = append(c.KernelArguments.ShouldExist, types.KernelArgument(k))
	}
	for _, f := range r.Files {
		src := dataURL(f.Contents)
		mode := f.Mode
		file := types.File{Node: types.Node{Path: f.Path, Overwrite: &t}}
		file.Contents.Source = &src
		file.Mode = &mode
		if f.User != "" {
			u := f.User
			file.User.Name = &u
		}
		if f.Group != "" {
			g := f.Group
			file.Group.Name = &g
		}
		c.Storage.Files = append(c.Storage.Files, file)
	}
	for _, u := range r.Units {
		unit := types.Unit{Name: u.Name, Enabled: u.Enabled}
		if u.Contents != "" {
			s := u.Contents
			unit.Contents = &s
		}
		if u.Mask {
			unit.Mask = &t
		}
		for _, d := range u.Dropins {
			s := d.Contents
			unit.Dropins = append(unit.Dropins, types.Dropin{Name: d.Name, Contents: &s})
		}
		c.Systemd.Units = append(c.Systemd.Units, unit)
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	// Ignition's types marshal every section, empty or not; an empty section is noise to a
	// reader and an "unused key" to an older spec's parser, so drop them.
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	return json.Marshal(prune(doc))
}

// prune removes empty objects and arrays, recursively.
func prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if p := prune(e); p == nil {
				delete(t, k)
			} else {
				t[k] = p
			}
		}
		if len(t) == 0 {
			return nil
		}
	case []any:
		for i := range t {
			if p := prune(t[i]); p != nil {
				t[i] = p
			} else {
				t[i] = map[string]any{}
			}
		}
		if len(t) == 0 {
			return nil
		}
	}
	return v
}

// dataURL encodes contents as an RFC 2397 data URL: percent-encoded when it is text,
// base64 otherwise.
func dataURL(b []byte) string {
	if utf8.Valid(b) {
		var sb strings.Builder
		sb.WriteString("data:,")
		for _, c := range b {
			if c >= 0x80 || c <= ' ' || strings.IndexByte(`%#?"<>\^`+"`{|}", c) >= 0 {
				fmt.Fprintf(&sb, "%%%02X", c)
			} else {
				sb.WriteByte(c)
			}
		}
		return sb.String()
	}
	return "data:;base64," + base64.StdEncoding.EncodeToString(b)
}

// reportDiags turns Ignition's report entries into diagnostics on the file or unit whose
// JSON path they name.
func reportDiags(r *model.Rendered, d *model.Desired, p *model.Pool, rpt report.Report) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, e := range rpt.Entries {
		sev := hcl.DiagWarning
		if e.Kind == report.Error {
			sev = hcl.DiagError
		} else if e.Kind != report.Warn {
			continue
		}
		subject := hclpos.Subject(p.DeclRange)
		path := e.Context.String()
		if i, ok := indexAfter(path, "storage.files."); ok && i < len(r.Files) {
			subject = hclpos.Subject(r.Files[i].DeclRange)
		} else if i, ok := indexAfter(path, "systemd.units."); ok && i < len(r.Units) {
			subject = hclpos.Subject(r.Units[i].DeclRange)
		}
		diags = append(diags, &hcl.Diagnostic{Severity: sev,
			Summary: fmt.Sprintf("Ignition rejects rendered config for pool %q", r.Pool),
			Detail:  fmt.Sprintf("%s: %s", path, e.Message), Subject: subject})
	}
	return diags
}

// indexAfter reads the array index that follows prefix in a JSON path like
// "$.storage.files.3.path".
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
