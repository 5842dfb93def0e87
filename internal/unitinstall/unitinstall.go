// Package unitinstall reads a systemd unit's [Install] section and names the links
// `systemctl enable` makes for it under /etc/systemd/system: what "enabled" means on a
// running node for mcp (docs/drift.md, "Enabled units"). The configuration refuses
// `enabled = true` on a unit that has no such links to make; the node executor checks the
// links (drift) and the local provider makes them (a node root with no systemd).
//
// Parsing is go-systemd's unit package. As systemd (v236 and later) does, the [Install]
// options of a unit's drop-ins add to the unit file's, in the order given, and an empty
// assignment ("WantedBy=") empties the list so far. Specifiers %n %N %p %i and %% are
// expanded; a name that is still no valid unit name afterwards is skipped, as systemctl
// refuses it.
package unitinstall

import (
	"fmt"
	"strings"
	"sync"

	"github.com/coreos/go-systemd/v22/unit"

	"github.com/mcpfleet/mcp/model"
)

// Info is a unit's [Install] section.
type Info struct {
	WantedBy, RequiredBy, UpheldBy []string // units whose .wants/, .requires/, .upholds/ link to it
	Alias                          []string // other names, linked to it at the top level
	Also                           []string // units enabled with it (not links of its own)
	DefaultInstance                string   // for a template enabled without an instance
}

// Parse reads the [Install] options of a unit file's contents followed by its drop-ins'.
// Results are cached by contents: drift checks ask for the same units on every node.
func Parse(files ...string) (Info, error) {
	key := strings.Join(files, "\x00")
	cache.Lock()
	i, ok := cache.m[key]
	cache.Unlock()
	if ok {
		return i.info, i.err
	}
	info, err := parse(files)
	cache.Lock()
	if len(cache.m) >= maxCached {
		clear(cache.m)
	}
	cache.m[key] = cached{info, err}
	cache.Unlock()
	return info, err
}

// ParseError is a unit file (File 0) or drop-in (File n, in the order given) that
// go-systemd cannot parse.
type ParseError struct {
	File int
	Err  error
}

func (e *ParseError) Error() string {
	if e.File == 0 {
		return "parsing the unit file: " + e.Err.Error()
	}
	return fmt.Sprintf("parsing its drop-in %d: %s", e.File, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

type cached struct {
	info Info
	err  error
}

const maxCached = 512

var cache = struct {
	sync.Mutex
	m map[string]cached
}{m: map[string]cached{}}

func parse(files []string) (Info, error) {
	var i Info
	for n, f := range files {
		opts, err := unit.DeserializeOptions(strings.NewReader(f))
		if err != nil {
			return Info{}, &ParseError{File: n, Err: err}
		}
		for _, o := range opts {
			if o.Section != "Install" {
				continue
			}
			var list *[]string
			switch o.Name {
			case "WantedBy":
				list = &i.WantedBy
			case "RequiredBy":
				list = &i.RequiredBy
			case "UpheldBy":
				list = &i.UpheldBy
			case "Alias":
				list = &i.Alias
			case "Also":
				list = &i.Also
			case "DefaultInstance":
				i.DefaultInstance = strings.TrimSpace(o.Value)
				continue
			default:
				continue
			}
			if strings.TrimSpace(o.Value) == "" {
				*list = nil
				continue
			}
			*list = append(*list, strings.Fields(o.Value)...)
		}
	}
	return i, nil
}

// Installable reports whether `systemctl enable` of name would do anything: the section
// names a unit to link from, an alias or a unit to enable along, or, for a template
// enabled without an instance, a default instance. A unit without is "static": it cannot be
// enabled.
func (i Info) Installable(name string) bool {
	if len(i.WantedBy)+len(i.RequiredBy)+len(i.UpheldBy)+len(i.Alias)+len(i.Also) == 0 {
		return false
	}
	return !IsTemplate(name) || i.DefaultInstance != ""
}

// Links are the symlinks `systemctl enable name` makes, relative to /etc/systemd/system
// ("multi-user.target.wants/a.service", "b.service" for an alias), in the section's order
// without repeats. A template enabled without an instance links its DefaultInstance.
func (i Info) Links(name string) []string {
	link := LinkName(name, i.DefaultInstance)
	if link == "" {
		return nil
	}
	x := expander(link)
	var out []string
	add := func(p string) {
		for _, o := range out {
			if o == p {
				return
			}
		}
		out = append(out, p)
	}
	for _, dep := range []struct {
		units  []string
		suffix string
	}{{i.WantedBy, ".wants/"}, {i.RequiredBy, ".requires/"}, {i.UpheldBy, ".upholds/"}} {
		for _, u := range dep.units {
			if u = x.Replace(u); model.ValidUnitName(u) {
				add(u + dep.suffix + link)
			}
		}
	}
	for _, a := range i.Alias {
		a = x.Replace(a)
		if IsTemplate(a) && Instance(link) != "" {
			a = withInstance(a, Instance(link))
		}
		if model.ValidUnitName(a) && a != link {
			add(a)
		}
	}
	return out
}

// LinkName is the name a unit's links have: the name itself, or for a template the
// instance def ("" when there is none: a template cannot be enabled without one).
func LinkName(name, def string) string {
	if !IsTemplate(name) {
		return name
	}
	if def == "" {
		return ""
	}
	return withInstance(name, def)
}

// IsTemplate reports whether name is a template ("a@.service").
func IsTemplate(name string) bool { return strings.Contains(name, "@.") }

// Instance is the instance of an instance name ("x" of "a@x.service"), "" for others.
func Instance(name string) string {
	at := strings.Index(name, "@")
	dot := strings.LastIndex(name, ".")
	if at < 0 || dot <= at+1 {
		return ""
	}
	return name[at+1 : dot]
}

// Template is the template of an instance name ("a@.service" of "a@x.service"), "" for
// others.
func Template(name string) string {
	if Instance(name) == "" {
		return ""
	}
	at := strings.Index(name, "@")
	return name[:at+1] + name[strings.LastIndex(name, "."):]
}

func withInstance(template, instance string) string {
	at := strings.Index(template, "@")
	return template[:at+1] + instance + template[at+1:]
}

// expander expands the specifiers of an [Install] value for the unit named link.
func expander(link string) *strings.Replacer {
	prefix, _, _ := strings.Cut(link, "@")
	full := link[:max(strings.LastIndex(link, "."), 0)]
	if !strings.Contains(link, "@") {
		prefix = full
	}
	return strings.NewReplacer("%%", "%", "%n", link, "%N", full, "%p", prefix, "%i", Instance(link))
}
