package config

import (
	"encoding/base64"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mcpfleet/mcp/internal/hclpos"
	"github.com/mcpfleet/mcp/internal/suggest"
	"github.com/mcpfleet/mcp/internal/unitinstall"
	"github.com/mcpfleet/mcp/model"
)

var unitSuffixes = []string{".service", ".socket", ".timer", ".target", ".mount", ".automount",
	".path", ".slice", ".scope", ".swap", ".device"}

var poolSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "node_selector"}, {Name: "max_unavailable"}, {Name: "paused"},
		{Name: "os_image"}, {Name: "kernel_args"}, {Name: "drain_timeout"},
		{Name: "max_failures"}, {Name: "soak"}, {Name: "on_drift"}, {Name: "order"}, {Name: "on_failure"},
		{Name: "max_staging"}},
	Blocks: []hcl.BlockHeaderSchema{{Type: "boot_image"}, {Type: "health_check", LabelNames: []string{"name"}},
		{Type: "canary"}, {Type: "window"}, {Type: "alert_gate"}},
}

func (l *loader) pools(blocks hcl.Blocks) hcl.Diagnostics {
	var diags hcl.Diagnostics
	names := newLabels("pool")
	for _, b := range blocks {
		if d := names.declare(b); d != nil {
			diags = append(diags, d)
			continue
		}
		name := b.Labels[0]
		if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
			diags = append(diags, errAt(b.LabelRanges[0], "Invalid pool name",
				fmt.Sprintf("Pool %q: %s. A pool's name is part of its rendered configs' names (files of the state, "+
					"Secrets) and of its default node-role label: a DNS-1123 label, such as \"worker\" or \"infra-2\".",
					name, strings.Join(errs, "; "))))
		}
		p := model.Pool{Name: name, MaxUnavailable: model.IntOrPercent{Value: 1}, DeclRange: hclpos.From(b.DefRange),
			NodeSelector: map[string]string{"node-role.kubernetes.io/" + name: ""}, BootImage: model.BootImage{Policy: model.BootImageManaged, Skew: model.SkewWarn},
			Pacing: model.Pacing{MaxFailures: 1}, Order: model.Order{By: model.OrderOldest}}
		content, d := readAttrs(b.Body, poolSchema, func(a *hcl.Attribute) (d hcl.Diagnostics) {
			switch a.Name {
			case "node_selector":
				p.NodeSelector, d = l.kubeLabels(a)
				if len(p.NodeSelector) == 0 && !d.HasErrors() {
					d = append(d, errAt(a.Expr.Range(), "Empty node_selector", "A pool must select its nodes by at least one label."))
				}
			case "max_unavailable":
				p.MaxUnavailable, d = l.maxUnavailable(a)
			case "paused":
				p.Paused, d = l.paused(a)
			case "order":
				p.Order, d = l.order(a)
			case "os_image":
				p.OSImage, d = l.osImage(a)
			case "kernel_args":
				p.KernelArgs, d = l.kernelArgs(a)
				p.KernelArgsRange = hclpos.From(a.Expr.Range())
			case "drain_timeout":
				p.DrainTimeout, d = l.duration(a)
			case "max_failures":
				p.Pacing.MaxFailures, d = l.atLeastOne(a)
			case "soak":
				p.Pacing.Soak, d = l.duration(a)
			case "max_staging":
				var n int
				n, d = l.wholeFrom(a, 0)
				p.Pacing.MaxStaging = &n
			case "on_drift":
				p.OnDrift, d = enumOr(l, a, model.OnDriftRestore, "Invalid on_drift",
					"on_drift %q: use \"restore\" (plan the steps that put drift back) or \"report\" (show it, plan nothing).",
					model.OnDriftRestore, model.OnDriftReport)
			case "on_failure":
				p.OnFailure, d = enumOr(l, a, model.OnFailureStop, "Invalid on_failure",
					"on_failure %q: use \"stop\" (a failure stops the pool's rollout) or \"revert\" (it stops, and the nodes the apply changed go back to the config they ran before).",
					model.OnFailureStop, model.OnFailureRevert)
			}
			return d
		})
		diags = append(diags, d...)
		var canary *hcl.Block
		checks := newLabels("health_check")
		for _, bb := range content.Blocks {
			switch bb.Type {
			case "boot_image":
				if p.BootImage.Declared {
					diags = append(diags, duplicate("boot_image block", "", bb.DefRange, *hclpos.Subject(p.BootImage.DeclRange)))
					continue
				}
				bi, d := l.bootImage(name, bb)
				diags = append(diags, d...)
				p.BootImage = bi
			case "health_check":
				if d := checks.declare(bb); d != nil {
					diags = append(diags, d)
					continue
				}
				h, d := l.healthCheck(bb)
				diags = append(diags, d...)
				p.HealthChecks = append(p.HealthChecks, h)
			case "canary":
				if canary != nil {
					diags = append(diags, errAt(bb.DefRange, "Duplicate canary block",
						fmt.Sprintf("Pool %q has a canary block already, at %s.", name, posOf(canary.DefRange))))
					continue
				}
				canary = bb
				diags = append(diags, l.canary(bb, &p.Pacing)...)
			case "window":
				w, d := l.window(bb)
				diags = append(diags, d...)
				p.Windows = append(p.Windows, w)
			case "alert_gate":
				if p.AlertGate != nil {
					diags = append(diags, duplicate("alert_gate block", "", bb.DefRange, *hclpos.Subject(p.AlertGate.DeclRange)))
					continue
				}
				g, d := l.alertGate(bb)
				diags = append(diags, d...)
				p.AlertGate = g
			}
		}
		l.d.Pools = append(l.d.Pools, p)
	}
	slices.SortFunc(l.d.Pools, func(a, b model.Pool) int { return strings.Compare(a.Name, b.Name) })
	return diags
}

