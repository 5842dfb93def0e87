// Package config is mcp's configuration language: it reads every *.hcl file of a
// directory (hashicorp/hcl/v2 and go-cty) into a model.Desired, with variables, Terraform's
// functions, and a diagnostic with its source range for every problem. It knows no provider
// or state backend by name: their blocks are read against the specs of the parts it is
// handed (Options.Schemas). It reads files and does no other I/O.
package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mcpfleet/mcp/internal/boundedfile"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/model"
)

// Options are the variable inputs, in Terraform's precedence: variable defaults <
// MCP_VAR_<name> environment variables < var files (in order) < -var flags (in order).
type Options struct {
	Vars     []string // "name=value" from -var flags
	VarFiles []string // -var-file paths
	Environ  []string // os.Environ() normally
	// Values, when not nil, are the variables' values exactly, as a saved plan recorded
	// them: they replace defaults, the environment, var files and -var, and a variable
	// declared now that they lack is an error (the configuration changed since the plan).
	Values map[string]cty.Value
	// Schemas are the providers and state backends of this build (cmd/mcp composes them):
	// the provider and state blocks are read against them.
	Schemas Schemas
	// Cluster names the cluster block to load the configuration for, in a configuration
	// that has cluster blocks: its provider, its state, and its variable values, which win
	// over var files and the environment but not over -var (docs/fleets.md). Empty there:
	// only the clusters and stages are read (Result.Clusters), and Desired is nil.
	Cluster string
}

// Result is a loaded configuration and the sources it came from (for printing
// diagnostics with their lines).
type Result struct {
	Desired *model.Desired
	// Sources are the configuration's files' bytes by name.
	Sources map[string][]byte
	// files are the parsed files, which name the block a place is in (Locate).
	files map[string]*hcl.File
	// Variables are the values the variables were given (a saved plan records them).
	Variables map[string]cty.Value
	// SensitiveVariables are the variables whose values mcp never shows: declared
	// sensitive, or reaching a sensitive file's content.
	SensitiveVariables map[string]bool
	// Clusters and Stages are the cluster and stage blocks, in stage order (each stage
	// after those its after names); none: a configuration of one cluster, as before.
	Clusters []model.Cluster
	Stages   []model.Stage
	// FailureDomains are the failure_domain blocks, in their label's order.
	FailureDomains []model.FailureDomain
}

var rootSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "mcp"}, {Type: "provider", LabelNames: []string{"type"}}, {Type: "state"},
	{Type: "variable", LabelNames: []string{"name"}}, {Type: "pool", LabelNames: []string{"name"}},
	{Type: "config", LabelNames: []string{"name"}}, {Type: "boot_image", LabelNames: []string{"name"}},
	{Type: "cluster", LabelNames: []string{"name"}}, {Type: "stage", LabelNames: []string{"name"}},
	{Type: "failure_domain", LabelNames: []string{"label"}}, {Type: "machine", LabelNames: []string{"name"}},
}}

// Load reads the configuration in dir. The Result is non-nil whenever files were parsed,
// even with errors, so that the diagnostics can be printed with their source. The
// diagnostics are the model's: the language's own stop here.
func Load(dir string, opts Options) (*Result, model.Diagnostics) {
	res, files, diags := load(dir, opts)
	res.files, res.Sources = files, make(map[string][]byte, len(files))
	for name, f := range files {
		res.Sources[name] = f.Bytes
	}
	return res, Diagnostics(diags, files)
}

