package planner

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mcpfleet/mcp/model"
)

// BootImagePlan is one pool's boot image: what its new nodes boot before this apply (the
// state's) and after, the machine templates that change with it, and the skew left.
// Only pools whose boot image is managed (model.Desired.ManagesBootImage) have one.
type BootImagePlan struct {
	Pool   string                `json:"pool"`
	Policy model.BootImagePolicy `json:"policy"`
	Skew   model.SkewPolicy      `json:"skew"`
	// From is what the state says the pool's new nodes boot (nil: never applied); To is
	// what they boot after apply. Changed: To differs from From.
	From    *model.BootImageDef `json:"from,omitempty"`
	To      *model.BootImageDef `json:"to"`
	Changed bool                `json:"changed"`
	// OSImage is the pool's OS image (its rendered config's). FirstBootPivot: To boots
	// another OS image, so each new node pivots to OSImage at first boot, before it joins.
	OSImage        string `json:"os_image,omitempty"`
	FirstBootPivot bool   `json:"first_boot_pivot,omitempty"`
	// Lagging names the pool's nodes that run another OS image than OSImage and that
	// this plan does not pivot (held, outside -target, paused, deferred), in plan order.
	Lagging []string `json:"lagging,omitempty"`
	// Templates are the machine templates the pool manages (machine_templates), sorted by ID.
	Templates []TemplatePlan `json:"templates,omitempty"`
	// UserData is the pool's user-data Secret (user_data), nil without one.
	UserData *UserDataPlan `json:"user_data,omitempty"`
	// Kept is true when apply leaves the pool's boot image as it is (paused, or outside
	// -target), as it leaves its boot pointer.
	Kept bool `json:"kept,omitempty"`
	// Refused says why apply refuses this plan (skew = "enforce" and new nodes would boot
	// another OS image than the pool's); "" when it does not.
	Refused string `json:"refused,omitempty"`
}

// UserDataPlan is what apply does to a pool's user-data Secret: make its key hold the
// pool's pointer config. From and To are digests ("sha256:…") of the config with its token
// left out; From is "" when the Secret or its key does not exist. TokenChanged says the
// Secret's token is not the pool's: the token, and any unkeyed hash of it, stays out of the
// plan.
type UserDataPlan struct {
	Namespace    string         `json:"namespace"`
	Name         string         `json:"name"`
	Key          string         `json:"key"`
	From         string         `json:"from,omitempty"`
	To           string         `json:"to"`
	TokenChanged bool           `json:"token_changed,omitempty"`
	Action       UserDataAction `json:"action"`
}

// UserDataAction is what apply does to a user-data Secret.
type UserDataAction string

const (
	UserDataCreate UserDataAction = "create" // the Secret or its key is absent
	UserDataUpdate UserDataAction = "update"
	UserDataNoOp   UserDataAction = "no-op"
)

// TemplateAction is what apply does to a machine template.
type TemplateAction string

const (
	TemplateUpdate TemplateAction = "update" // set its image From → To
	TemplateNoOp   TemplateAction = "no-op"  // it boots the pool's image already
	// TemplateDegraded: mcp cannot bring it to the pool's image (Reason says why).
	TemplateDegraded TemplateAction = "degraded"
)

// TemplatePlan is one machine template's part of a boot image plan.
type TemplatePlan struct {
	Template model.MachineTemplate `json:"template"`
	Action   TemplateAction        `json:"action"`
	From     string                `json:"from,omitempty"`
	To       string                `json:"to,omitempty"`
	Reason   string                `json:"reason,omitempty"`
}

// Changes reports whether apply changes anything for this pool's boot image: the image
// recorded in the state, or a template.
func (b *BootImagePlan) Changes() bool {
	if b.Kept {
		return false
	}
	if b.Changed || (b.UserData != nil && b.UserData.Action != UserDataNoOp) {
		return true
	}
	for _, t := range b.Templates {
		if t.Action == TemplateUpdate {
			return true
		}
	}
	return false
}

// Count is how many of the pool's templates apply does a to.
func (b *BootImagePlan) Count(a TemplateAction) int {
	n := 0
	for _, t := range b.Templates {
		if t.Action == a {
			n++
		}
	}
	return n
}

// Degraded lists the templates mcp cannot bring to the pool's image.
func (b *BootImagePlan) Degraded() []TemplatePlan {
	var out []TemplatePlan
	for _, t := range b.Templates {
		if t.Action == TemplateDegraded {
			out = append(out, t)
		}
	}
	return out
}

