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

var directorySchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "mode"}, {Name: "user"}, {Name: "group"}, {Name: "on_change"}}}

// directory reads a directory block: its path checked as a file's, mode 0755 by default
// (Ignition's).
func (l *loader) directory(b *hcl.Block) (model.Directory, hcl.Diagnostics) {
	d := model.Directory{Entry: model.Entry{Path: b.Labels[0], DeclRange: hclpos.From(b.LabelRanges[0])}, Mode: 0o755}
	var diags hcl.Diagnostics
	if dg := checkPath(d.Path, b.LabelRanges[0]); dg != nil {
		diags = append(diags, dg)
	}
	content, dg := b.Body.Content(directorySchema)
	diags = append(diags, dg...)
	for _, a := range sortedAttrs(content.Attributes) {
		var dg hcl.Diagnostics
		switch a.Name {
		case "mode":
			d.Mode, dg = l.mode(a)
		case "user":
			d.User, dg = l.owner(a)
		case "group":
			d.Group, dg = l.owner(a)
		case "on_change":
			d.OnChange, dg = l.policies(a)
		}
		diags = append(diags, dg...)
	}
	return d, diags
}

var linkSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "target", Required: true},
	{Name: "hard"}, {Name: "user"}, {Name: "group"}, {Name: "on_change"}}}

// link reads a link block. A symbolic link's target is data, any text a link can hold; a
// hard link's is a path on the node, held to the rules of a file's path.
func (l *loader) link(b *hcl.Block) (model.Link, hcl.Diagnostics) {
	k := model.Link{Entry: model.Entry{Path: b.Labels[0], DeclRange: hclpos.From(b.LabelRanges[0])}}
	var diags hcl.Diagnostics
	if dg := checkPath(k.Path, b.LabelRanges[0]); dg != nil {
		diags = append(diags, dg)
	}
	content, dg := b.Body.Content(linkSchema)
	diags = append(diags, dg...)
	var target *hcl.Attribute
	for _, a := range sortedAttrs(content.Attributes) {
		var dg hcl.Diagnostics
		switch a.Name {
		case "target":
			k.Target, dg = l.str(a)
			target = a
		case "hard":
			k.Hard, dg = l.boolean(a)
		case "user":
			k.User, dg = l.owner(a)
		case "group":
			k.Group, dg = l.owner(a)
		case "on_change":
			k.OnChange, dg = l.policies(a)
		}
		diags = append(diags, dg...)
	}
	if target != nil && !diags.HasErrors() {
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

// pathOwner names what in c already declares p ("the file block at main.hcl:3,8"), or "".
func pathOwner(c *model.Config, p string) string {
	for _, f := range c.Files {
		if f.Path == p {
			return declaredBy("file", f.DeclRange, f.Text)
		}
	}
	for _, d := range c.Directories {
		if d.Path == p {
			return declaredBy("directory", d.DeclRange, d.Text)
		}
	}
	for _, k := range c.Links {
		if k.Path == p {
			return declaredBy("link", k.DeclRange, k.Text)
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
	seen := &model.Config{}
	clash := func(p string, at model.Range) bool {
		if by := pathOwner(seen, p); by != "" {
			diags = append(diags, errAt(*hclpos.Subject(at), "Path declared twice",
				fmt.Sprintf("%s is also declared by %s; a path is one file, directory or link of a config.", untrusted.Line(p), by)))
			return true
		}
		return false
	}
	for _, f := range c.Files {
		if !clash(f.Path, f.DeclRange) {
			seen.Files = append(seen.Files, f)
		}
	}
	for _, d := range c.Directories {
		if !clash(d.Path, d.DeclRange) {
			seen.Directories = append(seen.Directories, d)
		}
	}
	for _, k := range c.Links {
		if !clash(k.Path, k.DeclRange) {
			seen.Links = append(seen.Links, k)
		}
	}
	c.Files, c.Directories, c.Links = seen.Files, seen.Directories, seen.Links
	return diags
}
