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
	// TemplateStateReconciled: its image is its pool's boot image on its platform.
	TemplateStateReconciled TemplateState = "reconciled"
	// TemplateStateLagging: it holds another image; the next apply sets it.
	TemplateStateLagging TemplateState = "lagging"
	// TemplateStateDegraded: mcp cannot set its image — its kind or image field is not
	// supported, the pool's boot image has no image for its platform, the boot image cannot
	// be resolved, another pool manages it too, or the API server refused apply's last set.
	TemplateStateDegraded TemplateState = "degraded"
	// TemplateStateUnmanaged: no pool manages its image (mcp leaves it as it is).
	TemplateStateUnmanaged TemplateState = "unmanaged"
)

// TemplateStatus is one machine template's row in mcp status.
type TemplateStatus struct {
	Template model.MachineTemplate
	// Pool is the pool that manages its image (the first in configuration order when
	// several do: apply sets that one's); when none does, the pool whose nodes it makes, if
	// any ("" when no pool's node_selector matches its nodes' labels).
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
// template's labels — the rule plan and apply follow; its image is judged by the plan's
// own rule (planTemplate). The wanted image is that of the boot
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
	if len(managers) == 0 {
		ts.State = TemplateStateUnmanaged
		ts.Reason = "no pool's node_selector matches the labels of the nodes it makes"
		if len(makers) > 0 {
			p := makers[0]
			ts.Pool, ts.Reason = p.Name, unmanagedReason(d, p)
		}
		return ts
	}
	// The first pool (in configuration order) is the one whose image apply sets, as the
	// plan decides (planBootImages); the others' plans show it degraded.
	p := managers[0]
	ts.Pool = p.Name
	bi, err := poolBootImage(d, p, rendered, applied)
	if err != nil && t.Unsupported == "" {
		ts.State, ts.Reason = TemplateStateDegraded, err.Error()
		return ts
	}
	if bi == nil {
		bi = &model.BootImageDef{}
	}
	tp := planTemplate(&t, bi) // the plan's own rule: unsupported, no image for the platform, no-op, update
	ts.BootImage, ts.Wanted = bi.Name, tp.To
	switch {
	case tp.Action == TemplateDegraded:
		ts.State, ts.Reason = TemplateStateDegraded, tp.Reason
	case len(managers) > 1:
		var others []string
		for _, o := range managers[1:] {
			others = append(others, o.Name)
		}
		ts.State = TemplateStateDegraded
		ts.Reason = fmt.Sprintf("pool %s manages it too (apply sets pool %s's image): make the pools' machine_templates selections exclusive",
			strings.Join(others, ", "), p.Name)
	case tp.Action == TemplateNoOp:
		ts.State = TemplateStateReconciled
	case t.LastError != "":
		ts.State, ts.Reason = TemplateStateDegraded, "apply's last set of its image was refused: "+t.LastError
	default:
		ts.State, ts.Reason = TemplateStateLagging, fmt.Sprintf("boot_image.%s's %s image is %s", bi.Name, t.Platform, tp.To)
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
