// Package nodeexec is the node executor: it applies planned steps to a node's root
// directory ("/" on a node, a directory in tests and in the local provider). Files are
// reached only through os.Root, so no path or symlink can lead outside the root; only paths
// under the allowed prefixes are written; every file is replaced atomically. Effects that
// are not files (systemd, kernel arguments, the OS image, reboot) go through a Host.
//
// Agent is the protocol around the Executor that every agent mode runs (a reboot recorded
// as pending and resumed after the boot, the first boot, Degraded on failure). The modes
// say where steps come from and where reports go: agent/standalone without a cluster,
// agent/kagent on Kubernetes, providers/local in-process. The executor
// derives no steps and speaks no HTTP: the modes fetch rendered configs through
// nodeexec/bootclient.
package nodeexec

import (
	"context"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/mcpfleet/mcp/model"
)

// Host performs the effects that are not files: systemd and the OS.
type Host interface {
	DaemonReload(ctx context.Context) error
	ReloadUnit(ctx context.Context, unit string) error
	RestartUnit(ctx context.Context, unit string) error
	EnableUnit(ctx context.Context, unit string, enable bool) error
	// SetKernelArgs makes each of add present and each of remove absent; arguments
	// already as asked are left as they are.
	SetKernelArgs(ctx context.Context, add, remove []string) error
	// Pivot makes image the OS the machine boots next (rpm-ostree rebase): it takes
	// effect at the reboot that follows.
	Pivot(ctx context.Context, image string) error
	// Stage does, before the node's slot, what a pivot to image (with a kargs step
	// before it: the kernel arguments add and remove) will need, without
	// changing what the running boot or the next one runs: a plain OSTree host pulls the
	// image and stages its deployment behind a finalization lock (no boot entry yet); the
	// switch in the slot then finalizes it. It replaces a deployment staged earlier for
	// anything else.
	Stage(ctx context.Context, image string, add, remove []string) error
	// Unstage discards what kargs and pivot staged for the next boot (rpm-ostree cleanup
	// -p), so that a rolled-back update does not take effect at the next reboot, whoever
	// makes it.
	Unstage(ctx context.Context) error
	Reboot(ctx context.Context) error
	// BootedImage is the OS image the running boot runs, as pools name images; "" when it
	// runs none (a machine booted from an ostree commit, not a container image).
	BootedImage(ctx context.Context) (string, error)
	// KernelArgs are the arguments the running kernel was booted with (/proc/cmdline, read
	// by ParseCmdline); nil when the host cannot say. A kargs step changes them from the
	// next boot on, not at once.
	KernelArgs(ctx context.Context) ([]string, error)
}

// KargsBeforePivot is a Host told, with a kargs step, the image the update's pivot moves
// to next ("" when no pivot follows): a plain OSTree host leaves a deployment staged
// ahead for that image to the pivot, which finalizes it with these arguments, and
// replaces any other — one a stopped apply staged for an image the plan no longer wants
// must not stand in for this update's kernel arguments.
type KargsBeforePivot interface {
	SetKernelArgsBefore(ctx context.Context, add, remove []string, pivot string) error
}

// DefaultAllowed are the path prefixes mcp manages (model.ManagedPrefixes): configuration,
// state and local software, never the OS.
var DefaultAllowed = slices.Clone(model.ManagedPrefixes)

// UnitDir is where units and their drop-ins are written.
const UnitDir = "/etc/systemd/system"

// Executor applies steps to one root.
type Executor struct {
	Root    string
	Allowed []string // default DefaultAllowed
	Host    Host
	// Inject, when set, is asked before each step; its error fails the step as the step's
	// own failure would. The local provider injects faults through it (docs/fleet-format.md).
	Inject func(model.Step) error
	// NoSync, for a root that need survive only a killed process and not a crash of the
	// machine, skips the fsyncs: replacements stay atomic. The local provider's simulated
	// nodes set it (docs/fleet-format.md); a real node must not.
	NoSync bool

	// What Rollback restores: each changed path's prior state and each unit enabled or
	// disabled, in change order.
	undo  []undo
	saved map[string]bool
	// staged: a kargs or pivot step ran since Begin (Rollback unstages).
	staged bool
}

