package planner

import (
	"fmt"
	"maps"
	"path"
	"strings"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/internal/untrusted"
	"github.com/mcpfleet/mcp/model"
)

// The node agent keeps its own records in content.AgentStateDir (the pending update, the
// config the node runs, the first-boot record). The language refuses a path there as
// written (config's checkAgentPath); here, once a pool's configs are merged, what reaches
// there through the links the pool's configs declare is refused too: a link on the way
// to the records moves them where configs write (a forged "desired" then moves a node
// to another pool's config), and an item whose path leads there through a link is written
// over a record, or deleted with it. Links are read as a CoreOS node has them once all
// are made (model.Land), whichever order they are written in.

// recordsDir is where the node agent keeps its records, and recordsHeld what they are.
const (
	recordsDir  = content.AgentStateDir
	recordsHeld = "(the pending update, the config the node runs, the first-boot record)"
)

// item is a file, directory or link of a rendered config, for the records' check.
type item struct {
	kind, path string
	link       *model.Link // a link's
	at         model.Range
	text       model.TextRef
}

func items(r *model.Rendered) []item {
	var out []item
	for _, e := range r.Entries() {
		n := e.Common()
		k, _ := e.(*model.Link)
		out = append(out, item{kind: string(e.Kind()), path: n.Path, link: k, at: n.DeclRange, text: n.Text})
	}
	return out
}

// records checks one rendered config: its items, its links by where they are made
// (landedLinks), and rel, which gives places as provenance gives them.
type records struct {
	items []item
	links map[string]*model.Link
	read  model.Readlink
	rel   func(model.Origin) model.Origin
}

// recordsDiags refuses what in r reaches the agent's records through r's symbolic links.
func recordsDiags(r *model.Rendered, rel func(model.Origin) model.Origin) model.Diagnostics {
	c := &records{items: items(r), links: landedLinks(r.Links), rel: rel}
	c.read = readlinkIn(c.links)
	var diags model.Diagnostics
	var moving *model.Link
	if rec, err := model.Follow(recordsDir, c.read); len(rec.Via) > 0 {
		moving = c.links[rec.Via[0]]
		diags = append(diags, c.moves(moving, rec, err))
	}
	for _, it := range c.items {
		if it.link != nil && it.link == moving {
			continue
		}
		l, err := model.Land(it.path, c.read)
		switch {
		case err != nil:
		case model.InTree(l.Path, recordsDir) || it.kind != "directory" && model.Above(l.Path, recordsDir):
			diags = append(diags, c.refuse(it, "lands at", l))
		case it.link != nil:
			if t, ok := linkTarget(it.link, l.Path, c.read); ok && model.InTree(t.Path, recordsDir) {
				diags = append(diags, c.refuse(it, "points to", t))
			}
		}
	}
	return diags
}

// refuse is the refusal of it, which what (lands at, points to) l.
func (c *records) refuse(it item, what string, l model.Landing) *model.Diagnostic {
	how := ""
	if len(l.Via) > 0 {
		how = " through " + c.through(l.Via)
	}
	why := "where the node agent keeps its own records " + recordsHeld + ": a config may not reach them"
	switch {
	case model.Above(l.Path, recordsDir):
		why = "which holds " + recordsDir + ", where the node agent keeps its own records " + recordsHeld + ": a config may not replace it"
	case l.Path != recordsDir:
		why = "in " + recordsDir + ", " + why
	}
	return &model.Diagnostic{Severity: model.DiagError, Summary: "Path reaches mcp's own records",
		Detail:  untrusted.Line(fmt.Sprintf("%s %s%s %s %s%s, %s.", capitalizeFirst(it.kind), it.path, c.textPlace(it.text), what, l.Path, how, why)),
		Subject: model.Subject(it.at)}
}

