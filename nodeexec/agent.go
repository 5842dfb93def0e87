package nodeexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/mcpfleet/mcp/model"
)

// StateDir is the agent's own directory inside the root: the pending update, the
// first-boot record and each agent mode's records live there.
const StateDir = "var/lib/mcp"

// PendingPath is where, inside the root, the agent records an update that is rebooting.
const PendingPath = StateDir + "/pending.json"

// NodeState is where an agent reports: node.json for the local provider, Node annotations
// on Kubernetes, files for a standalone agent.
type NodeState interface {
	// Working: the node is moving to desired.
	Working(desired string) error
	// Done: the node runs current, verified.
	Done(current string) error
	// Degraded: the update failed for reason.
	Degraded(reason string) error
	// BootID is the identity of the running boot (/proc/sys/kernel/random/boot_id).
	BootID() (string, error)
}

// Agent runs updates on one node: the protocol around the Executor, the same for every
// provider. A reboot splits an update in two: before it, a pending record (the target
// config, the boot id, the steps left) is written in the root; the agent that starts after
// boot finds it, checks the boot id changed, runs the steps left (verify) and reports.
type Agent struct {
	Exec  *Executor
	State NodeState
	// RebootWait bounds how long the agent waits to be stopped by a reboot it asked for
	// (a simulated reboot returns at once, with a new boot id).
	RebootWait time.Duration
}

type pending struct {
	From   string          `json:"from,omitempty"`
	Target *model.Rendered `json:"target"`
	BootID string          `json:"boot_id"` // before the reboot
	Steps  []model.Step    `json:"steps"`   // left after the reboot
	Since  time.Time       `json:"since"`
	// Attempts counts the reboots asked for under this record: a reboot that did not
	// happen is asked for once more, then the node is Degraded.
	Attempts int `json:"attempts,omitempty"`
	// FromKernelArgs are From's kernel arguments: verify after the reboot checks that those
	// the update removed are gone.
	FromKernelArgs []string `json:"from_kernel_args,omitempty"`
}

// maxRebootAttempts bounds the reboots asked for into one update when the boot id does
// not change.
const maxRebootAttempts = 2

// ErrRebooting is returned when the machine is going down for a reboot: the update goes
// on in the agent that starts after boot (Resume).
var ErrRebooting = errors.New("rebooting")

// Update moves the node from `from` (nil: nothing managed) to target through steps, all
// node steps, calling done after each. A failure before the reboot rolls the disk back to
// from and reports Degraded; drift the steps do not restore stops the update before it
// starts.
//
// An update may be a retry of one that was interrupted (its caller killed, the machine
// rebooted under it): what is on disk for target already is progress, not drift, and a
// pending reboot into target is judged by the boot id — changed, the reboot happened and
// the steps through it are done (they are reported to done, not run again); unchanged, the
// reboot is asked for once more. A pending record for another config is superseded.
//
// An adoption (one adopt step) changes nothing: the node is recorded on target only if it
// carries it whole (adopt).
func (a *Agent) Update(ctx context.Context, from, target *model.Rendered, steps []model.Step, done func(model.Step)) error {
	if adoption(steps) {
		return a.adopt(ctx, target, steps[0], done)
	}
	if model.StageOnly(steps) {
		return a.stage(ctx, from, target, steps, done)
	}
	if err := a.State.Working(target.Name); err != nil {
		return err
	}
	if err := a.Exec.Sweep(from, target); err != nil {
		return a.Degrade(fmt.Errorf("sweeping temporary files: %w", err))
	}
	steps, attempts, err := a.judgePending(from, target, steps, done)
	if err != nil {
		return a.Degrade(err)
	}
	if err := a.Exec.CheckBeforeUpdate(from, target, steps); err != nil {
		return a.Degrade(err)
	}
	if err := a.Exec.CheckWrites(from, target, steps); err != nil {
		return a.Degrade(err)
	}
	a.Exec.Begin()
	for i, s := range steps {
		if !s.Kind.OnNode() {
			return a.Degrade(fmt.Errorf("%s is not a node step", s))
		}
		if s.Kind == model.StepReboot {
			return a.reboot(ctx, from, target, steps[i+1:], s, attempts, done)
		}
		if err := a.Exec.Run(ctx, from, target, s); err != nil {
			err = fmt.Errorf("%s: %w", s, err)
			if rerr := a.Exec.Rollback(ctx); rerr != nil {
				return a.Degrade(fmt.Errorf("%w; %v", err, rerr))
			}
			return a.Degrade(fmt.Errorf("%w (rolled back to %s)", err, nameOf(from)))
		}
		done(s)
	}
	return a.finish(target.Name)
}

