package machineconfig

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpfleet/mcp/config/butane"
	"github.com/mcpfleet/mcp/internal/unitinstall"
	"github.com/mcpfleet/mcp/model"
)

// HCL writes mcs as mcp configuration: one config block per MachineConfig, named as the
// MachineConfig (so configs merge in the MCO's order, by name), for the pools the
// MachineConfig's role label names (pools overrides the label when not empty). A
// MachineConfig whose pool is known neither way is an error naming it. Warnings name what
// is written differently from the YAML although the node ends up the same, and what is
// first boot only.
func HCL(mcs []MachineConfig, pools []string) (out []byte, warnings []string, err error) {
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	for i, mc := range mcs {
		if i > 0 {
			body.AppendNewline()
		}
		w := &writer{mc: &mc}
		if err := w.config(body, pools); err != nil {
			return nil, nil, fmt.Errorf("MachineConfig %s: %w", mc.Name, err)
		}
		warnings = append(warnings, w.warnings...)
	}
	return hclwrite.Format(f.Bytes()), warnings, nil
}

type writer struct {
	mc       *MachineConfig
	warnings []string
}

func (w *writer) config(body *hclwrite.Body, pools []string) error {
	mc := w.mc
	if len(pools) == 0 {
		if mc.Role == "" {
			return fmt.Errorf("no %s label says its pool: give the pools (mcp import machineconfig -pool NAME)", RoleLabel)
		}
		pools = []string{mc.Role}
	}
	if err := unwritable(mc.Ignition); err != nil {
		return err
	}
	b := body.AppendNewBlock("config", []string{mc.Name}).Body()
	b.SetAttributeValue("pools", strings_(pools))
	if len(mc.KernelArgs) > 0 {
		b.SetAttributeValue("kernel_args", strings_(mc.KernelArgs))
	}
	if mc.OSImage != "" {
		b.SetAttributeValue("os_image", cty.StringVal(mc.OSImage))
	}
	if mc.Ignition == nil {
		return nil
	}
	for _, e := range mc.Ignition.Entries() {
		if d, ok := e.(*model.Directory); ok && d.Overwrite {
			continue // in the ignition attribute: a directory block has no overwrite
		}
		b.AppendNewline()
		entryBlock(b.AppendNewBlock(string(e.Kind()), []string{e.Common().Path}).Body(), e)
	}
	for _, u := range mc.Ignition.Units {
		b.AppendNewline()
		w.unit(b.AppendNewBlock("unit", []string{u.Name}).Body(), &u)
	}
	if len(mc.Ignition.SSHKeys) > 0 {
		b.AppendNewline()
		b.AppendNewBlock("ssh_authorized_keys", nil).Body().SetAttributeValue("keys", strings_(mc.Ignition.SSHKeys))
	}
	ign, err := firstBoot(mc.Ignition)
	if err != nil {
		return err
	}
	if ign != nil {
		if parts := append(slices.Concat(mc.Ignition.FirstBootParts, mc.Ignition.FirstBootPaths), mc.Ignition.FirstBootFiles...); len(parts) > 0 {
			w.warnings = append(w.warnings, fmt.Sprintf("MachineConfig %s: %s: written as the config's ignition attribute, "+
				"first boot only: booting nodes get them, running nodes never do", mc.Name, strings.Join(parts, ", ")))
		}
		b.AppendNewline()
		b.SetAttributeRaw("ignition", text(string(ign)))
	}
	return nil
}

// entryBlock writes e's attributes into its block's body b: what its kind has, its owner,
// a file's contents last.
func entryBlock(b *hclwrite.Body, e model.TreeEntry) {
	mode := func(m int) { b.SetAttributeValue("mode", cty.StringVal(fmt.Sprintf("%04o", m))) }
	switch e := e.(type) {
	case *model.File:
		mode(e.Mode)
	case *model.Directory:
		mode(e.Mode)
	case *model.Link:
		b.SetAttributeValue("target", cty.StringVal(e.Target))
		if e.Hard {
			b.SetAttributeValue("hard", cty.True)
		}
	}
	owner(b, e.Common().User, e.Common().Group)
	if f, ok := e.(*model.File); ok && utf8.Valid(f.Contents) {
		b.SetAttributeRaw("content", text(string(f.Contents)))
	} else if ok {
		// An HCL string is UTF-8 text: other bytes go as base64, as filebase64 gives them.
		b.SetAttributeValue("content_base64", cty.StringVal(base64.StdEncoding.EncodeToString(f.Contents)))
	}
}

func owner(b *hclwrite.Body, user, group string) {
	if user != "" {
		b.SetAttributeValue("user", cty.StringVal(user))
	}
	if group != "" {
		b.SetAttributeValue("group", cty.StringVal(group))
	}
}