// readAttrs reads body by schema and hands each of its attributes to read, in the order
// written; the diagnostics are the body's and read's.
func readAttrs(body hcl.Body, schema *hcl.BodySchema, read func(*hcl.Attribute) hcl.Diagnostics) (*hcl.BodyContent, hcl.Diagnostics) {
	content, diags := body.Content(schema)
	for _, a := range sortedAttrs(content.Attributes) {
		diags = append(diags, read(a)...)
	}
	return content, diags
}

func sortedAttrs(m hcl.Attributes) []*hcl.Attribute {
	out := make([]*hcl.Attribute, 0, len(m))
	for _, a := range m {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *hcl.Attribute) int { return a.Range.Start.Byte - b.Range.Start.Byte })
	return out
}

// maxUnavailable reads a whole number >= 1 or "N%" with 1 <= N <= 100; nothing else (a
// number in a string is refused, as Kubernetes' IntOrString refuses it).
func (l *loader) maxUnavailable(a *hcl.Attribute) (model.IntOrPercent, hcl.Diagnostics) {
	v, diags := l.eval(a)
	if v == cty.NilVal {
		return model.IntOrPercent{Value: 1}, diags
	}
	bad := errAt(a.Expr.Range(), "Invalid max_unavailable",
		"max_unavailable must be a whole number of nodes, at least 1, or a percentage from 1% to 100% such as \"10%\".")
	switch {
	case v.Type() == cty.Number:
		bf := v.AsBigFloat()
		n, acc := bf.Int64()
		if !bf.IsInt() || acc != 0 || n < 1 {
			return model.IntOrPercent{Value: 1}, append(diags, bad)
		}
		return model.IntOrPercent{Value: int(n)}, diags
	case v.Type() == cty.String:
		s := v.AsString()
		if num, ok := strings.CutSuffix(s, "%"); ok {
			n, err := strconv.Atoi(num)
			if err != nil || n < 1 || n > 100 {
				return model.IntOrPercent{Value: 1}, append(diags, bad)
			}
			return model.IntOrPercent{Value: n, Percent: true}, diags
		}
		// As Kubernetes' IntOrString: a string is a percentage, never a count. "50" could
		// be a typo for "50%", and a count of 50 reboots a small pool at once.
		if _, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
			return model.IntOrPercent{Value: 1}, append(diags, errAt(a.Expr.Range(), "Invalid max_unavailable",
				fmt.Sprintf("max_unavailable = %q is a string without %%: a string must be a percentage such as \"%s%%\"; "+
					"a number of nodes is written without quotes (max_unavailable = %s; a variable giving it needs type = number).",
					s, strings.TrimSpace(s), strings.TrimSpace(s))))
		}
		return model.IntOrPercent{Value: 1}, append(diags, bad)
	}
	return model.IntOrPercent{Value: 1}, append(diags, bad)
}

