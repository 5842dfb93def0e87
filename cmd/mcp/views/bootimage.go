package views

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"strings"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// writeBootImages writes the plan's boot images: per pool whose boot image changes, lags
// or is refused, what its new nodes boot, its machine templates, and the skew left.
func writeBootImages(w io.Writer, c painter, p *planner.Rollout) {
	for i := range p.BootImages {
		b := &p.BootImages[i]
		if !bootImageWorthShowing(b) {
			continue
		}
		change := "boot_image." + b.To.Name
		switch {
		case b.Kept && b.Changed:
			change = bootImageName(b.From) + " (kept: the pool is paused or not targeted; would be boot_image." + b.To.Name + ")"
		case b.Changed && b.From != nil && b.From.Name == b.To.Name:
			change += " (changed: " + bootImageDiff(b.From, b.To) + ")"
		case b.Changed:
			change = bootImageName(b.From) + " → boot_image." + b.To.Name
		}
		fmt.Fprintf(w, "\n%s %s  [%s, skew %s]\n", c.bold("boot_image."+b.Pool), change, b.Policy, b.Skew)
		if b.Changed && !b.Kept {
			fmt.Fprintf(w, "  new nodes boot %s%s\n", b.To.OSImage, platformList(b.To))
		}
		var t columns
		t.add("", "MACHINE TEMPLATE", "PLATFORM", "IMAGE")
		for _, tp := range b.Templates {
			switch tp.Action {
			case planner.TemplateUpdate:
				t.add(c.yellow(symInPlace), tp.Template.ID(), tp.Template.Platform, tp.From+" → "+tp.To)
			case planner.TemplateDegraded:
				t.add(c.red("!"), tp.Template.ID(), tp.Template.Platform, c.red("degraded: ")+tp.Reason)
			}
		}
		if len(t.rows) > 1 {
			t.write(w)
		}
		if n := b.Count(planner.TemplateNoOp); n > 0 {
			fmt.Fprintf(w, "  %s already on the pool's image\n", plural(n, "%d machine template", "%d machine templates"))
		}
		if u := b.UserData; u != nil && u.Action != planner.UserDataNoOp && !b.Kept {
			fmt.Fprintf(w, "  %s user_data Secret %s/%s[%s]: %s the pointer config (%s)\n", c.yellow(symInPlace), u.Namespace, u.Name, u.Key,
				u.Action, digestChange(u.From, u.To)+tokenChange(u.TokenChanged))
		}
		if b.FirstBootPivot {
			fmt.Fprintf(w, "  %s new nodes boot boot_image.%s (OS image %s) and pivot to %s at first boot, before they join (one reboot)\n",
				c.yellow("skew:"), b.To.Name, b.To.OSImage, b.OSImage)
		}
		if len(b.Lagging) > 0 {
			fmt.Fprintf(w, "  %s %s keep another OS image than %s after this apply: %s\n", c.yellow("skew:"),
				plural(len(b.Lagging), "%d node would", "%d nodes would"), b.OSImage, strings.Join(b.Lagging, ", "))
		}
		if b.Refused != "" {
			fmt.Fprintf(w, "  %s %s\n", c.red("refused:"), b.Refused)
		}
	}
}

// bootImageWorthShowing: a boot image that changes, lags or is refused; a settled one is
// left out, as unchanged nodes are.
func bootImageWorthShowing(b *planner.BootImagePlan) bool {
	return b.Changed || b.FirstBootPivot || (b.UserData != nil && b.UserData.Action != planner.UserDataNoOp) || len(b.Lagging) > 0 || b.Refused != "" || b.Count(planner.TemplateDegraded) > 0 || b.Changes()
}

func bootImageName(b *model.BootImageDef) string {
	if b == nil {
		return "(none)"
	}
	return "boot_image." + b.Name
}

// platformList is " (gcp: …, aws: …)", or "" without images.
func platformList(b *model.BootImageDef) string {
	var s []string
	for _, p := range b.Platforms() {
		s = append(s, p+": "+b.Images[p])
	}
	if len(s) == 0 {
		return ""
	}
	return " (" + strings.Join(s, ", ") + ")"
}

// bootImageValue is a boot_image resource's before and after in the plan JSON.
type bootImageValue struct {
	Name    string            `json:"name"`
	OSImage string            `json:"os_image"`
	Images  map[string]string `json:"images,omitempty"`
}

// templateValue is a machine template resource's before and after: its image.
type templateValue struct {
	Field string `json:"field"`
	Image string `json:"image"`
}