// load parses and decodes dir's configuration; files are the parsed sources by name (the
// parser's own map: it holds every file parsed, errors or not).
func load(dir string, opts Options) (*Result, map[string]*hcl.File, hcl.Diagnostics) {
	parser := hclparse.NewParser()
	res, files := &Result{}, parser.Files()
	names, err := filepath.Glob(filepath.Join(dir, "*.hcl"))
	if err != nil || len(names) == 0 {
		return res, files, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "No configuration files",
			Detail: fmt.Sprintf("%s has no *.hcl files.", dir)}}
	}
	sort.Strings(names)
	var diags hcl.Diagnostics
	var blocks hcl.Blocks
	for _, name := range names {
		if dir == "." {
			name = filepath.Base(name)
		}
		f, d := parseBounded(parser, name)
		diags = append(diags, d...)
		if f == nil {
			continue
		}
		content, d := f.Body.Content(rootSchema)
		diags = append(diags, d...)
		blocks = append(blocks, content.Blocks...)
	}
	if diags.HasErrors() {
		return res, files, diags
	}
	l := &loader{dir: dir, schemas: opts.Schemas, d: &model.Desired{Dir: dir, IgnitionVersion: "3.4.0"}}
	parts, d := l.selectCluster(res, blocks, opts.Cluster)
	diags = append(diags, d...)
	if parts == nil {
		return res, files, diags
	}
	vars, d := l.variables(blocks.OfType("variable"), opts, parts.cluster)
	diags = append(diags, d...)
	res.Variables = vars
	l.ctx = &hcl.EvalContext{Variables: map[string]cty.Value{"var": cty.ObjectVal(vars)}, Functions: functions(dir)}
	diags = append(diags, l.settings(blocks.OfType("mcp"))...)
	diags = append(diags, l.provider(parts.provider)...)
	diags = append(diags, l.state(parts.state)...)
	diags = append(diags, l.bootImages(blocks.OfType("boot_image"))...)
	diags = append(diags, l.pools(blocks.OfType("pool"))...)
	diags = append(diags, l.configs(blocks.OfType("config"))...)
	diags = append(diags, l.machines(blocks.OfType("machine"))...)
	diags = append(diags, l.revertsChosenNodes()...)
	res.Desired = l.d
	res.SensitiveVariables = l.sensitiveVariables()
	return res, files, diags
}

// parseBounded reads and parses one configuration file within mcp's bounds (bounds.go).
// A refused file is not parsed, so it is not among the Result's files either: its
// diagnostics print without a source snippet, which for 60,000 brackets is a kindness.
func parseBounded(parser *hclparse.Parser, name string) (*hcl.File, hcl.Diagnostics) {
	whole := &hcl.Range{Filename: name, Start: hcl.Pos{Line: 1, Column: 1}, End: hcl.Pos{Line: 1, Column: 1}}
	src, err := readBounded(name)
	if err != nil {
		summary := "Cannot read configuration file"
		if errors.Is(err, boundedfile.ErrTooLarge) {
			summary = "Configuration file too large"
		}
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary, Detail: err.Error() + ".", Subject: whole}}
	}
	if d := checkNesting(src, name, false); d != nil {
		return nil, hcl.Diagnostics{d}
	}
	return parser.ParseHCL(src, name)
}

type loader struct {
	dir     string
	schemas Schemas
	d       *model.Desired
	ctx     *hcl.EvalContext
	secrets secrets
}

// absPath resolves a path of the configuration against its directory; a leading "~/" is
// the user's home, as in kubeconfig paths people copy from kubectl's docs.
func (l *loader) absPath(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, rest)
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(l.dir, p)
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func (l *loader) settings(blocks hcl.Blocks) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for i, b := range blocks {
		if i > 0 {
			diags = append(diags, duplicate("mcp block", "", b.DefRange, blocks[0].DefRange))
			continue
		}
		content, d := b.Body.Content(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "ignition_version"}}})
		diags = append(diags, d...)
		if a := content.Attributes["ignition_version"]; a != nil {
			v, d := l.str(a)
			diags = append(diags, d...)
			if spec, ok := ignition.Lookup(v); ok && spec.Render {
				l.d.IgnitionVersion = v
			} else if v != "" {
				diags = append(diags, errAt(a.Expr.Range(), "Unsupported Ignition version",
					fmt.Sprintf("ignition_version %q: mcp renders %s.", v, ignition.RenderList())))
			}
		}
	}
	return diags
}