// judgePending weighs a pending record left by an earlier update before this one runs. One
// for another config, or one the node has since reported Done on (it runs target already,
// and the record names another config it came from), is superseded: removed. One for target
// with a changed boot id means the machine rebooted into target: the steps through the
// reboot are reported done and dropped. One with the same boot id means the reboot did not
// happen: it returns the reboots already asked for, so that it is asked for once more only.
//
// A record of an update from target to target (a restore that needed a reboot) cannot be
// told from a leftover of an earlier such restore; it is taken as this update's.
func (a *Agent) judgePending(from, target *model.Rendered, steps []model.Step, done func(model.Step)) ([]model.Step, int, error) {
	p, err := a.readPending()
	if err != nil || p == nil {
		return steps, 0, err
	}
	stale := from != nil && from.Name == p.Target.Name && p.From != p.Target.Name
	if p.Target.Name != target.Name || stale {
		return steps, 0, a.removePending()
	}
	boot, err := a.State.BootID()
	if err != nil {
		return nil, 0, fmt.Errorf("reading boot id: %w", err)
	}
	if boot == p.BootID {
		return steps, max(p.Attempts, 1), nil
	}
	if i := slices.IndexFunc(steps, func(s model.Step) bool { return s.Kind == model.StepReboot }); i >= 0 {
		// Reported done with what shows it: they ran under an earlier update, not this one.
		for _, s := range steps[:i+1] {
			s.Evidence = fmt.Sprintf("already happened: the node rebooted into %s since (boot id %s → %s)", target.Name, p.BootID, boot)
			done(s)
		}
		steps = steps[i+1:]
	}
	return steps, 0, nil
}

// finish reports Done, then removes the pending record if there is one, and the
// first-boot record (the node runs a config now): a crash between the two repeats an
// idempotent report (the pending record is judged again by the next update or Resume; a
// first-boot record on a node that runs a config is removed by FirstBoot).
func (a *Agent) finish(current string) error {
	if err := a.State.Done(current); err != nil {
		return err
	}
	if err := a.removePending(); err != nil {
		return err
	}
	return a.removeFirstBoot()
}

// stage runs a hand-over of stage steps: nothing the node runs or boots next by default
// changes, so it ends Done on from, the config the node runs, and leaves the records of
// a pending reboot as they are. A stage that fails leaves the node on from too: Degraded,
// with nothing to roll back.
func (a *Agent) stage(ctx context.Context, from, target *model.Rendered, steps []model.Step, done func(model.Step)) error {
	if from == nil {
		return a.Degrade(fmt.Errorf("stage for %s: the node runs no known config (a stage runs only ahead of an update from one)", target.Name))
	}
	if err := a.State.Working(target.Name); err != nil {
		return err
	}
	for _, s := range steps {
		if err := a.Exec.Run(ctx, from, target, s); err != nil {
			return a.Degrade(fmt.Errorf("%s: %w (nothing the node runs changed: it runs %s)", s, err, from.Name))
		}
		done(s)
	}
	return a.State.Done(from.Name)
}

func nameOf(r *model.Rendered) string {
	if r == nil {
		return "the unmanaged state"
	}
	return r.Name
}

// Degrade reports the node Degraded with err as the reason and returns err (noting a
// failure to report as well). Every agent mode reports its failures through it.
func (a *Agent) Degrade(err error) error {
	if serr := a.State.Degraded(err.Error()); serr != nil {
		return fmt.Errorf("%w (and reporting Degraded failed: %v)", err, serr)
	}
	return err
}

// reboot records the pending update (attempts: reboots already asked for under it) and
// asks for the reboot.
func (a *Agent) reboot(ctx context.Context, from, target *model.Rendered, rest []model.Step, s model.Step, attempts int, done func(model.Step)) error {
	if attempts >= maxRebootAttempts {
		return a.Degrade(fmt.Errorf("%s into %s: asked for %d times, and the boot id is unchanged", s, target.Name, attempts))
	}
	boot, err := a.State.BootID()
	if err != nil {
		return a.Degrade(fmt.Errorf("reading boot id: %w", err))
	}
	// A state that reports only what a watch of the hand-over cannot tell (kagent's)
	// says the update is under way before the machine goes down, and before the pending
	// record exists: a reboot it could not report is not asked for (no record is left for
	// the next start to reboot on).
	if r, ok := a.State.(interface{ Rebooting() error }); ok {
		if err := r.Rebooting(); err != nil {
			return a.Degrade(fmt.Errorf("%s: reporting it before asking for it: %w", s, err))
		}
	}
	p := pending{Target: target, BootID: boot, Steps: rest, Since: time.Now().UTC(), Attempts: attempts + 1}
	if from != nil {
		p.From, p.FromKernelArgs = from.Name, from.KernelArgs
	}
	if err := a.writePending(&p); err != nil {
		return a.Degrade(fmt.Errorf("recording the pending reboot: %w", err))
	}
	if err := a.Exec.Run(ctx, from, target, s); err != nil {
		if ctx.Err() != nil {
			// Stopped while the machine reboots: it comes back all the same, and the
			// pending record lets whoever runs next finish the update.
			return ErrRebooting
		}
		return a.Degrade(fmt.Errorf("%s: %w", s, err))
	}
	if now, err := a.State.BootID(); err == nil && now != boot {
		s.Evidence = fmt.Sprintf("boot id %s → %s", boot, now)
		done(s) // a simulated reboot: the machine is back already
		_, err := a.Resume(ctx, done)
		return err
	}
	// A real reboot stops this process; if it does not come, say so.
	select {
	case <-ctx.Done():
		return ErrRebooting
	case <-time.After(a.RebootWait):
		return a.Degrade(fmt.Errorf("%s: asked for a reboot %s ago and the machine did not go down", s, a.RebootWait))
	}
}

