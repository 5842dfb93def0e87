// Package steps is the one derivation of a node's steps: from the rendered config it runs
// (and what its host reports it runs) to a target, as a table of what each on_change
// policy needs; the restore of drift; the rewrite of a node whose config is unknown. Plan,
// apply and the node agent all use it, so what the plan shows is what runs. It is pure and
// imports nothing but the model, so that the agent links it without the renderer.
package steps

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mcpfleet/mcp/model"
)

// policyEffects is the table of what a change under each on_change policy needs, beyond
// writing the file or unit. Reload and restart steps act on the policy's unit.
var policyEffects = map[model.PolicyKind][]model.StepKind{
	model.PolicyNone:         nil,
	model.PolicyDaemonReload: {model.StepDaemonReload},
	model.PolicyReload:       {model.StepReload},
	model.PolicyRestart:      {model.StepRestart},
	model.PolicyDrain:        {model.StepCordon, model.StepDrain, model.StepUncordon},
	model.PolicyReboot:       {model.StepCordon, model.StepDrain, model.StepReboot, model.StepVerify, model.StepUncordon},
}

// defaultPolicy applies when a file or unit has no on_change: a reboot, as in the MCO.
var defaultPolicy = []model.Policy{{Kind: model.PolicyReboot}}

// supersededByReboot are the steps a reboot makes needless: it restarts everything.
var supersededByReboot = []model.StepKind{model.StepDaemonReload, model.StepReload, model.StepRestart}

// Host is what a node reports it runs. It decides whether kernel-argument and OS-image
// steps are needed at all: a node that already runs the target's image gets no pivot, and
// one whose arguments are already as the target asks gets no kargs step — nor the reboot
// either would bring. The zero value is a node that reports nothing: steps then follow
// from the configs alone.
type Host struct {
	OSImage    string   // "": not reported
	KernelArgs []string // nil: not reported
}

// HostOf is what n reports it runs.
func HostOf(n *model.Node) Host { return Host{OSImage: n.OSImage, KernelArgs: n.KernelArgs} }

// runs reports whether the host is known to run image.
func (h Host) runs(image string) bool { return h.OSImage != "" && h.OSImage == image }

// hasArgs reports whether the host is known to have every argument of want and none of
// gone.
func (h Host) hasArgs(want, gone []string) bool {
	if h.KernelArgs == nil {
		return false
	}
	for _, a := range want {
		if !model.HasKernelArg(h.KernelArgs, a) {
			return false
		}
	}
	for _, a := range gone {
		if model.HasKernelArg(h.KernelArgs, a) {
			return false
		}
	}
	return true
}

// Derive derives the ordered steps that move a node from old (nil: nothing managed yet) to
// new. It is the one derivation of steps: plan, apply and the node agent all use it.
func Derive(old, new *model.Rendered) []model.Step { return DeriveOn(old, new, Host{}) }