// planBootImages plans the boot image of each pool that manages one. nodes are the plan's
// node plans, to tell which nodes keep another OS image after this apply.
func planBootImages(in Input, pools []PoolPlan, nodes []NodePlan) ([]BootImagePlan, error) {
	byPool := map[string][]*NodePlan{}
	for i := range nodes {
		byPool[nodes[i].Pool] = append(byPool[nodes[i].Pool], &nodes[i])
	}
	osImage := map[string]string{} // node → the OS image it reports
	for i := range in.Fleet.Nodes {
		osImage[in.Fleet.Nodes[i].Name] = in.Fleet.Nodes[i].OSImage
	}
	selectedBy := map[string]string{} // template ID → the first pool that manages it
	var out []BootImagePlan
	for pi := range in.Desired.Pools {
		pool := &in.Desired.Pools[pi]
		if !in.Desired.ManagesBootImage(pool) {
			continue
		}
		r := in.Rendered[pool.Name]
		to, err := in.Desired.ResolveBootImage(pool, r.OSImage)
		if err != nil {
			return nil, err
		}
		if to == nil {
			continue
		}
		bp := BootImagePlan{Pool: pool.Name, Policy: pool.BootImage.Policy, Skew: pool.BootImage.Skew,
			To: to, OSImage: r.OSImage, FirstBootPivot: r.OSImage != "" && to.OSImage != r.OSImage}
		if from, ok := in.BootImages[pool.Name]; ok {
			bp.From = &from
		}
		bp.Changed = bp.From == nil || !sameBootImage(bp.From, to)
		pp := poolPlan(pools, pool.Name)
		bp.Kept = pp != nil && (pp.Paused || pp.PointerKept)
		for _, np := range byPool[pool.Name] {
			img := osImage[np.Name]
			if img != "" && r.OSImage != "" && img != r.OSImage && (np.Deferred || !hasStep(np.Steps, model.StepPivot)) {
				bp.Lagging = append(bp.Lagging, np.Name)
			}
		}
		if sel := pool.BootImage.Templates; sel != nil {
			for i := range in.Fleet.Templates {
				t := &in.Fleet.Templates[i]
				if !t.MakesNodesFor(pool) || !sel.Selects(t.Labels) {
					continue
				}
				tp := planTemplate(t, to)
				if other, ok := selectedBy[t.ID()]; ok {
					tp = TemplatePlan{Template: *t, Action: TemplateDegraded, From: t.Image,
						Reason: fmt.Sprintf("pool %s manages it too: make the pools' machine_templates selections exclusive", other)}
				} else {
					selectedBy[t.ID()] = pool.Name
				}
				bp.Templates = append(bp.Templates, tp)
			}
			slices.SortFunc(bp.Templates, func(a, b TemplatePlan) int { return strings.Compare(a.Template.ID(), b.Template.ID()) })
		}
		bp.UserData = planUserData(in, pool)
		bp.Refused = refusal(&bp)
		out = append(out, bp)
	}
	return out, nil
}

// planTemplate is what apply does to a template that makes a pool's nodes, whose boot image is to.
func planTemplate(t *model.MachineTemplate, to *model.BootImageDef) TemplatePlan {
	tp := TemplatePlan{Template: *t, From: t.Image}
	if t.Unsupported != "" {
		tp.Action, tp.Reason = TemplateDegraded, t.Unsupported
		return tp
	}
	img, ok := to.ImageFor(t.Platform)
	if !ok {
		tp.Action = TemplateDegraded
		tp.Reason = fmt.Sprintf("boot_image.%s has no image for platform %q (images: %s)", to.Name, t.Platform, strings.Join(to.Platforms(), ", "))
		return tp
	}
	tp.To = img
	if img == t.Image {
		tp.Action = TemplateNoOp
	} else {
		tp.Action = TemplateUpdate
	}
	return tp
}

// refusal says why skew = "enforce" refuses the plan: new nodes of the pool would boot an
// OS image other than the pool's, from the pinned image or from a template mcp cannot
// bring to it.
func refusal(b *BootImagePlan) string {
	if b.Skew != model.SkewEnforce || b.Kept {
		return ""
	}
	if b.FirstBootPivot {
		return fmt.Sprintf("pool %s has skew = \"enforce\", and its new nodes would boot boot_image.%s (OS image %s), not the pool's OS image %s",
			b.Pool, b.To.Name, b.To.OSImage, b.OSImage)
	}
	if d := b.Degraded(); len(d) > 0 {
		var names []string
		for _, t := range d {
			names = append(names, t.Template.ID()+" ("+t.Reason+")")
		}
		return fmt.Sprintf("pool %s has skew = \"enforce\", and %d of its machine templates cannot be brought to boot_image.%s: %s",
			b.Pool, len(d), b.To.Name, strings.Join(names, "; "))
	}
	return ""
}

func sameBootImage(a, b *model.BootImageDef) bool {
	return a.Name == b.Name && a.OSImage == b.OSImage && maps.Equal(a.Images, b.Images)
}

func poolPlan(pools []PoolPlan, name string) *PoolPlan {
	for i := range pools {
		if pools[i].Name == name {
			return &pools[i]
		}
	}
	return nil
}

// Refusals are the reasons apply refuses the plan (skew = "enforce"), pool by pool.
func (p *Rollout) Refusals() []string {
	var out []string
	for _, b := range p.BootImages {
		if b.Refused != "" {
			out = append(out, b.Refused)
		}
	}
	return out
}

// planUserData compares the pool's user-data Secret, as observed, with its pointer config.
func planUserData(in Input, pool *model.Pool) *UserDataPlan {
	u := pool.BootImage.UserData
	if u == nil {
		return nil
	}
	up := &UserDataPlan{Namespace: u.Namespace, Name: u.Name, Key: u.Key, To: in.UserData[pool.Name], Action: UserDataCreate}
	for _, o := range in.Fleet.UserData {
		if o.Pool == pool.Name && o.Digest != "" {
			up.From, up.TokenChanged, up.Action = o.Digest, !o.TokenCurrent, UserDataUpdate
		}
	}
	if up.From == up.To && !up.TokenChanged {
		up.Action = UserDataNoOp
	}
	return up
}
