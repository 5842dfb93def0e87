package butane

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/coreos/ignition/v2/config/v3_6/types"

	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/model"
)

// fromIgnition takes what mcp manages out of cfg — files, directories, links, units,
// kernel arguments, the core user's SSH keys — and keeps the rest as the first-boot part.
// A file whose bytes mcp cannot know when it plans (contents from a URL, appended
// fragments) is left in the first-boot part too, and named with why in
// Result.FirstBootFiles; compressed inline contents are decompressed (file). What mcp
// would manage but cannot (an owner by number…) is an error naming it.
func fromIgnition(cfg *types.Config, firstBootOnly func(string) bool) (*Result, []string) {
	res := &Result{Spec: cfg.Ignition.Version}
	inflate := MaxInflated
	var errs []string
	rest := *cfg
	leave := func(p, at string) bool {
		if firstBootOnly(p) {
			res.FirstBootPaths = append(res.FirstBootPaths, fmt.Sprintf("%s (%s)", p, at))
			return true
		}
		return false
	}
	var taken []model.TreeEntry
	rest.Storage.Files = takeEntries(model.EntryFile, cfg.Storage.Files, leave, &taken, &errs, func(f *types.File, at string) (model.TreeEntry, string) {
		if why := unknownBytes(f); why != "" {
			res.FirstBootFiles = append(res.FirstBootFiles, fmt.Sprintf("%s (%s): %s", f.Path, at, why))
			return nil, ""
		}
		return file(f, at, &inflate)
	})
	rest.Storage.Directories = takeEntries(model.EntryDirectory, cfg.Storage.Directories, leave, &taken, &errs, directory)
	rest.Storage.Links = takeEntries(model.EntryLink, cfg.Storage.Links, leave, &taken, &errs, link)
	res.Files, res.Directories, res.Links = model.SplitEntries(taken)
	for i, u := range cfg.Systemd.Units {
		mu := model.Unit{Name: u.Name, Enabled: u.Enabled, Mask: u.Mask != nil && *u.Mask,
			Text: model.TextRef{Path: fmt.Sprintf("systemd.units.%d", i)}}
		if u.Contents != nil {
			mu.Contents = *u.Contents
		}
		for _, d := range u.Dropins {
			md := model.Dropin{Name: d.Name}
			if d.Contents != nil {
				md.Contents = *d.Contents
			}
			mu.Dropins = append(mu.Dropins, md)
		}
		res.Units = append(res.Units, mu)
	}
	for i, k := range cfg.KernelArguments.ShouldExist {
		res.KernelArgs = append(res.KernelArgs, string(k))
		res.KernelArgPaths = append(res.KernelArgPaths, fmt.Sprintf("kernelArguments.shouldExist.%d", i))
	}
	// What is left once the managed parts are taken out is the first-boot part.
	rest.Ignition.Version = ""
	rest.Systemd.Units = nil
	rest.KernelArguments.ShouldExist = nil
	rest.Passwd.Users = coreKeys(res, cfg.Passwd.Users)
	fb, err := ignition.EncodeFirstBoot(&rest)
	if err != nil {
		errs = append(errs, err.Error())
	}
	if fb != nil {
		res.FirstBoot, res.FirstBootParts = fb, parts(&rest)
	}
	return res, errs
}

// takeEntries takes the entries of one storage section of an Ignition config (files,
// directories or links, each an Ignition types.Node) that mcp manages, converted (conv),
// and returns those it leaves to the first-boot part: the entries whose path is first boot
// only (leave), and those conv leaves (nil, no error). An entry conv refuses is an error
// naming it.
func takeEntries[T interface{ Key() string }](kind model.EntryKind, items []T, leave func(p, at string) bool,
	taken *[]model.TreeEntry, errs *[]string, conv func(t *T, at string) (model.TreeEntry, string)) []T {
	var rest []T
	for i := range items {
		p, at := items[i].Key(), fmt.Sprintf("storage.%s.%d", kind.Section(), i)
		if leave(p, at) {
			rest = append(rest, items[i])
			continue
		}
		switch e, err := conv(&items[i], at); {
		case err != "":
			*errs = append(*errs, fmt.Sprintf("%s %s (%s): %s", kind, p, at, err))
		case e == nil:
			rest = append(rest, items[i])
		default:
			*taken = append(*taken, e)
		}
	}
	return rest
}