// moves is the refusal of k, a link on the way to the records: where they would be
// instead (rec; err when the walk failed), and what would then be read as one of them.
func (c *records) moves(k *model.Link, rec model.Landing, err error) *model.Diagnostic {
	instead := fmt.Sprintf("the agent would keep them in %s instead", rec.Path)
	if err != nil {
		instead = fmt.Sprintf("the agent could not reach them (%v)", err)
	} else if it, at, ok := c.firstIn(rec.Path); ok {
		instead += fmt.Sprintf(", where %s %s (%s) would be read as its record %s",
			it.kind, it.path, c.place(it.at, it.text), recordsDir+strings.TrimPrefix(at, rec.Path))
	}
	return &model.Diagnostic{Severity: model.DiagError, Summary: "Link moves mcp's own records",
		Detail: untrusted.Line(fmt.Sprintf("Link %s → %s%s is on the way to %s, where the node agent keeps its own records %s: %s. "+
			"A config may not put a link on the way to %s.", k.Path, k.Target, c.textPlace(k.Text), recordsDir, recordsHeld, instead, recordsDir)),
		Subject: model.Subject(k.DeclRange)}
}

// firstIn is the first item (files first, then directories, then links) that lands under
// dir, and where.
func (c *records) firstIn(dir string) (item, string, bool) {
	for _, it := range c.items {
		if l, err := model.Land(it.path, c.read); err == nil && l.Path != dir && model.InTree(l.Path, dir) {
			return it, l.Path, true
		}
	}
	return item{}, "", false
}

// through names the links a walk followed, each with its target and where it is declared.
func (c *records) through(via []string) string {
	parts := make([]string, 0, len(via))
	for _, p := range via {
		k := c.links[p]
		place := c.place(k.DeclRange, k.Text)
		if k.DeclRange.Filename == "" {
			place = "the OS's own, on CoreOS"
		}
		parts = append(parts, fmt.Sprintf("%s → %s (%s)", k.Path, k.Target, place))
	}
	if len(parts) == 1 {
		return "the link " + parts[0]
	}
	return "the links " + strings.Join(parts, ", then ")
}

// place is where an item is declared, as provenance names it.
func (c *records) place(at model.Range, text model.TextRef) string {
	return c.rel(model.OriginAt("", at, text)).Place()
}

// textPlace names an item's place in its Butane, Ignition or MachineConfig text, when it
// has one.
func (c *records) textPlace(t model.TextRef) string {
	if t.Path == "" {
		return ""
	}
	return " (" + t.Path + ")"
}

// linkTarget is where k's target leads, k being at at: a symbolic link's target followed
// from its directory, a hard link's as the path of a file.
func linkTarget(k *model.Link, at string, read model.Readlink) (model.Landing, bool) {
	if k.Hard {
		l, err := model.Land(k.Target, read)
		return l, err == nil
	}
	t := k.Target
	if !path.IsAbs(t) {
		t = path.Join(path.Dir(at), t)
	}
	l, err := model.Follow(t, read)
	return l, err == nil
}

// landedLinks is the links a node of r's pool has once r's are made, by the path each is
// at: CoreOS's own (model.CoreOSLinks), and r's symbolic links, a link declared under
// another link's path being made through it. The walk is repeated until no link moves (a
// link moved moves those declared under it).
func landedLinks(links []model.Link) map[string]*model.Link {
	base := map[string]*model.Link{}
	for p, t := range model.CoreOSLinks {
		base[p] = &model.Link{Entry: model.Entry{Path: p}, Target: t}
	}
	at := maps.Clone(base)
	for i := range links {
		if !links[i].Hard {
			at[links[i].Path] = &links[i]
		}
	}
	for range len(links) {
		next, read := maps.Clone(base), readlinkIn(at)
		for i := range links {
			if k := &links[i]; !k.Hard {
				next[landedAt(k, read)] = k
			}
		}
		if maps.Equal(next, at) {
			break
		}
		at = next
	}
	return at
}

// landedAt is where k is made through the links read knows (its declared path when the
// walk fails: it is not made at all then).
func landedAt(k *model.Link, read model.Readlink) string {
	l, err := model.Land(k.Path, read)
	if err != nil {
		return k.Path
	}
	return l.Path
}

func readlinkIn(at map[string]*model.Link) model.Readlink {
	return func(p string) (string, bool, error) {
		if k := at[p]; k != nil {
			return k.Target, true, nil
		}
		return "", false, nil
	}
}