// Resume is what an agent does when it starts: when a pending record is there, the node
// rebooted into an update; with a new boot id it runs the steps left and reports. With the
// same boot id the reboot did not happen: it is asked for once more, and after that the
// node is Degraded. It returns false when nothing was pending.
func (a *Agent) Resume(ctx context.Context, done func(model.Step)) (bool, error) {
	p, err := a.readPending()
	if err != nil || p == nil {
		return false, err
	}
	boot, err := a.State.BootID()
	if err != nil {
		return true, a.Degrade(fmt.Errorf("reading boot id: %w", err))
	}
	from := &model.Rendered{Name: p.From, KernelArgs: p.FromKernelArgs}
	if p.From == "" {
		from = nil
	}
	if err := a.Exec.Sweep(nil, p.Target); err != nil {
		return true, a.Degrade(fmt.Errorf("sweeping temporary files: %w", err))
	}
	if boot == p.BootID {
		// A record from before attempts were counted asked once; reboot gives up after the
		// last attempt.
		return true, a.reboot(ctx, from, p.Target, p.Steps, model.Step{Kind: model.StepReboot}, max(p.Attempts, 1), done)
	}
	for _, s := range p.Steps {
		if err := a.Exec.Run(ctx, from, p.Target, s); err != nil {
			return true, a.endAttempt(fmt.Errorf("after reboot: %s: %w", s, err))
		}
		done(s)
	}
	return true, a.finish(p.Target.Name)
}

// endAttempt ends an update that failed after its reboot (a verify that found the machine
// back on the deployment it ran before, an OS rollback): the pending record goes, then the
// node reports Degraded. The record said what was in flight; kept, a later update would
// take the changed boot id for its own reboot having happened and skip the steps the node
// still needs. Removed first, so that a crash between the two leaves a node whose next
// update starts from what it runs, not one that reports Degraded and still looks
// mid-reboot.
func (a *Agent) endAttempt(err error) error {
	if rerr := a.removePending(); rerr != nil {
		return a.Degrade(fmt.Errorf("%w (and removing the pending record failed: %v)", err, rerr))
	}
	return a.Degrade(err)
}

func (a *Agent) writePending(p *pending) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return a.Exec.WriteRecord(PendingPath, b)
}

// PendingReboot is the update the root's agent recorded before a reboot and has not
// finished (nil: none): what a provider reports of the node (model.Node.PendingReboot).
func (e *Executor) PendingReboot() (*model.PendingReboot, error) {
	p, err := readPending(e.Root)
	if err != nil || p == nil {
		return nil, err
	}
	return &model.PendingReboot{Config: p.Target.Name, BootID: p.BootID}, nil
}

// PendingTarget is the config of the update the root's agent recorded before a reboot (nil:
// none pending). An agent mode that keeps the config its node runs, not only its name,
// takes it from here when the update finishes after the boot (Resume reports Done).
func (e *Executor) PendingTarget() (*model.Rendered, error) {
	p, err := readPending(e.Root)
	if err != nil || p == nil {
		return nil, err
	}
	return p.Target, nil
}

func (a *Agent) readPending() (*pending, error) { return readPending(a.Exec.Root) }

func readPending(root string) (*pending, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := ReadRecord(r, PendingPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	p := new(pending)
	if err := json.Unmarshal(b, p); err != nil || p.Target == nil {
		return nil, fmt.Errorf("reading /%s: not a pending update record (%v)", PendingPath, err)
	}
	return p, nil
}

func (a *Agent) removePending() error { return a.Exec.removeRecord(PendingPath) }