// coreKeys takes the core user's SSH authorized keys out of users into res, as the MCO
// manages them day 2, and returns the users left: the core user's entry goes when the keys
// were all it set.
func coreKeys(res *Result, users []types.PasswdUser) []types.PasswdUser {
	var out []types.PasswdUser
	for i, u := range users {
		if u.Name != "core" || len(u.SSHAuthorizedKeys) == 0 {
			out = append(out, u)
			continue
		}
		for _, k := range u.SSHAuthorizedKeys {
			res.SSHKeys = append(res.SSHKeys, string(k))
		}
		res.SSHKeysAt = fmt.Sprintf("passwd.users.%d.sshAuthorizedKeys", i)
		u.SSHAuthorizedKeys = nil
		if !isOnlyName(u) {
			out = append(out, u)
		}
	}
	return out
}

// isOnlyName reports whether u sets nothing but its name.
func isOnlyName(u types.PasswdUser) bool {
	u.Name = ""
	return reflect.ValueOf(u).IsZero()
}

// parts names the parts of the first-boot rest for people: each user and group by name,
// and each other section set ("storage.disks").
func parts(rest *types.Config) []string {
	var out []string
	for i, u := range rest.Passwd.Users {
		out = append(out, fmt.Sprintf("passwd.users.%d (user %s)", i, u.Name))
	}
	for i, g := range rest.Passwd.Groups {
		out = append(out, fmt.Sprintf("passwd.groups.%d (group %s)", i, g.Name))
	}
	r := *rest
	r.Passwd = types.Passwd{}
	return append(out, setFields(reflect.ValueOf(r), "")...)
}

// unknownBytes is why mcp cannot know f's bytes when it plans, or "" when it can: its
// contents come from a URL, or it has fragments to append. Ignition fetches and appends
// them on a booting node, as the config says.
func unknownBytes(f *types.File) string {
	var why []string
	c := f.Contents
	if c.Source != nil && !strings.HasPrefix(*c.Source, "data:") {
		why = append(why, "contents from "+*c.Source)
	}
	if len(f.Append) > 0 {
		why = append(why, fmt.Sprintf("%d fragment(s) to append", len(f.Append)))
	}
	return strings.Join(why, ", ")
}

// entry is what n, a file's, directory's or link's Ignition node, has that mcp manages
// (its path and owner), or why mcp cannot manage it.
func entry(n types.Node, at string) (model.Entry, string) {
	e := model.Entry{Path: n.Path, Text: model.TextRef{Path: at}}
	if n.User.ID != nil || n.Group.ID != nil {
		return e, "owner by number: give user and group by name"
	}
	if n.User.Name != nil {
		e.User = *n.User.Name
	}
	if n.Group.Name != nil {
		e.Group = *n.Group.Name
	}
	return e, ""
}

// directory is d as mcp manages it, or why it cannot be.
func directory(d *types.Directory, at string) (model.TreeEntry, string) {
	e, err := entry(d.Node, at)
	md := &model.Directory{Entry: e, Mode: 0o755, Overwrite: d.Overwrite != nil && *d.Overwrite} // Ignition's default mode
	if d.Mode != nil {
		md.Mode = *d.Mode
	}
	return md, err
}

// link is l as mcp manages it, or why it cannot be. A link replaces what is at its path
// (overwrite), as the node executor writes it.
func link(l *types.Link, at string) (model.TreeEntry, string) {
	e, err := entry(l.Node, at)
	ml := &model.Link{Entry: e, Hard: l.Hard != nil && *l.Hard}
	if l.Target == nil || *l.Target == "" {
		return ml, "a link needs a target"
	}
	ml.Target = *l.Target
	return ml, err
}

// Entries are res's files, directories and links, in that order.
func (r *Result) Entries() []model.TreeEntry { return model.Entries(r.Files, r.Directories, r.Links) }

// Texts are the places of res's files, directories, links and units in their text, for
// the caller to complete (the text's kind and file, a place in it).
func (r *Result) Texts() []*model.TextRef {
	var out []*model.TextRef
	for _, e := range r.Entries() {
		out = append(out, &e.Common().Text)
	}
	for i := range r.Units {
		out = append(out, &r.Units[i].Text)
	}
	return out
}