var configSchema = &hcl.BodySchema{
	// pools is required unless machineconfig is given (its role label then names the pool).
	Attributes: []hcl.AttributeSchema{{Name: "pools"}, {Name: "kernel_args"}, {Name: "os_image"}, {Name: "butane"},
		{Name: "butane_files_dir"}, {Name: "ignition"}, {Name: "machineconfig"}, {Name: "nodes"}, {Name: "node_selector"}},
	Blocks: []hcl.BlockHeaderSchema{{Type: "file", LabelNames: []string{"path"}},
		{Type: "unit", LabelNames: []string{"name"}}, {Type: "directory", LabelNames: []string{"path"}},
		{Type: "link", LabelNames: []string{"path"}}, {Type: "ssh_authorized_keys"}},
}

func (l *loader) configs(blocks hcl.Blocks) hcl.Diagnostics {
	_, diags := eachBlock("config", blocks, configSchema, func(b *hcl.Block, content *hcl.BodyContent) (diags hcl.Diagnostics) {
		var d hcl.Diagnostics
		name := b.Labels[0]
		c := model.Config{Name: name, DeclRange: hclpos.From(b.DefRange)}
		if a := content.Attributes["pools"]; a != nil {
			c.Pools, d = l.strList(a)
			diags = append(diags, d...)
			for i, p := range c.Pools {
				if l.d.Pool(p) == nil {
					diags = append(diags, errAt(elementRange(a, i), "Unknown pool",
						fmt.Sprintf("Config %q names pool %q, which no pool block declares.%s", name, p, didYouMean(p, l.poolNames()))))
				}
			}
		}
		diags = append(diags, l.configTarget(content.Attributes, &c)...)
		if a := content.Attributes["kernel_args"]; a != nil {
			c.KernelArgs, d = l.kernelArgs(a)
			diags = append(diags, d...)
			for i := range c.KernelArgs {
				c.KernelArgSources = append(c.KernelArgSources, model.Source{Range: hclpos.From(elementRange(a, i))})
			}
		}
		if a := content.Attributes["os_image"]; a != nil {
			c.OSImage, d = l.osImage(a)
			diags = append(diags, d...)
		}
		inner := map[string]labels{"file": newLabels("file"), "unit": newLabels("unit"),
			"directory": newLabels("directory"), "link": newLabels("link")}
		var keys *hcl.Block
		for _, bb := range content.Blocks {
			if bb.Type == "ssh_authorized_keys" {
				if keys != nil {
					diags = append(diags, duplicate("ssh_authorized_keys block", "", bb.DefRange, keys.DefRange))
					continue
				}
				keys = bb
				diags = append(diags, l.sshKeys(bb, &c)...)
				continue
			}
			if d := inner[bb.Type].declare(bb); d != nil {
				diags = append(diags, d)
				continue
			}
			switch bb.Type {
			case "directory":
				dir, d := l.directory(bb)
				diags = append(diags, d...)
				c.Directories = append(c.Directories, dir)
			case "link":
				k, d := l.link(bb)
				diags = append(diags, d...)
				c.Links = append(c.Links, k)
			case "file":
				f, d := l.file(bb)
				diags = append(diags, d...)
				c.Files = append(c.Files, f)
			case "unit":
				u, d := l.unit(bb)
				diags = append(diags, d...)
				c.Units = append(c.Units, u)
			}
		}
		d, role := l.texts(content.Attributes, &c)
		diags = append(diags, d...)
		if a := content.Attributes["machineconfig"]; a != nil && role {
			diags = append(diags, errAt(a.NameRange, "Two MachineConfigs", fmt.Sprintf(
				"Config %q has a machineconfig and a butane attribute of variant openshift, which is a MachineConfig too: "+
					"a config block takes one MachineConfig, as the MCO merges each by its own name; give each its own config block.", name)))
		} else if a != nil {
			diags = append(diags, l.machineConfig(a, content.Attributes["pools"], &c)...)
		} else if content.Attributes["pools"] == nil && !role {
			diags = append(diags, errAt(b.DefRange, "Missing required argument",
				fmt.Sprintf("Config %q needs pools = [\"…\"], the pools it applies to (or a machineconfig, or a Butane text of variant openshift, whose role label names one).", name)))
		}
		diags = append(diags, clashes(&c)...)
		l.d.Configs = append(l.d.Configs, c)
		return diags
	})
	slices.SortFunc(l.d.Configs, func(a, b model.Config) int { return strings.Compare(a.Name, b.Name) })
	return diags
}