// bootImageChanges are the plan JSON's resource_changes for boot images (boot_image.POOL,
// type mcp_boot_image) and machine templates (machine_template.POOL["Kind/ns/name"], type
// mcp_machine_template), with Terraform's actions: create when the state had none.
func bootImageChanges(p *planner.Rollout) []resourceChange {
	var out []resourceChange
	for i := range p.BootImages {
		b := &p.BootImages[i]
		act := "no-op"
		switch {
		case b.Kept || !b.Changed:
		case b.From == nil:
			act = "create"
		default:
			act = "update"
		}
		var before any
		if b.From != nil {
			before = bootImageValue{Name: b.From.Name, OSImage: b.From.OSImage, Images: b.From.Images}
		}
		out = append(out, resourceChange{Address: "boot_image." + b.Pool, Mode: "managed", Type: "mcp_boot_image", Name: b.Pool,
			Change: change{Actions: []string{act}, Before: before, After: bootImageValue{Name: b.To.Name, OSImage: b.To.OSImage, Images: b.To.Images}}})
		if u := b.UserData; u != nil {
			act := string(u.Action)
			if b.Kept {
				act = "no-op"
			}
			var before any
			if u.From != "" {
				before = userDataValue{Secret: u.Namespace + "/" + u.Name, Key: u.Key, Digest: u.From}
			}
			out = append(out, resourceChange{Address: "user_data." + b.Pool, Mode: "managed", Type: "mcp_user_data", Name: b.Pool,
				Change: change{Actions: []string{act}, Before: before, After: userDataValue{Secret: u.Namespace + "/" + u.Name, Key: u.Key, Digest: u.To, TokenChanged: u.TokenChanged}}})
		}
		for _, tp := range b.Templates {
			act, after := "no-op", tp.From
			if tp.Action == planner.TemplateUpdate && !b.Kept {
				act, after = "update", tp.To
			}
			id := tp.Template.ID()
			out = append(out, resourceChange{Address: fmt.Sprintf("machine_template.%s[%q]", b.Pool, id), Mode: "managed",
				Type: "mcp_machine_template", Name: b.Pool, Index: id,
				Change: change{Actions: []string{act}, Before: templateValue{Field: tp.Template.Field, Image: tp.From},
					After: templateValue{Field: tp.Template.Field, Image: after}},
				MCP: &templateMeta{Pool: b.Pool, Action: string(tp.Action), Reason: tp.Reason, Platform: tp.Template.Platform}})
		}
	}
	return out
}

// templateMeta is mcp's detail of a machine template's resource change.
type templateMeta struct {
	Pool     string `json:"pool"`
	Action   string `json:"action"` // update, no-op or degraded
	Reason   string `json:"reason,omitempty"`
	Platform string `json:"platform,omitempty"`
}

// bootImageDiff says what changed in a boot_image block kept under its name.
func bootImageDiff(from, to *model.BootImageDef) string {
	var s []string
	if from.OSImage != to.OSImage {
		s = append(s, "os_image "+from.OSImage+" → "+to.OSImage)
	}
	for _, p := range to.Platforms() {
		if from.Images[p] != to.Images[p] {
			s = append(s, p+" "+cmp.Or(from.Images[p], "(none)")+" → "+to.Images[p])
		}
	}
	for _, p := range from.Platforms() {
		if _, ok := to.Images[p]; !ok {
			s = append(s, p+" "+from.Images[p]+" → (none)")
		}
	}
	return strings.Join(s, ", ")
}

// mdBootImages is the markdown summary's part for boot images: per pool worth showing, the
// change, the templates to update or degraded, the skew and a refusal.
func mdBootImages(w *bufio.Writer, p *planner.Rollout) {
	for i := range p.BootImages {
		b := &p.BootImages[i]
		if !bootImageWorthShowing(b) {
			continue
		}
		line := mdCode("boot_image." + b.To.Name)
		if b.Changed && !b.Kept {
			line = mdCode(bootImageName(b.From)) + " → " + line
		}
		fmt.Fprintf(w, "\n#### Boot image of %s: %s (%s, skew %s)\n\n", mdCode(b.Pool), line, mdEscape(string(b.Policy)), mdEscape(string(b.Skew)))
		if n := b.Count(planner.TemplateUpdate); n > 0 && !b.Kept {
			fmt.Fprintf(w, "- %s to update\n", plural(n, "%d machine template", "%d machine templates"))
		}
		for _, t := range b.Degraded() {
			fmt.Fprintf(w, "- **degraded:** %s: %s\n", mdCode(t.Template.ID()), mdEscape(t.Reason))
		}
		if b.FirstBootPivot {
			fmt.Fprintf(w, "- **skew:** new nodes boot OS image %s and pivot to %s at first boot\n", mdCode(b.To.OSImage), mdCode(b.OSImage))
		}
		if len(b.Lagging) > 0 {
			fmt.Fprintf(w, "- **skew:** left on another OS image: %s\n", codeList(b.Lagging))
		}
		if b.Refused != "" {
			fmt.Fprintf(w, "- **refused:** %s\n", mdEscape(b.Refused))
		}
	}
}

// digestChange is "sha256:1a2b3c4d… → sha256:5e6f…", short, as people compare them.
func digestChange(from, to string) string {
	short := func(d string) string {
		if d == "" {
			return "(none)"
		}
		if len(d) > len("sha256:")+12 {
			return d[:len("sha256:")+12] + "…"
		}
		return d
	}
	return short(from) + " → " + short(to)
}

func tokenChange(changed bool) string {
	if changed {
		return "; a new token"
	}
	return ""
}

// userDataValue is a user-data Secret resource's before and after in the plan JSON: the
// digest of its key's value with the token left out (the token is not in the plan, nor
// anything to check a guess of it against); the after value says when the token changes.
type userDataValue struct {
	Secret       string `json:"secret"`
	Key          string `json:"key"`
	Digest       string `json:"digest"`
	TokenChanged bool   `json:"token_changed,omitempty"`
}