// Run performs one node step moving the node from `from` (nil: nothing managed yet) to
// target. A step kind the executor does not run is refused.
func (e *Executor) Run(ctx context.Context, from, target *model.Rendered, step model.Step) error {
	if from == nil {
		from = &model.Rendered{}
	}
	if e.Inject != nil {
		if err := e.Inject(step); err != nil {
			return err
		}
	}
	switch step.Kind {
	case model.StepWrite:
		return e.write(ctx, from, target, step.Target)
	case model.StepDaemonReload:
		return e.Host.DaemonReload(ctx)
	case model.StepReload:
		return e.Host.ReloadUnit(ctx, step.Target)
	case model.StepRestart:
		return e.Host.RestartUnit(ctx, step.Target)
	case model.StepStage:
		// What the slot's kargs and pivot steps will ask, asked the same way (below): a
		// stage comes with a pivot (steps). No Rollback unstage: what it deploys never
		// boots by default, and the next stage or switch replaces it.
		if target.OSImage == "" {
			return fmt.Errorf("stage: the target %s names no OS image", target.Name)
		}
		_, remove := model.DiffArgs(from.KernelArgs, target.KernelArgs)
		return e.Host.Stage(ctx, target.OSImage, target.KernelArgs, remove)
	case model.StepKargs:
		// Every argument of target is asked for, not only those from lacks: a kargs step
		// also restores arguments removed behind mcp's back (drift), and the Host adds only
		// what is missing, so a step run twice (a resumed apply) changes nothing more.
		_, remove := model.DiffArgs(from.KernelArgs, target.KernelArgs)
		e.staged = true // asked for, even if it fails: Rollback discards what it left
		if h, ok := e.Host.(KargsBeforePivot); ok {
			return h.SetKernelArgsBefore(ctx, target.KernelArgs, remove, e.pivotNext(ctx, target))
		}
		return e.Host.SetKernelArgs(ctx, target.KernelArgs, remove)
	case model.StepPivot:
		e.staged = true
		return e.Host.Pivot(ctx, target.OSImage)
	case model.StepReboot:
		return e.Host.Reboot(ctx)
	case model.StepVerify:
		drift, err := e.CheckNode(ctx, from, target)
		if err != nil {
			return err
		}
		if len(drift) > 0 {
			return &DriftError{Drift: drift}
		}
		return nil
	}
	return fmt.Errorf("the node executor does not run %s steps", step.Kind)
}

// write writes (or removes) the file or unit named by target: a path for files, a unit name
// for units.
func (e *Executor) write(ctx context.Context, from, target *model.Rendered, name string) error {
	r, err := os.OpenRoot(e.Root)
	if err != nil {
		return fmt.Errorf("opening node root: %w", err)
	}
	defer r.Close()
	if strings.HasPrefix(name, "/") {
		return e.writePath(r, from, target, name)
	}
	if u := target.Unit(name); u != nil {
		return e.writeUnit(ctx, r, target, from.Unit(name), u)
	}
	if old := from.Unit(name); old != nil {
		return e.removeUnit(ctx, r, from, old)
	}
	return fmt.Errorf("write %s: neither the target nor the current config has it", name)
}

// writePath writes (or removes) the file, directory or link at p.
func (e *Executor) writePath(r *os.Root, from, target *model.Rendered, p string) error {
	if x := target.Entry(p); x != nil {
		return e.writeEntry(r, from, x)
	}
	if old := from.Entry(p); old != nil {
		return e.removeEntry(r, old)
	}
	return fmt.Errorf("write %s: neither the target nor the current config has it", p)
}

// check refuses a path that is relative, has .. elements, lies outside the allowed
// prefixes, would be written through a prefix that is a link out of them (linkOut), or
// lands in the agent's own records through the node's links (intoRecords); it returns the
// path relative to the root.
func (e *Executor) check(r *os.Root, p string) (string, error) { return e.checkItem(r, p, false) }

// checkItem is check for an item that is a directory (dir) or not: a directory item may be
// one the records are in (it is made only where none is).
func (e *Executor) checkItem(r *os.Root, p string, dir bool) (string, error) {
	rel, err := e.allowed(r, p)
	if err != nil {
		return "", err
	}
	if err := intoRecords(r, p, dir); err != nil {
		return "", err
	}
	return rel, nil
}