func checkPath(p string, r hcl.Range) *hcl.Diagnostic {
	if why := model.NodePathProblem(p); why != "" {
		return errAt(r, "Invalid path", fmt.Sprintf("File path %q %s.", p, why))
	}
	if !strings.HasPrefix(p, "/") {
		return errAt(r, "Relative path", fmt.Sprintf("File path %q must be absolute, as in \"/etc/…\".", p))
	}
	if path.Clean(p) != p || strings.Contains(p, "/../") {
		return errAt(r, "Unclean path", fmt.Sprintf("File path %q must be clean: no \"..\", \".\", doubled or trailing slashes.", p))
	}
	if why := model.Unmanaged(p); why != "" {
		return errAt(r, "Path outside the managed trees", fmt.Sprintf("File path %q: %s.", p, why))
	}
	// Files, directories and links alike: the agent's own records are not a config's.
	return checkAgentPath(p, r)
}

var fileSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "content"}, {Name: "content_base64"},
	{Name: "mode"}, {Name: "user"}, {Name: "group"}, {Name: "on_change"}, {Name: "sensitive"}}}

func (l *loader) file(b *hcl.Block) (model.File, hcl.Diagnostics) {
	f := model.File{Mode: 0o644}
	attrs, diags := l.entry(b, fileSchema, &f.Entry, func(a *hcl.Attribute) (d hcl.Diagnostics) {
		switch a.Name {
		case "content":
			var s string
			l.secrets.inContent = true
			s, d = l.str(a)
			l.secrets.inContent = false
			f.Contents = []byte(s)
		case "content_base64":
			f.Contents, d = l.base64(a)
		case "mode":
			f.Mode, d = l.mode(a)
		case "sensitive":
			f.Sensitive, d = l.boolean(a)
		}
		return d
	})
	if d := oneContent(f.Path, b, attrs); d != nil {
		diags = append(diags, d)
	}
	l.fileSecrets(&f, attrs["content"])
	l.fileSecrets(&f, attrs["content_base64"])
	return f, diags
}