// DeriveOn is Derive for a node whose host reports h: what the host already runs needs
// no step (Host).
func DeriveOn(old, new *model.Rendered, h Host) []model.Step {
	if old == nil {
		// A node that runs no known config stages in its slot, with the switch: a stage
		// ahead of it ends on the config the node runs (model.StageInSlot).
		return model.StageInSlot(DeriveOn(&model.Rendered{}, new, h))
	}
	var b stepSet
	diffTree(&b, old, new)
	diffUnits(&b, old, new)
	if added, removed := model.DiffArgs(old.KernelArgs, new.KernelArgs); len(added)+len(removed) > 0 && !h.hasArgs(new.KernelArgs, removed) {
		why := "kernel arguments " + describeArgs(added, removed)
		b.add(model.StepKargs, "", why)
		b.policy(model.Policy{Kind: model.PolicyReboot}, why)
	}
	if new.OSImage != "" && old.OSImage != new.OSImage && !h.runs(new.OSImage) {
		why := fmt.Sprintf("os image %s → %s", orNone(old.OSImage), new.OSImage)
		if old.OSImage == "" && h.OSImage != "" { // a first os_image: say what it replaces
			why = fmt.Sprintf("os image %s (booted) → %s", h.OSImage, new.OSImage)
		}
		b.add(model.StepPivot, "", why)
		b.stage(why)
		b.policy(model.Policy{Kind: model.PolicyReboot}, why)
	}
	return b.steps()
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func diffUnits(b *stepSet, old, new *model.Rendered) {
	for _, u := range new.Units {
		what := unitChange(old.Unit(u.Name), &u)
		if what == "" {
			continue
		}
		why := "unit " + u.Name + " " + what
		b.add(model.StepWrite, u.Name, why)
		b.add(model.StepDaemonReload, "", why)
		b.policies(u.OnChange, why)
	}
	for _, u := range old.Units {
		if new.Unit(u.Name) == nil {
			why := "unit " + u.Name + " removed (no longer in any config)"
			b.add(model.StepWrite, u.Name, why)
			b.add(model.StepDaemonReload, "", why)
			b.policies(u.OnChange, why)
		}
	}
}

func unitChange(old, new *model.Unit) string {
	if old == nil {
		return "added"
	}
	var what []string
	if old.Contents != new.Contents {
		what = append(what, "contents")
	}
	if !slices.Equal(old.Dropins, new.Dropins) {
		what = append(what, "drop-ins")
	}
	if (old.Enabled == nil) != (new.Enabled == nil) || (old.Enabled != nil && *old.Enabled != *new.Enabled) {
		what = append(what, "enablement")
	}
	if old.Mask != new.Mask {
		what = append(what, "mask")
	}
	if len(what) == 0 {
		return ""
	}
	return "changed (" + strings.Join(what, ", ") + ")"
}

func describeArgs(added, removed []string) string {
	var parts []string
	for _, a := range added {
		parts = append(parts, "+"+a)
	}
	for _, r := range removed {
		parts = append(parts, "-"+r)
	}
	return strings.Join(parts, " ")
}

// stepSet collects steps by (kind, target), merging the reasons of duplicates.
type stepSet struct {
	m map[stepID][]string
}

type stepID struct {
	kind   model.StepKind
	target string
}

func (b *stepSet) add(k model.StepKind, target, why string) {
	if b.m == nil {
		b.m = map[stepID][]string{}
	}
	id := stepID{k, target}
	if !slices.Contains(b.m[id], why) {
		b.m[id] = append(b.m[id], why)
	}
}

// stage adds the stage step a pivot brings: the image is pulled and deployed (not as the
// default boot entry), with the update's kernel arguments, before the node's slot, so
// that the slot only switches (model.StepStage). A kernel-argument change alone has
// nothing to fetch: it is not staged.
func (b *stepSet) stage(why string) { b.add(model.StepStage, "", why) }

func (b *stepSet) policies(ps []model.Policy, why string) {
	if len(ps) == 0 {
		b.policy(defaultPolicy[0], why+"; no on_change policy: reboot")
		return
	}
	for _, p := range ps {
		b.policy(p, why+"; on_change "+p.String())
	}
}

func (b *stepSet) policy(p model.Policy, why string) {
	for _, k := range policyEffects[p.Kind] {
		target := ""
		if k == model.StepReload || k == model.StepRestart {
			target = p.Unit
		}
		b.add(k, target, why)
	}
}

// steps returns the collected steps in run order, a reboot superseding what it makes
// needless.
func (b *stepSet) steps() []model.Step {
	if len(b.m) == 0 {
		return nil
	}
	reboot := false
	for id := range b.m {
		reboot = reboot || id.kind == model.StepReboot
	}
	ids := slices.SortedFunc(maps.Keys(b.m), func(x, y stepID) int {
		if x.kind != y.kind {
			return int(x.kind) - int(y.kind)
		}
		return strings.Compare(x.target, y.target)
	})
	out := make([]model.Step, 0, len(ids))
	for _, id := range ids {
		if reboot && slices.Contains(supersededByReboot, id.kind) {
			continue
		}
		out = append(out, model.Step{Kind: id.kind, Target: id.target, Reason: strings.Join(b.m[id], "; ")})
	}
	return out
}

// Restore adds to steps what it takes to put drift back as target has it: a write of each
// drifted file or unit target manages, with that file's or unit's on_change policies; a
// kargs step and a reboot for drifted kernel arguments; a pivot and a reboot for a drifted
// OS image — drift becomes a planned action, not a dead end. Kernel arguments or an image
// the host h already has as target asks need no restoring (Host).
func Restore(steps []model.Step, drift []model.Drift, target *model.Rendered, h Host) []model.Step {
	return restore(steps, drift, target, h, "restore drifted ")
}

// FromObserved is Restore for what a node whose config is unknown carries against target
// (model.Observation): the same steps, their reasons saying the node differs, not drifted.
func FromObserved(drift []model.Drift, target *model.Rendered, h Host) []model.Step {
	// Its config unknown, the node stages in its slot (DeriveOn).
	return model.StageInSlot(restore(nil, drift, target, h, "the node differs from "+target.Name+": "))
}

// restore is Restore with each reason led by lead.
func restore(steps []model.Step, drift []model.Drift, target *model.Rendered, h Host, lead string) []model.Step {
	if len(drift) == 0 {
		return steps
	}
	// Steps with their stage in the slot (a node whose config is unknown: DeriveOn) keep
	// it there.
	inSlot := !model.StagesFirst(steps) &&
		slices.ContainsFunc(steps, func(s model.Step) bool { return s.Kind == model.StepStage })
	var b stepSet
	for _, s := range steps {
		b.add(s.Kind, s.Target, s.Reason)
	}
	for _, d := range drift {
		why := fmt.Sprintf("%s%s (%s)", lead, d.Path, d.Kind)
		switch d.Kind {
		case model.DriftUnlistedKind:
			why = fmt.Sprintf("restore %s (the node reported more drift than it listed)", d.Path)
		case model.DriftKernelArgs:
			if h.hasArgs(target.KernelArgs, nil) {
				continue // drift from the config it runs, but as the target has them
			}
			// The node's kernel arguments go through the same step as a config change:
			// kargs makes every argument of target present, then a reboot applies them.
			why = fmt.Sprintf("%skernel arguments (expected %q, found %q)", lead, d.Expected, d.Found)
			b.add(model.StepKargs, "", why)
			b.policy(model.Policy{Kind: model.PolicyReboot}, why)
			continue
		case model.DriftOSImage:
			if target.OSImage == "" || h.runs(target.OSImage) {
				continue // the target names no image, or the one the node runs
			}
			why = fmt.Sprintf("%sos image %s → %s", lead, orNone(d.Found), target.OSImage)
			b.add(model.StepPivot, "", why)
			b.stage(why)
			b.policy(model.Policy{Kind: model.PolicyReboot}, why)
			continue
		}
		if restoreEntry(&b, target, d.Path, why) {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(d.Path, unitDir+"/"), ".d/")
		if u := target.Unit(name); u != nil && strings.HasPrefix(d.Path, unitDir+"/") {
			b.add(model.StepWrite, u.Name, why)
			b.add(model.StepDaemonReload, "", why)
			b.policies(u.OnChange, why)
		}
	}
	if inSlot {
		return model.StageInSlot(b.steps())
	}
	return b.steps()
}

// EveryPath is a drift entry for every file, directory, link and unit target manages:
// what Restore needs to put them all back.
func EveryPath(target *model.Rendered) []model.Drift {
	var d []model.Drift
	for _, e := range target.Entries() {
		d = append(d, model.Drift{Path: e.Common().Path, Kind: model.DriftUnlistedKind})
	}
	for _, u := range target.Units {
		d = append(d, model.Drift{Path: UnitPath(u.Name), Kind: model.DriftUnlistedKind})
	}
	return d
}

// unitDir is where the node executor writes units (nodeexec.UnitDir).
const unitDir = "/etc/systemd/system"

// UnitPath is where the node executor writes the unit named name: the path its drift has.
func UnitPath(name string) string { return unitDir + "/" + name }

// Rewrite is a full write of target followed by a reboot, for a node whose current config
// is unknown: what differs cannot be known.
func Rewrite(target *model.Rendered, why string) []model.Step {
	var b stepSet
	for _, s := range Derive(nil, target) {
		b.add(s.Kind, s.Target, s.Reason)
	}
	b.policy(model.Policy{Kind: model.PolicyReboot}, why)
	return model.StageInSlot(b.steps()) // its config unknown, the node stages in its slot (DeriveOn)
}