// CheckWrites refuses, before any step runs, an update whose write steps would be refused at
// one of their paths (check; a hard link's target too): the node's links leading one into
// the agent's records, say. The update then fails with nothing on the node changed — not
// half-way, its first files written and rolled back. Each write checks its path again.
func (e *Executor) CheckWrites(from, target *model.Rendered, steps []model.Step) error {
	if from == nil {
		from = &model.Rendered{}
	}
	r, err := os.OpenRoot(e.Root)
	if err != nil {
		return fmt.Errorf("opening node root: %w", err)
	}
	defer r.Close()
	for _, s := range steps {
		if s.Kind != model.StepWrite {
			continue
		}
		for p, dir := range writePaths(from, target, s.Target) {
			if _, err := e.checkItem(r, p, dir); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
	}
	return nil
}

// writePaths are the paths a write step for name (a path, or a unit's name) writes or
// removes, each saying whether it is a directory item.
func writePaths(from, target *model.Rendered, name string) map[string]bool {
	out := map[string]bool{}
	if strings.HasPrefix(name, "/") {
		x := target.Entry(name)
		if x == nil {
			x = from.Entry(name)
		}
		out[name] = x != nil && x.Kind() == model.EntryDirectory
		if l, ok := target.Entry(name).(*model.Link); ok && l.Hard {
			out[l.Target] = false
		}
		return out
	}
	for _, u := range []*model.Unit{from.Unit(name), target.Unit(name)} {
		if u == nil {
			continue
		}
		out[unitPath(u.Name)] = false
		for _, d := range u.Dropins {
			out[unitPath(u.Name)+".d/"+d.Name] = false
		}
	}
	return out
}

// allowed is check's part that reads the path and the managed prefixes.
func (e *Executor) allowed(r *os.Root, p string) (string, error) {
	if !strings.HasPrefix(p, "/") || path.Clean(p) != p || strings.Contains(p, "/../") || strings.HasSuffix(p, "/..") {
		return "", fmt.Errorf("path %q is not a clean absolute path", p)
	}
	allowed := e.Allowed
	if allowed == nil {
		allowed = DefaultAllowed
	}
	for _, a := range allowed {
		if strings.HasPrefix(p, a+"/") {
			if err := linkOut(r, a, allowed); err != nil {
				return "", fmt.Errorf("path %s: %w", p, err)
			}
			return strings.TrimPrefix(p, "/"), nil
		}
	}
	// The core user's ~/.ssh, for its SSH keys (model.SSHKeyItems): /home is a link to
	// var/home on CoreOS, which os.Root follows inside the root.
	if p == model.SSHTree || strings.HasPrefix(p, model.SSHTree+"/") {
		return strings.TrimPrefix(p, "/"), nil
	}
	return "", fmt.Errorf("path %s is outside the managed prefixes %s", p, strings.Join(allowed, ", "))
}

// linkOut refuses the allowed prefix a when the node has it as a symbolic link to a place
// outside every allowed prefix. On Fedora CoreOS and RHCOS /usr/local and /opt are links
// into /var (../var/usrlocal, var/opt), and a file written through them lands where the OS
// means it to; os.Root keeps every link inside the root, but not out of /usr/lib through
// an /opt that points there. A prefix that is a directory (a host without OSTree) or is
// missing is written as it is.
func linkOut(r *os.Root, a string, allowed []string) error {
	target, err := r.Readlink(strings.TrimPrefix(a, "/"))
	if err != nil {
		return nil // not a link, or absent: nothing is written through one
	}
	to := target
	if !path.IsAbs(to) {
		to = path.Join(path.Dir(a), to)
	}
	for _, b := range allowed {
		if b != a && (to == b || strings.HasPrefix(to, b+"/")) {
			return nil
		}
	}
	return fmt.Errorf("the node's %s is a link to %s, outside the managed prefixes %s: refusing to write through it",
		a, target, strings.Join(allowed, ", "))
}

// pivotNext is the image a pivot of this update moves to after its kargs step: target's,
// when the host boots another (as the steps derive a pivot); "" when none follows or the
// host cannot say (then nothing staged is left to a pivot: the safe side).
func (e *Executor) pivotNext(ctx context.Context, target *model.Rendered) string {
	if target.OSImage == "" {
		return ""
	}
	booted, err := e.Host.BootedImage(ctx)
	if err != nil || booted == target.OSImage {
		return ""
	}
	return target.OSImage
}