// oneContent refuses a file block without content and content_base64, or with both.
func oneContent(p string, b *hcl.Block, attrs hcl.Attributes) *hcl.Diagnostic {
	text, bin := attrs["content"], attrs["content_base64"]
	switch {
	case text == nil && bin == nil:
		return errAt(b.LabelRanges[0], "Missing file content", fmt.Sprintf(
			"File %q needs content (UTF-8 text) or content_base64 (any bytes, base64-encoded, as filebase64(\"…\") gives them).", p))
	case text != nil && bin != nil:
		second := bin
		if bin.Range.Start.Byte < text.Range.Start.Byte {
			second = text
		}
		return errAt(second.NameRange, "Conflicting file content", fmt.Sprintf(
			"File %q sets both content and content_base64: give one (content for UTF-8 text, content_base64 for any bytes).", p))
	}
	return nil
}

// base64 reads standard base64 (RFC 4648, padded; line breaks ignored), as Terraform's
// content_base64 and filebase64: the way to give bytes that are not UTF-8 text, which
// HCL strings cannot hold.
func (l *loader) base64(a *hcl.Attribute) ([]byte, hcl.Diagnostics) {
	s, diags := l.str(a)
	if diags.HasErrors() {
		return nil, diags
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, append(diags, errAt(a.Expr.Range(), "Invalid content_base64",
			fmt.Sprintf("content_base64 is not standard base64 (%v): give filebase64(\"FILE\") or base64encode(TEXT).", err)))
	}
	return b, diags
}

// mode reads an octal string ("0644") or a number (decimal, as Ignition's JSON has it).
func (l *loader) mode(a *hcl.Attribute) (int, hcl.Diagnostics) {
	v, diags := l.eval(a)
	if v == cty.NilVal {
		return 0o644, diags
	}
	bad := errAt(a.Expr.Range(), "Invalid mode", `mode must be an octal string from "0000" to "7777", such as "0644".`)
	var m int64
	switch v.Type() {
	case cty.String:
		n, err := strconv.ParseInt(v.AsString(), 8, 32)
		if err != nil {
			return 0o644, append(diags, bad)
		}
		m = n
	case cty.Number:
		n, acc := v.AsBigFloat().Int64()
		if acc != 0 {
			return 0o644, append(diags, bad)
		}
		m = n
	default:
		return 0o644, append(diags, bad)
	}
	if m < 0 || m > 0o7777 {
		return 0o644, append(diags, bad)
	}
	return int(m), diags
}

// policyKinds are the on_change policies' kinds, for a suggestion.
var policyKinds = []string{"none", "reload", "restart", "daemon-reload", "drain", "reboot"}

// policySuggestion is " Did you mean "restart:chronyd.service"?" for a policy whose kind
// is misspelt ("restrt:chronyd.service"), its unit kept.
func policySuggestion(s string) string {
	kind, unit, hasUnit := strings.Cut(s, ":")
	best := suggest.Nearest(kind, policyKinds)
	if best == "" {
		return ""
	}
	if hasUnit {
		best += ":" + unit
	}
	return fmt.Sprintf(" Did you mean %q?", best)
}

func (l *loader) policies(a *hcl.Attribute) ([]model.Policy, hcl.Diagnostics) {
	list, diags := l.strList(a)
	var out []model.Policy
	for i, s := range list {
		p, err := model.ParsePolicy(s)
		if err != nil {
			diags = append(diags, errAt(elementRange(a, i), "Invalid on_change policy", err.Error()+"."+policySuggestion(s)))
			continue
		}
		out = append(out, p)
	}
	return out, diags
}

var unitSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "enabled"}, {Name: "mask"}, {Name: "contents"}, {Name: "on_change"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "dropin", LabelNames: []string{"name"}}},
}

