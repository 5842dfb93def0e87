package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// refuse is the error apply returns, before it changes anything, for a plan that a pool's
// skew = "enforce" refuses.
func refuse(p *planner.Rollout) error {
	r := p.Refusals()
	if len(r) == 0 {
		return nil
	}
	return fmt.Errorf("apply refused, nothing changed: %s", strings.Join(r, "; "))
}

// publishBootImages sets the boot image of each pool whose boot pointer moves: its machine
// templates first, then the state's record of what its new nodes boot (written with the
// pointers). A template that cannot be set is an error of the apply; with skew = "enforce"
// it also keeps the pool from starting (closed), since its new nodes would boot the old
// image. Kept pools (paused, outside -target, window closed with -no-wait) are left as
// they are, as their pointers are.
func (a *applier) publishBootImages(ctx context.Context) {
	for i := range a.plan.BootImages {
		bp := &a.plan.BootImages[i]
		if bp.Kept || a.closed[bp.Pool] != nil {
			continue
		}
		var failed []error
		for _, tp := range bp.Templates {
			if tp.Action != planner.TemplateUpdate {
				continue
			}
			err := a.setTemplate(ctx, tp)
			a.emit(Event{Kind: EventTemplate, Pool: bp.Pool, Reason: fmt.Sprintf("%s: %s → %s", tp.Template.ID(), tp.From, tp.To), Err: err})
			if err != nil {
				failed = append(failed, fmt.Errorf("pool %s: machine template %s: %w", bp.Pool, tp.Template.ID(), err))
			}
		}
		if bp.UserData != nil && bp.UserData.Action != planner.UserDataNoOp {
			err := a.setUserData(ctx, bp)
			a.emit(Event{Kind: EventTemplate, Pool: bp.Pool, Reason: fmt.Sprintf("Secret/%s/%s[%s]: user-data %s", bp.UserData.Namespace,
				bp.UserData.Name, bp.UserData.Key, bp.UserData.Action), Err: err})
			if err != nil {
				failed = append(failed, fmt.Errorf("pool %s: user_data secret %s/%s: %w", bp.Pool, bp.UserData.Namespace, bp.UserData.Name, err))
			}
		}
		if len(failed) > 0 {
			a.bootErrs = append(a.bootErrs, failed...)
			if bp.Skew == model.SkewEnforce {
				if a.closed == nil {
					a.closed = map[string]error{}
				}
				a.closed[bp.Pool] = fmt.Errorf("pool %s: not started: skew = \"enforce\", and its new nodes' boot objects could not all be set (%d failed: machine templates, user-data Secret) to boot_image.%s",
					bp.Pool, len(failed), bp.To.Name)
			}
			continue
		}
		if bp.Changed {
			if a.st.BootImages == nil {
				a.st.BootImages = map[string]model.BootImageDef{}
			}
			a.st.BootImages[bp.Pool] = *bp.To
		}
	}
}

func (a *applier) setTemplate(ctx context.Context, tp planner.TemplatePlan) error {
	return a.w.provider().SetTemplateImage(ctx, tp.Template, tp.From, tp.To)
}
