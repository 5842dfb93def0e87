package config

import (
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpfleet/mcp/config/butane"
	"github.com/mcpfleet/mcp/internal/hclpos"
	"github.com/mcpfleet/mcp/model"
)

// texts reads a config's butane or ignition attribute (one of them) into c. role is true
// when the text is a MachineConfig (Butane's openshift variant), whose role label names
// the config's pool when it has no pools attribute.
func (l *loader) texts(attrs hcl.Attributes, c *model.Config) (diags hcl.Diagnostics, role bool) {
	b, i := attrs["butane"], attrs["ignition"]
	switch {
	case b != nil && i != nil:
		return hcl.Diagnostics{errAt(i.NameRange, "Both butane and ignition",
			fmt.Sprintf("Config %q has a butane attribute (at %s) and an ignition attribute: give one, or put them in two configs.", c.Name, posOf(b.NameRange)))}, false
	case b != nil:
		dir, diags := l.butaneFilesDir(attrs, b)
		text, d := l.str(b)
		if diags = append(diags, d...); diags.HasErrors() {
			return diags, false
		}
		if butane.OpenShift([]byte(text)) {
			return append(diags, l.openShiftButane(b, attrs["pools"], []byte(text), dir, c)...), true
		}
		translate := func(text []byte, firstBootOnly func(string) bool) (res *butane.Result, problems []butane.Problem) {
			if err := withButaneFiles(text, dir, func(staged string) {
				res, problems = butane.TranslateFiles(text, staged, firstBootOnly)
			}); err != nil {
				return nil, []butane.Problem{{Message: err.Error()}}
			}
			return res, problems
		}
		return append(diags, l.butane(b, text, c, model.TextButane, translate)...), false
	case attrs["butane_files_dir"] != nil:
		return hcl.Diagnostics{errAt(attrs["butane_files_dir"].NameRange, "butane_files_dir without butane",
			fmt.Sprintf("Config %q has butane_files_dir but no butane attribute for it to serve.", c.Name))}, false
	case i != nil:
		text, diags := l.str(i)
		if diags.HasErrors() {
			return diags, false
		}
		return append(diags, l.butane(i, text, c, model.TextIgnition, butane.FromIgnition)...), false
	}
	return nil, false
}

// withButaneFiles runs f with Butane's files directory for text: a scratch copy of the
// local files text names from dir (stageButaneFiles), "" when it names none.
func withButaneFiles(text []byte, dir string, f func(filesDir string)) error {
	staged, err := stageButaneFiles(text, dir)
	if err != nil {
		return err
	}
	if staged != "" {
		defer os.RemoveAll(staged)
	}
	f(staged)
	return nil
}

// butane translates the text of a config's butane attribute (or reads its ignition
// attribute's, kind TextIgnition) and adds what it declares to c, after the config's own
// blocks. Butane's errors and warnings are diagnostics on the attribute; their text names
// Butane's line and column inside the Butane text.
func (l *loader) butane(a *hcl.Attribute, text string, c *model.Config, kind model.TextKind, translate func([]byte, func(string) bool) (*butane.Result, []butane.Problem)) hcl.Diagnostics {
	where := butaneSource(a.Expr, kind)
	res, problems := translate([]byte(text), FirstBootOnly)
	diags := textProblems(a, where, kind, problems)
	if res == nil {
		return diags
	}
	return append(diags, l.addDeclared(a.Range, where, res, c, model.TextRef{Kind: kind, File: sourceFile(a.Expr)})...)
}

// textProblems are Butane's (or Ignition's) errors and warnings about the text of a,
// where names the text.
func textProblems(a *hcl.Attribute, where string, kind model.TextKind, problems []butane.Problem) hcl.Diagnostics {
	name := textName(kind)
	var diags hcl.Diagnostics
	for _, p := range problems {
		d := errAt(a.Range, "Invalid "+name, fmt.Sprintf("%s: %s.", where, p.Message))
		if p.Warning {
			d.Severity, d.Summary = hcl.DiagWarning, name+" warning"
		}
		diags = append(diags, d)
	}
	return diags
}

// addDeclared adds to c the files, units and kernel arguments that a Butane text or a
// MachineConfig's Ignition config (res) declares, refusing what a config's own blocks
// could not declare either (refusals). where names the text for messages; r is the
// attribute's range; text is the text's kind and file, which each item's Text gets.
func (l *loader) addDeclared(r hcl.Range, where string, res *butane.Result, c *model.Config, text model.TextRef) hcl.Diagnostics {
	var diags hcl.Diagnostics
	at := hclpos.From(r)
	for _, t := range res.Texts() {
		t.Kind, t.File = text.Kind, text.File
	}
	bad := func(summary, format string, args ...any) {
		diags = append(diags, errAt(r, summary, where+": "+fmt.Sprintf(format, args...)+"."))
	}
	refused := map[string]bool{}
	for _, x := range refusals(res) {
		bad(x.Summary, "%s", x.Message)
		refused[x.Field] = true
	}
	blocks := c.Entries()
	var entries []model.TreeEntry
	for _, e := range res.Entries() {
		n := e.Common()
		if refused[n.Text.Path] {
			continue
		}
		if i := indexOf(blocks, func(b model.TreeEntry) bool { return b.Kind() == e.Kind() && b.Common().Path == n.Path }); i >= 0 {
			kind := e.Kind()
			bad("Duplicate "+string(kind), "%s %s (%s) is also declared by the %s block at %s; declare it once in a config",
				kind, n.Path, n.Text.Path, kind, blocks[i].Common().DeclRange)
			continue
		}
		n.DeclRange = at
		entries = append(entries, e)
	}
	c.SetEntries(append(blocks, entries...))
	for _, u := range res.Units {
		if refused[u.Text.Path] {
			continue
		}
		if i := indexOf(c.Units, func(v model.Unit) bool { return v.Name == u.Name }); i >= 0 {
			bad("Duplicate unit", "unit %s (%s) is also declared by the unit block at %s; declare it once in a config", u.Name, u.Text.Path, c.Units[i].DeclRange)
			continue
		}
		u.DeclRange = at
		c.Units = append(c.Units, u)
	}
	// An entry may hold several arguments, in order, as rpm-ostree splits it.
	for i, k := range res.KernelArgs {
		for _, a := range model.SplitKernelArgs(k) {
			if !refused[res.KernelArgPaths[i]] {
				c.KernelArgs = append(c.KernelArgs, a)
				c.KernelArgSources = append(c.KernelArgSources, model.Source{Range: at, Text: model.TextRef{Kind: text.Kind, Path: res.KernelArgPaths[i]}})
			}
		}
	}
	l.butaneTree(r, c, res, text, refused, bad)
	return append(diags, firstBootWarnings(r, where, res)...)
}