func (l *loader) unit(b *hcl.Block) (model.Unit, hcl.Diagnostics) {
	u := model.Unit{Name: b.Labels[0], DeclRange: hclpos.From(b.LabelRanges[0])}
	var diags hcl.Diagnostics
	if msg := unitNameProblem(u.Name); msg != "" {
		diags = append(diags, errAt(b.LabelRanges[0], "Invalid unit name", fmt.Sprintf("Unit %q %s.", u.Name, msg)))
	}
	var enabled *hcl.Attribute
	content, d := readAttrs(b.Body, unitSchema, func(a *hcl.Attribute) (d hcl.Diagnostics) {
		switch a.Name {
		case "enabled":
			var e bool
			e, d = l.boolean(a)
			u.Enabled, enabled = &e, a
		case "mask":
			u.Mask, d = l.boolean(a)
		case "contents":
			u.Contents, d = l.str(a)
		case "on_change":
			u.OnChange, d = l.policies(a)
		}
		return d
	})
	diags = append(diags, d...)
	l.reach(u.Name, content.Attributes)
	_, d = eachBlock("dropin", content.Blocks, dropinSchema, func(db *hcl.Block, dc *hcl.BodyContent) (diags hcl.Diagnostics) {
		name := db.Labels[0]
		if msg := dropinNameProblem(name); msg != "" {
			diags = append(diags, errAt(db.LabelRanges[0], "Invalid drop-in name", fmt.Sprintf("Drop-in %q %s.", name, msg)))
		}
		l.reach(u.Name, dc.Attributes)
		dr := model.Dropin{Name: name}
		if a := dc.Attributes["contents"]; a != nil {
			var d hcl.Diagnostics
			dr.Contents, d = l.str(a)
			diags = append(diags, d...)
		}
		u.Dropins = append(u.Dropins, dr)
		return diags
	})
	diags = append(diags, d...)
	if u.Contents == "" && len(u.Dropins) == 0 && !u.Mask && u.Enabled == nil {
		diags = append(diags, errAt(b.DefRange, "Empty unit", fmt.Sprintf("Unit %q sets nothing: give contents, a dropin, mask or enabled.", u.Name)))
	}
	if d := notInstallable(&u, enabled); d != nil {
		diags = append(diags, d)
	}
	return u, diags
}

var dropinSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "contents", Required: true}}}

// notInstallable refuses enabled = true on a unit whose contents (with its drop-ins) have
// no [Install] section that links it from anything: systemctl enable does nothing for it,
// so enabled could never be true on the node (Ignition only warns). A unit without
// contents is the OS's: what it installs is known on the node only.
func notInstallable(u *model.Unit, enabled *hcl.Attribute) *hcl.Diagnostic {
	if enabled == nil || u.Enabled == nil || !*u.Enabled || u.Contents == "" || u.Mask {
		return nil
	}
	files := []string{u.Contents}
	for _, d := range u.Dropins {
		files = append(files, d.Contents)
	}
	info, err := unitinstall.Parse(files...)
	if err != nil || info.Installable(u.Name) {
		return nil // contents that do not parse are the Ignition validation's to report
	}
	what := "no [Install] section naming what to link it from (WantedBy=, RequiredBy=, UpheldBy=, Alias= or Also=)"
	if unitinstall.IsTemplate(u.Name) && len(info.WantedBy)+len(info.RequiredBy)+len(info.UpheldBy)+len(info.Alias)+len(info.Also) > 0 {
		what = "no DefaultInstance= in its [Install] section, and a template is enabled only as an instance (name it \"" +
			strings.Replace(u.Name, "@.", "@INSTANCE.", 1) + "\")"
	}
	return errAt(enabled.Expr.Range(), "Unit cannot be enabled", fmt.Sprintf(
		"Unit %q is enabled, but its contents have %s: systemctl enable would link nothing, so it could never be enabled on a node. "+
			"Add the [Install] section, or drop enabled (a unit another pulls in, with Wants= or as a dependency, needs none).", u.Name, what))
}