// variables evaluates every variable's value from its sources, in precedence order.
func (l *loader) variables(blocks hcl.Blocks, opts Options, cluster *clusterDecl) (map[string]cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	decl := map[string]*variable{}
	names := newLabels("variable")
	for _, b := range blocks {
		v, d := decodeVariable(b)
		diags = append(diags, d...)
		if d := names.declare(b); d != nil {
			diags = append(diags, d)
			continue
		}
		decl[v.name] = v
		if v.sensitive {
			if l.secrets.declared == nil {
				l.secrets.declared = map[string]hcl.Range{}
			}
			l.secrets.declared[v.name] = v.decl
		}
	}
	set := func(name string, val cty.Value, src string, rng *hcl.Range) {
		v, ok := decl[name]
		if !ok {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Undeclared variable",
				Detail: fmt.Sprintf("%s sets variable %q, which no variable block declares.%s", src, name, didYouMean(name, keysOf(decl))), Subject: rng})
			return
		}
		cv, err := convert.Convert(val, v.typ)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value for variable",
				Detail: fmt.Sprintf("%s: variable %q: %v.", src, name, err), Subject: rng})
			return
		}
		v.value = cv
	}
	if opts.Values != nil {
		for name, val := range opts.Values {
			set(name, val, "the saved plan", nil)
		}
		for name, v := range decl {
			if _, ok := opts.Values[name]; !ok {
				r := v.decl
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Variable not in the saved plan",
					Detail: fmt.Sprintf("Variable %q was declared after the plan was made; run mcp plan again.", name), Subject: &r})
				v.value = cty.DynamicVal
			}
		}
		opts, cluster = Options{}, nil // nothing else sets a variable of a saved plan
	}
	for _, kv := range opts.Environ {
		if k, val, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "MCP_VAR_") {
			name := strings.TrimPrefix(k, "MCP_VAR_")
			if v, ok := decl[name]; ok {
				parsed, d := v.parseRaw(val, "environment variable "+k)
				diags = append(diags, d...)
				set(name, parsed, "environment variable "+k, nil)
			}
		}
	}
	for _, f := range opts.VarFiles {
		diags = append(diags, readVarFile(f, set)...)
	}
	if cluster != nil {
		diags = append(diags, l.clusterValues(cluster, set)...)
	}
	for _, kv := range opts.Vars {
		name, val, ok := strings.Cut(kv, "=")
		if !ok {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid -var option",
				Detail: fmt.Sprintf("-var %q: want name=value.", kv)})
			continue
		}
		if v, ok := decl[name]; ok {
			parsed, d := v.parseRaw(val, "-var "+name)
			diags = append(diags, d...)
			set(name, parsed, "-var "+name, nil)
		} else {
			set(name, cty.StringVal(val), "-var "+name, nil)
		}
	}
	out := map[string]cty.Value{}
	for name, v := range decl {
		if v.value == cty.NilVal {
			r := v.decl
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "No value for variable",
				Detail:  fmt.Sprintf("Variable %q has no default; set it with -var %s=…, a -var-file, or MCP_VAR_%s.", name, name, name),
				Subject: &r})
			out[name] = cty.DynamicVal
			continue
		}
		out[name] = v.value
	}
	return out, diags
}

func readVarFile(path string, set func(string, cty.Value, string, *hcl.Range)) hcl.Diagnostics {
	src, err := readBounded(path)
	if err != nil {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read variables file", Detail: err.Error() + "."}}
	}
	if d := checkNesting(src, path, false); d != nil {
		return hcl.Diagnostics{d}
	}
	f, diags := hclparse.NewParser().ParseHCL(src, path)
	if diags.HasErrors() {
		return diags
	}
	attrs, d := f.Body.JustAttributes()
	diags = append(diags, d...)
	for name, a := range attrs {
		v, d := a.Expr.Value(nil)
		diags = append(diags, d...)
		if !d.HasErrors() {
			r := a.NameRange
			set(name, v, "variables file "+path, &r)
		}
	}
	return diags
}

func convertTo(v cty.Value, t cty.Type) (cty.Value, error) { return convert.Convert(v, t) }