// butaneTree adds the core user's SSH keys and first-boot part of res to c, but those
// refused.
func (l *loader) butaneTree(r hcl.Range, c *model.Config, res *butane.Result, text model.TextRef, refused map[string]bool, bad func(summary, format string, args ...any)) {
	at := hclpos.From(r)
	keysRefused := false
	for i := range res.SSHKeys {
		keysRefused = keysRefused || refused[fmt.Sprintf("%s.%d", res.SSHKeysAt, i)]
	}
	switch {
	case len(res.SSHKeys) == 0 || keysRefused:
	case len(c.SSHKeys) > 0:
		bad("Duplicate SSH keys", "the core user's SSH keys (%s) are also declared by the ssh_authorized_keys block at %s; declare them once in a config",
			res.SSHKeysAt, c.SSHKeysSource.Range)
	default:
		c.SSHKeys = res.SSHKeys
		c.SSHKeysSource = model.Source{Range: at, Text: model.TextRef{Kind: text.Kind, Path: res.SSHKeysAt}}
	}
	if res.FirstBoot != nil {
		c.FirstBoot, c.FirstBootParts, c.FirstBootRange = res.FirstBoot, res.FirstBootParts, at
	}
}

// firstBootWarnings say which of res's paths and files booting nodes get and running nodes
// never do.
func firstBootWarnings(r hcl.Range, where string, res *butane.Result) hcl.Diagnostics {
	var diags hcl.Diagnostics
	warn := func(detail string) {
		d := errAt(r, "First boot only", detail)
		d.Severity = hcl.DiagWarning
		diags = append(diags, d)
	}
	if len(res.FirstBootPaths) > 0 {
		warn(fmt.Sprintf("%s: %s: outside the trees mcp manages on running nodes (%s), so booting nodes get them as Ignition writes them, and running nodes never do.",
			where, strings.Join(res.FirstBootPaths, ", "), strings.Join(model.ManagedPrefixes, ", ")))
	}
	for _, f := range res.FirstBootFiles {
		warn(fmt.Sprintf("%s: file %s: mcp cannot know its bytes when it plans, so it cannot show a diff of it or check it for drift; booting nodes get it as Ignition writes it, running nodes never do.",
			where, f))
	}
	return diags
}

// firstBootTrees are CoreOS's writable trees (links into /var) that mcp does not manage
// on running nodes: a Butane or Ignition file, directory or link there is first boot
// only (users' homes, above all), not refused.
var firstBootTrees = []string{"/home", "/root", "/srv", "/mnt"}

// FirstBootOnly reports whether a Butane, Ignition or MachineConfig path is left to first
// boot: not one mcp manages, and in one of firstBootTrees.
func FirstBootOnly(p string) bool {
	if checkPath(p, hcl.Range{}) == nil {
		return false
	}
	for _, t := range firstBootTrees {
		if strings.HasPrefix(p, t+"/") && path.Clean(p) == p {
			return true
		}
	}
	return false
}

// butaneSource says where the Butane (or Ignition, kind) text came from for messages: the
// file a file("worker.bu") or templatefile("worker.bu", …) call reads, else "the Butane
// text".
func butaneSource(e hcl.Expression, kind model.TextKind) string {
	name := textName(kind)
	if f := sourceFile(e); f != "" {
		return name + " " + f
	}
	if kind == model.TextIgnition {
		return "the Ignition config"
	}
	return "the Butane text"
}

// textName names a kind of text for people.
func textName(k model.TextKind) string {
	return map[model.TextKind]string{model.TextButane: "Butane", model.TextIgnition: "Ignition", model.TextMachineConfig: "MachineConfig"}[k]
}

// sourceFile is the file a file("x") or templatefile("x", …) call reads, as written; ""
// for another expression.
func sourceFile(e hcl.Expression) string {
	if call, ok := e.(*hclsyntax.FunctionCallExpr); ok && (call.Name == "file" || call.Name == "templatefile") && len(call.Args) > 0 {
		if v, d := call.Args[0].Value(nil); !d.HasErrors() && v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
			return v.AsString()
		}
	}
	return ""
}

func indexOf[T any](s []T, f func(T) bool) int {
	for i, v := range s {
		if f(v) {
			return i
		}
	}
	return -1
}
