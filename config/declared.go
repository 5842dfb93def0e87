package config

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpfleet/mcp/config/butane"
	"github.com/mcpfleet/mcp/config/machineconfig"
	"github.com/mcpfleet/mcp/model"
)

// refusals are the items of what a Butane text, an Ignition config or a MachineConfig's
// spec.config declares (res) that a config's own blocks could not declare either — a path
// outside the managed trees or no file system holds, a link target, a unit or drop-in
// name, a kernel argument, an SSH key — each at its place in the Ignition config. The
// butane and ignition attributes report them on the attribute; the MachineConfig reader
// at their line and column in the YAML (MachineConfigChecks), so that mcp import never
// writes what validate would refuse.
func refusals(res *butane.Result) []machineconfig.Refusal {
	var out []machineconfig.Refusal
	add := func(field, summary, format string, args ...any) {
		out = append(out, machineconfig.Refusal{Field: field, Summary: summary, Message: fmt.Sprintf(format, args...)})
	}
	diag := func(field, what string, d *hcl.Diagnostic) {
		add(field, d.Summary, "%s (%s): %s", what, field, strings.TrimSuffix(d.Detail, "."))
	}
	owners := func(field, what, user, group string) {
		for _, o := range [][2]string{{"user", user}, {"group", group}} {
			if why := model.OwnerNameProblem(o[1]); why != "" {
				add(field, "Invalid "+o[0], "%s (%s): %s %q %s", what, field, o[0], o[1], why)
				return
			}
		}
	}
	for _, e := range res.Entries() {
		n := e.Common()
		what := string(e.Kind()) + " " + n.Path
		if dg := entryProblem(e); dg != nil {
			if e.Kind() == model.EntryFile {
				what = n.Path // its detail says "File path"
			}
			diag(n.Text.Path, what, dg)
		} else {
			owners(n.Text.Path, what, n.User, n.Group)
		}
	}
	for _, u := range res.Units {
		if msg := unitNameProblem(u.Name); msg != "" {
			add(u.Text.Path, "Invalid unit name", "unit %s (%s): %s", u.Name, u.Text.Path, msg)
		}
		for i, d := range u.Dropins {
			if msg := dropinNameProblem(d.Name); msg != "" {
				at := fmt.Sprintf("%s.dropins.%d", u.Text.Path, i)
				add(at, "Invalid drop-in name", "unit %s drop-in %q (%s): %s", u.Name, d.Name, at, msg)
			}
		}
	}
	for i, k := range res.KernelArgs {
		if why := model.KernelArgEntryProblem(k); why != "" {
			add(res.KernelArgPaths[i], "Invalid kernel argument", "kernel argument %q (%s) %s", k, res.KernelArgPaths[i], why)
		}
	}
	for i, k := range res.SSHKeys {
		if why := model.SSHKeyProblem(k); why != "" {
			at := fmt.Sprintf("%s.%d", res.SSHKeysAt, i)
			add(at, "Invalid SSH key", "the core user's SSH key %d (%s) %s", i+1, at, why)
		}
	}
	for _, u := range firstBootKeys(res.FirstBoot) {
		for i, k := range u.Keys {
			if why := model.SSHKeyProblem(k); why != "" {
				add("passwd.users", "Invalid SSH key", "user %s's SSH key %d (passwd.users) %s", u.Name, i+1, why)
			}
		}
	}
	return out
}

// entryProblem is what a config's own block could not declare of e, but its owner: its
// path, a link's target.
func entryProblem(e model.TreeEntry) *hcl.Diagnostic {
	if dg := checkPath(e.Common().Path, hcl.Range{}); dg != nil {
		return dg
	}
	if k, ok := e.(*model.Link); ok {
		return checkLinkTarget(k.Target, k.Hard, hcl.Range{})
	}
	return nil
}

// keyedUser is a user of a first-boot part, with the SSH keys Ignition writes for it at
// first boot, a line each, as the core user's are written day 2.
type keyedUser struct {
	Name string   `json:"name"`
	Keys []string `json:"sshAuthorizedKeys"`
}

// firstBootKeys are the users of a first-boot part (Ignition JSON) with their SSH keys.
func firstBootKeys(fb []byte) []keyedUser {
	var doc struct {
		Passwd struct {
			Users []keyedUser `json:"users"`
		} `json:"passwd"`
	}
	if len(fb) == 0 || json.Unmarshal(fb, &doc) != nil {
		return nil
	}
	return doc.Passwd.Users
}

// MachineConfigChecks are what the MachineConfig reader holds a MachineConfig's spec.config
// to, as the machineconfig attribute and mcp import read it: the paths left to first boot
// (FirstBootOnly), and what a config's own blocks could not declare (refusals).
func MachineConfigChecks() machineconfig.Checks {
	return machineconfig.Checks{FirstBootOnly: FirstBootOnly, Refuse: refusals}
}
