package planner

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mcpfleet/mcp/model"
)

// TemplateState is a machine template's state in mcp status.
type TemplateState string

const (
	// TemplateReconciled: its image is its pool's boot image on its platform.
	TemplateReconciled TemplateState = "reconciled"
	// TemplateLagging: it holds another image; the next apply sets it.
	TemplateLagging TemplateState = "lagging"
	// TemplateDegraded: mcp cannot set its image — its kind or image field is not
	// supported, the pool's boot image has no image for its platform, the boot image cannot
	// be resolved, two pools manage it, or the API server refused apply's last set.
	TemplateDegraded TemplateState = "degraded"
	// TemplateUnmanaged: no pool manages its image (mcp leaves it as it is).
	TemplateUnmanaged TemplateState = "unmanaged"
)

// TemplateStatus is one machine template's row in mcp status.
type TemplateStatus struct {
	Template model.MachineTemplate
	// Pool is the pool that manages its image; when none does, the pool whose nodes it
	// makes, if any ("" when no pool's node_selector matches its nodes' labels). Several
	// pools (degraded) are joined with ", ".
	Pool string
	// BootImage names the pool's boot_image block and Wanted is its image on the template's
	// platform ("" when not known).
	BootImage, Wanted string
	State             TemplateState
	// Reason says why it is not reconciled; for people only.
	Reason string
}

// MakeTemplateStatus computes each machine template's status, in the order given. A pool
// manages a template when the pool's boot image is managed, the template makes its nodes
// (model.MachineTemplate.MakesNodesFor) and its machine_templates block selects the
// template's labels — the rule plan and apply follow. The wanted image is that of the boot
// image apply last applied to the pool (applied, the state's boot images); before any,
// that of the boot image the configuration resolves for the pool's OS image (rendered: the
// configuration's rendered config of each pool).
func MakeTemplateStatus(d *model.Desired, rendered map[string]*model.Rendered, applied map[string]model.BootImageDef,
	templates []model.MachineTemplate) []TemplateStatus {
	var out []TemplateStatus
	for _, t := range templates {
		out = append(out, templateStatus(d, rendered, applied, t))
	}
	return out
}

func templateStatus(d *model.Desired, rendered map[string]*model.Rendered, applied map[string]model.BootImageDef,
	t model.MachineTemplate) TemplateStatus {
	ts := TemplateStatus{Template: t}
	var makers, managers []*model.Pool
	for i := range d.Pools {
		p := &d.Pools[i]
		if !t.MakesNodesFor(p) {
			continue
		}
		makers = append(makers, p)
		if d.ManagesBootImage(p) && p.BootImage.Templates.Selects(t.Labels) {
			managers = append(managers, p)
		}
	}
	switch {
	case len(managers) == 0:
		ts.State = TemplateUnmanaged
		ts.Reason = "no pool's node_selector matches the labels of the nodes it makes"
		if len(makers) > 0 {
			p := makers[0]
			ts.Pool, ts.Reason = p.Name, unmanagedReason(d, p)
		}
		return ts
	case len(managers) > 1:
		var names []string
		for _, p := range managers {
			names = append(names, p.Name)
		}
		ts.Pool, ts.State = strings.Join(names, ", "), TemplateDegraded
		ts.Reason = fmt.Sprintf("more than one pool manages it (%s: their node_selectors all match its nodes' labels); "+
			"one image field cannot follow several pools", ts.Pool)
		return ts
	}
	p := managers[0]
	ts.Pool = p.Name
	if t.Unsupported != "" {
		ts.State, ts.Reason = TemplateDegraded, t.Unsupported
		return ts
	}
	bi, err := poolBootImage(d, p, rendered, applied)
	if err != nil {
		ts.State, ts.Reason = TemplateDegraded, err.Error()
		return ts
	}
	ts.BootImage = bi.Name
	want, ok := bi.ImageFor(t.Platform)
	switch {
	case !ok:
		ts.State = TemplateDegraded
		ts.Reason = fmt.Sprintf("boot_image.%s has no image for platform %q (images: %s)", bi.Name, t.Platform, platformList(bi))
	case t.Image == want:
		ts.Wanted, ts.State = want, TemplateReconciled
	case t.LastError != "":
		ts.Wanted, ts.State = want, TemplateDegraded
		ts.Reason = "apply's last set of its image was refused: " + t.LastError
	default:
		ts.Wanted, ts.State = want, TemplateLagging
		ts.Reason = fmt.Sprintf("boot_image.%s's %s image is %s", bi.Name, t.Platform, want)
	}
	return ts
}

func unmanagedReason(d *model.Desired, p *model.Pool) string {
	switch sel := p.BootImage.Templates; {
	case !d.ManagesBootImage(p):
		return fmt.Sprintf("pool %s's boot image is not managed (no boot_image blocks)", p.Name)
	case sel == nil:
		return fmt.Sprintf("pool %s manages no machine templates (its boot_image has no machine_templates block)", p.Name)
	default:
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(sel.MatchLabels)) {
			kv = append(kv, k+"="+sel.MatchLabels[k])
		}
		return fmt.Sprintf("pool %s's machine_templates selects templates labelled %s", p.Name, strings.Join(kv, ", "))
	}
}

// poolBootImage is the boot image the pool's templates should boot: the one apply last
// applied, else the configuration's for the OS image of the pool's rendered config.
func poolBootImage(d *model.Desired, p *model.Pool, rendered map[string]*model.Rendered, applied map[string]model.BootImageDef) (*model.BootImageDef, error) {
	if bi, ok := applied[p.Name]; ok {
		return &bi, nil
	}
	osImage := p.OSImage
	if r := rendered[p.Name]; r != nil && r.OSImage != "" {
		osImage = r.OSImage
	}
	bi, err := d.ResolveBootImage(p, osImage)
	if err == nil && bi == nil {
		err = fmt.Errorf("pool %s's boot image is not managed", p.Name)
	}
	return bi, err
}

func platformList(bi *model.BootImageDef) string {
	if ps := bi.Platforms(); len(ps) > 0 {
		return strings.Join(ps, ", ")
	}
	return "none"
}
