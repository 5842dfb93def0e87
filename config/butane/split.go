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
	rest.Storage.Files, rest.Storage.Directories, rest.Storage.Links = nil, nil, nil
	leave := func(p, at string) bool {
		if firstBootOnly(p) {
			res.FirstBootPaths = append(res.FirstBootPaths, fmt.Sprintf("%s (%s)", p, at))
			return true
		}
		return false
	}
	for i, f := range cfg.Storage.Files {
		at := fmt.Sprintf("storage.files.%d", i)
		if leave(f.Path, at) {
			rest.Storage.Files = append(rest.Storage.Files, f)
			continue
		}
		if why := unknownBytes(&f); why != "" {
			res.FirstBootFiles = append(res.FirstBootFiles, fmt.Sprintf("%s (%s): %s", f.Path, at, why))
			rest.Storage.Files = append(rest.Storage.Files, f)
			continue
		}
		mf, err := file(&f, at, &inflate)
		if err != "" {
			errs = append(errs, fmt.Sprintf("file %s (%s): %s", f.Path, at, err))
			continue
		}
		res.Files = append(res.Files, mf)
	}
	for i, d := range cfg.Storage.Directories {
		at := fmt.Sprintf("storage.directories.%d", i)
		if leave(d.Path, at) {
			rest.Storage.Directories = append(rest.Storage.Directories, d)
			continue
		}
		md, err := directory(&d, at)
		if err != "" {
			errs = append(errs, fmt.Sprintf("directory %s (%s): %s", d.Path, at, err))
			continue
		}
		res.Directories = append(res.Directories, md)
	}
	for i, l := range cfg.Storage.Links {
		at := fmt.Sprintf("storage.links.%d", i)
		if leave(l.Path, at) {
			rest.Storage.Links = append(rest.Storage.Links, l)
			continue
		}
		ml, err := link(&l, at)
		if err != "" {
			errs = append(errs, fmt.Sprintf("link %s (%s): %s", l.Path, at, err))
			continue
		}
		res.Links = append(res.Links, ml)
	}
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

// directory is d as mcp manages it, or why it cannot be.
func directory(d *types.Directory, at string) (model.Directory, string) {
	md := model.Directory{Entry: model.Entry{Path: d.Path, Text: model.TextRef{Path: at}}, Mode: 0o755} // Ignition's default mode
	if d.Mode != nil {
		md.Mode = *d.Mode
	}
	md.Overwrite = d.Overwrite != nil && *d.Overwrite
	var err string
	md.User, md.Group, err = owner(d.User, d.Group)
	return md, err
}

// link is l as mcp manages it, or why it cannot be. A link replaces what is at its path
// (overwrite), as the node executor writes it.
func link(l *types.Link, at string) (model.Link, string) {
	ml := model.Link{Entry: model.Entry{Path: l.Path, Text: model.TextRef{Path: at}}, Hard: l.Hard != nil && *l.Hard}
	if l.Target == nil || *l.Target == "" {
		return ml, "a link needs a target"
	}
	ml.Target = *l.Target
	var err string
	ml.User, ml.Group, err = owner(l.User, l.Group)
	return ml, err
}

func owner(u types.NodeUser, g types.NodeGroup) (user, group, err string) {
	if u.ID != nil || g.ID != nil {
		return "", "", "owner by number: give user and group by name"
	}
	if u.Name != nil {
		user = *u.Name
	}
	if g.Name != nil {
		group = *g.Name
	}
	return user, group, ""
}

// Texts are the places of res's files, directories, links and units in their text, for
// the caller to complete (the text's kind and file, a place in it).
func (r *Result) Texts() []*model.TextRef {
	var out []*model.TextRef
	for i := range r.Files {
		out = append(out, &r.Files[i].Text)
	}
	for i := range r.Directories {
		out = append(out, &r.Directories[i].Text)
	}
	for i := range r.Links {
		out = append(out, &r.Links[i].Text)
	}
	for i := range r.Units {
		out = append(out, &r.Units[i].Text)
	}
	return out
}
