package config

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpfleet/mcp/internal/hclpos"
	"github.com/mcpfleet/mcp/internal/untrusted"
	"github.com/mcpfleet/mcp/model"
)

// Directories, links and the core user's SSH keys: what real first-boot configs declare
// beside files, managed like them (docs/configuration.md).

// entry reads what a file, directory or link block has alike into n — its path (the
// label), checked as every entry's, and its user, group and on_change — and hands each
// other attribute to own, in the order written. It returns the block's attributes.
func (l *loader) entry(b *hcl.Block, schema *hcl.BodySchema, n *model.Entry, own func(*hcl.Attribute) hcl.Diagnostics) (hcl.Attributes, hcl.Diagnostics) {
	*n = model.Entry{Path: b.Labels[0], DeclRange: hclpos.From(b.LabelRanges[0])}
	var diags hcl.Diagnostics
	if d := checkPath(n.Path, b.LabelRanges[0]); d != nil {
		diags = append(diags, d)
	}
	content, d := readAttrs(b.Body, schema, func(a *hcl.Attribute) (d hcl.Diagnostics) {
		switch a.Name {
		case "user":
			n.User, d = l.owner(a)
		case "group":
			n.Group, d = l.owner(a)
		case "on_change":
			n.OnChange, d = l.policies(a)
		default:
			d = own(a)
		}
		return d
	})
	l.reach(n.Path, content.Attributes)
	return content.Attributes, append(diags, d...)
}

var directorySchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "mode"}, {Name: "user"}, {Name: "group"}, {Name: "on_change"}}}

// directory reads a directory block: mode 0755 by default (Ignition's).
func (l *loader) directory(b *hcl.Block) (model.Directory, hcl.Diagnostics) {
	d := model.Directory{Mode: 0o755}
	_, diags := l.entry(b, directorySchema, &d.Entry, func(a *hcl.Attribute) (dg hcl.Diagnostics) {
		d.Mode, dg = l.mode(a) // its only attribute of its own
		return dg
	})
	return d, diags
}

var linkSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "target", Required: true},
	{Name: "hard"}, {Name: "user"}, {Name: "group"}, {Name: "on_change"}}}

// link reads a link block. A symbolic link's target is data, any text a link can hold; a
// hard link's is a path on the node, held to the rules of a file's path.
func (l *loader) link(b *hcl.Block) (model.Link, hcl.Diagnostics) {
	var k model.Link
	attrs, diags := l.entry(b, linkSchema, &k.Entry, func(a *hcl.Attribute) (d hcl.Diagnostics) {
		switch a.Name {
		case "target":
			k.Target, d = l.str(a)
		case "hard":
			k.Hard, d = l.boolean(a)
		}
		return d
	})
	if target := attrs["target"]; target != nil && !diags.HasErrors() {
		if dg := checkLinkTarget(k.Target, k.Hard, target.Expr.Range()); dg != nil {
			diags = append(diags, dg)
		}
	}
	return k, diags
}

// maxLinkTarget is the longest target a symbolic link holds on Linux (PATH_MAX less the NUL).
const maxLinkTarget = 4095

func checkLinkTarget(target string, hard bool, r hcl.Range) *hcl.Diagnostic {
	switch {
	case target == "":
		return errAt(r, "Invalid link target", "A link needs a target.")
	case strings.ContainsRune(target, 0) || len(target) > maxLinkTarget:
		return errAt(r, "Invalid link target", fmt.Sprintf("A link's target has no NUL byte and at most %d bytes.", maxLinkTarget))
	case hard:
		if dg := checkPath(target, r); dg != nil {
			dg.Summary = "Invalid hard link target"
			dg.Detail = "A hard link's target is a file of the node, named as a file block's path: " + dg.Detail
			return dg
		}
	}
	return nil
}

var sshKeysSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "user"}, {Name: "keys", Required: true}}}

// sshKeys reads an ssh_authorized_keys block into c: the core user's keys, managed as the
// MCO manages them (model.SSHKeyItems).
func (l *loader) sshKeys(b *hcl.Block, c *model.Config) hcl.Diagnostics {
	content, diags := b.Body.Content(sshKeysSchema)
	if a := content.Attributes["user"]; a != nil {
		u, dg := l.str(a)
		diags = append(diags, dg...)
		if !dg.HasErrors() && u != "core" {
			diags = append(diags, errAt(a.Expr.Range(), "Unsupported user",
				fmt.Sprintf("user = %q: mcp manages the SSH keys of the core user only, as the MCO does (%s). "+
					"Other users are created at first boot: declare them in the config's Butane or Ignition (passwd.users).", u, model.SSHKeysFile)))
		}
	}
	a := content.Attributes["keys"]
	if a == nil {
		return diags
	}
	keys, dg := l.strList(a)
	diags = append(diags, dg...)
	for i, k := range keys {
		if why := model.SSHKeyProblem(k); why != "" {
			diags = append(diags, errAt(elementRange(a, i), "Invalid SSH key", fmt.Sprintf("SSH key %d %s.", i+1, why)))
		}
	}
	if len(keys) == 0 && !dg.HasErrors() {
		diags = append(diags, errAt(a.Expr.Range(), "No SSH keys", "keys lists the core user's authorized keys: give at least one."))
	}
	if !diags.HasErrors() {
		c.SSHKeys = append(c.SSHKeys, keys...)
		c.SSHKeysSource = model.Source{Range: hclpos.From(b.DefRange)}
	}
	return diags
}

// pathOwner names the entry of es at p ("the file block at main.hcl:3,8"), or "".
func pathOwner(es []model.TreeEntry, p string) string {
	for _, e := range es {
		if n := e.Common(); n.Path == p {
			return declaredBy(string(e.Kind()), n.DeclRange, n.Text)
		}
	}
	return ""
}

func declaredBy(kind string, r model.Range, text model.TextRef) string {
	if text.Path != "" {
		return fmt.Sprintf("the %s of the config's %s (%s) at %s", kind, textName(text.Kind), text.Path, r)
	}
	return fmt.Sprintf("the %s block at %s", kind, r)
}

// clashes reports each path of c declared by two of its files, directories and links, at
// the later one, and drops it.
func clashes(c *model.Config) hcl.Diagnostics {
	var diags hcl.Diagnostics
	var kept []model.TreeEntry
	for _, e := range c.Entries() {
		n := e.Common()
		if by := pathOwner(kept, n.Path); by != "" {
			diags = append(diags, errAt(*hclpos.Subject(n.DeclRange), "Path declared twice",
				fmt.Sprintf("%s is also declared by %s; a path is one file, directory or link of a config.", untrusted.Line(n.Path), by)))
			continue
		}
		kept = append(kept, e)
	}
	c.SetEntries(kept)
	return diags
}