// unitNameProblem says what is wrong with a unit's name ("" when nothing is).
func unitNameProblem(name string) string {
	if !slices.ContainsFunc(unitSuffixes, func(s string) bool { return strings.HasSuffix(name, s) && len(name) > len(s) }) ||
		!model.ValidUnitName(name) {
		return fmt.Sprintf("needs a systemd unit suffix (%s) and no slash, space or control character", strings.Join(unitSuffixes, " "))
	}
	return ""
}

// dropinNameProblem says what is wrong with a drop-in's name ("" when nothing is): a file
// name in the unit's .d directory, ending in .conf.
func dropinNameProblem(name string) string {
	if !strings.HasSuffix(name, ".conf") || !model.ValidUnitName(name) {
		return "must end in .conf and have no slash, space or control character"
	}
	return ""
}

// kernelArgs reads a list of kernel arguments, each one argument as the kernel reads its
// command line (model.KernelArgProblem).
func (l *loader) kernelArgs(a *hcl.Attribute) ([]string, hcl.Diagnostics) {
	args, diags := l.strList(a)
	for i, k := range args {
		if why := model.KernelArgProblem(k); why != "" {
			diags = append(diags, errAt(elementRange(a, i), "Invalid kernel argument", fmt.Sprintf("Kernel argument %q %s.", k, why)))
		}
	}
	return args, diags
}

// osImage reads an OS image reference (model.OSImageProblem).
func (l *loader) osImage(a *hcl.Attribute) (string, hcl.Diagnostics) {
	s, diags := l.str(a)
	if diags.HasErrors() {
		return s, diags
	}
	if why := model.OSImageProblem(s); why != "" {
		diags = append(diags, errAt(a.Expr.Range(), "Invalid os_image", fmt.Sprintf("os_image %q %s.", s, why)))
	}
	return s, diags
}

// owner reads a user or group attribute: a name a node's /etc/passwd or /etc/group can
// hold (model.OwnerNameProblem).
func (l *loader) owner(a *hcl.Attribute) (string, hcl.Diagnostics) {
	s, diags := l.str(a)
	if diags.HasErrors() {
		return s, diags
	}
	if why := model.OwnerNameProblem(s); why != "" {
		diags = append(diags, errAt(a.Expr.Range(), "Invalid "+a.Name, fmt.Sprintf("%s %q %s.", a.Name, s, why)))
	}
	return s, diags
}

// duration reads a positive Go duration such as "90s" or "10m".
func (l *loader) duration(a *hcl.Attribute) (time.Duration, hcl.Diagnostics) {
	s, diags := l.str(a)
	if diags.HasErrors() {
		return 0, diags
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, hcl.Diagnostics{errAt(a.Expr.Range(), "Invalid "+a.Name,
			fmt.Sprintf("%s must be a positive duration such as \"90s\" or \"10m\"; got %q.", a.Name, s))}
	}
	return d, nil
}

// revertsChosenNodes refuses a config for chosen nodes in a pool whose on_failure is
// "revert": a revert goes back to the pool's earlier rendered config, and the pointer
// history keeps no earlier variant to put a chosen node back on (docs/decisions.md).
func (l *loader) revertsChosenNodes() hcl.Diagnostics {
	var diags hcl.Diagnostics
	for i := range l.d.Configs {
		c := &l.d.Configs[i]
		if !c.Targeted() {
			continue
		}
		at := c.NodesRange
		if len(c.Nodes) == 0 {
			at = c.NodeSelectorRange
		}
		for _, name := range c.Pools {
			if p := l.d.Pool(name); p != nil && p.OnFailure.Reverts() {
				diags = append(diags, errAt(*hclpos.Subject(at), "Chosen nodes in a pool that reverts",
					fmt.Sprintf("Config %q is for chosen nodes of pool %q, whose on_failure is \"revert\": a revert puts nodes back on the pool's earlier rendered config, and mcp keeps no earlier config of chosen nodes to put them back on. Use on_failure = \"stop\" in pool %q, or give the nodes a pool of their own.", c.Name, name, name)))
			}
		}
	}
	return diags
}