// firstBoot is the Ignition config (spec 3.6.0, indented) of what r holds that no block
// says: its first-boot part (users, groups, disks, filesystems, configs to merge, files
// under /home…) and its directories with Ignition's overwrite. nil when there is none.
// mcp reads it back as an ignition attribute: the same parts, first boot only.
func firstBoot(r *butane.Result) ([]byte, error) {
	doc := map[string]any{}
	if r.FirstBoot != nil {
		if err := json.Unmarshal(r.FirstBoot, &doc); err != nil {
			return nil, fmt.Errorf("its first-boot part: %w", err)
		}
	}
	var dirs []any
	for _, d := range r.Directories {
		if !d.Overwrite {
			continue
		}
		e := map[string]any{"path": d.Path, "mode": d.Mode, "overwrite": true}
		if d.User != "" {
			e["user"] = map[string]any{"name": d.User}
		}
		if d.Group != "" {
			e["group"] = map[string]any{"name": d.Group}
		}
		dirs = append(dirs, e)
	}
	if len(dirs) > 0 {
		storage, _ := doc["storage"].(map[string]any)
		if storage == nil {
			storage = map[string]any{}
			doc["storage"] = storage
		}
		old, _ := storage["directories"].([]any)
		storage["directories"] = append(old, dirs...)
	}
	if len(doc) == 0 {
		return nil, nil
	}
	doc["ignition"] = map[string]any{"version": "3.6.0"}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("its first-boot part: %w", err)
	}
	return append(out, '\n'), nil
}

func (w *writer) unit(ub *hclwrite.Body, u *model.Unit) {
	if u.Enabled != nil && *u.Enabled && u.Contents != "" && !u.Mask && !installable(u) {
		// mcp refuses enabled = true where systemctl enable links nothing; on the MCO's
		// nodes it did nothing either (Ignition warns), so the node is the same without it.
		w.warnings = append(w.warnings, fmt.Sprintf("MachineConfig %s: unit %s is enabled but has no [Install] section, "+
			"so enabling it does nothing; enabled is left out", w.mc.Name, u.Name))
	} else if u.Enabled != nil {
		ub.SetAttributeValue("enabled", cty.BoolVal(*u.Enabled))
	}
	if u.Mask {
		ub.SetAttributeValue("mask", cty.True)
	}
	if u.Contents != "" {
		ub.SetAttributeRaw("contents", text(u.Contents))
	}
	for _, d := range u.Dropins {
		ub.AppendNewBlock("dropin", []string{d.Name}).Body().SetAttributeRaw("contents", text(d.Contents))
	}
}

// unwritable names what r declares that HCL cannot say: it must fail, not be left out of
// what is written.
func unwritable(r *butane.Result) error {
	if r != nil && len(r.KernelArgs) > 0 {
		return fmt.Errorf("kernel arguments in spec.config: give them as spec.kernelArguments")
	}
	return nil
}

func strings_(l []string) cty.Value {
	vs := make([]cty.Value, len(l))
	for i, s := range l {
		vs[i] = cty.StringVal(s)
	}
	return cty.ListVal(vs)
}

// text is s as an HCL expression: a heredoc when s is lines of printable text ending in a
// newline (as files and units mostly are), else a quoted string. Either way "${" and "%{"
// are escaped, so the text is taken as it is and not as a template.
func text(s string) hclwrite.Tokens {
	if !heredocable(s) {
		return hclwrite.TokensForValue(cty.StringVal(s))
	}
	delim := "EOT"
	for closes(s, delim) {
		delim += "_"
	}
	body := strings.NewReplacer("${", "$${", "%{", "%%{").Replace(s)
	return hclwrite.Tokens{
		{Type: hclsyntax.TokenOHeredoc, Bytes: []byte("<<" + delim + "\n")},
		{Type: hclsyntax.TokenStringLit, Bytes: []byte(body)},
		{Type: hclsyntax.TokenCHeredoc, Bytes: []byte(delim)},
	}
}

// heredocable: text whose lines a heredoc keeps as they are.
func heredocable(s string) bool {
	if !strings.HasSuffix(s, "\n") || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r == '\r' || (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f {
			return false
		}
	}
	return true
}

// closes: a line of s would end a heredoc delimited by delim (HCL allows space before the
// closing marker).
func closes(s, delim string) bool {
	for _, line := range strings.Split(s, "\n") {
		if strings.TrimSpace(line) == delim {
			return true
		}
	}
	return false
}

func installable(u *model.Unit) bool {
	files := []string{u.Contents}
	for _, d := range u.Dropins {
		files = append(files, d.Contents)
	}
	info, err := unitinstall.Parse(files...)
	return err != nil || info.Installable(u.Name)
}
