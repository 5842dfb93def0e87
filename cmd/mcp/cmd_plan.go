package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"sync"

	"github.com/mcpfleet/mcp/clusters"
	"github.com/mcpfleet/mcp/cmd/mcp/views"
	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/state"
)

func (c *cli) plan(args []string) int {
	fs := c.newFlags("plan")
	out := fs.String("out", "", "save the plan to this file, for mcp apply FILE")
	asJSON := fs.Bool("json", false, "print the plan as JSON (Terraform's plan JSON shape)")
	var detailed exitcodeFlag
	fs.Var(&detailed, "detailed-exitcode", "exit 0 when apply would change nothing, 1 on error, 2 when it would change a node or pool (drift restores included, as Terraform's); =config: 2 only for changes the configuration asks for")
	var sf scopeFlags
	sf.register(fs)
	var lf loadFlags
	registerIgnoreSoak(fs, &lf)
	lf.register(fs, true)
	pos, err := c.parse(fs, args)
	if err != nil {
		return 1
	}
	if len(pos) > 0 {
		return c.tooMany("plan", pos)
	}
	ws, ms, ok := c.loadAny(&lf, true)
	if !ok {
		return 1
	}
	if ms != nil {
		return c.planFleet(ms, &lf, &sf, &detailed, *out, *asJSON)
	}
	s, code := c.readStateLocked(ws, &lf, "plan")
	if s == nil {
		return code
	}
	p, err := ws.Plan(s.ctx, s.st, engine.PlanOptions{Targets: sf.targets, Exclude: sf.exclude, Lock: s.lock})
	s.unlock()
	if err != nil {
		return c.failErr(err)
	}
	pf := p.File
	c.soakGates(ws.Config, &lf, lf.ignoreSoak, pf)
	v := views.NewPlan(*asJSON, c.stdout, c.color(&lf))
	if err := v.Plan(pf); err != nil {
		return c.failErr(err)
	}
	if *out != "" {
		if err := planfile.Write(c.path(*out), pf); err != nil {
			return c.failErr(err)
		}
		v.Saved(*out)
	}
	if r := append(pf.Rollout.Refusals(), clusters.Refusals(pf.Soak)...); len(r) > 0 {
		// As a failed precondition in Terraform: the plan is shown (and saved) for review,
		// and the run fails, since apply will refuse it.
		return c.fail("Apply will refuse this plan", strings.Join(r, "\n"))
	}
	if detailed.exitsTwo(pf.Rollout) {
		return 2
	}
	return 0
}

// exitcodeFlag is plan's -detailed-exitcode: a bool flag, as Terraform's, exiting 2
// whenever apply would change anything; -detailed-exitcode=config exits 2 only for
// changes the configuration asks for, not for steps that only restore drift.
type exitcodeFlag struct{ on, configOnly bool }

func (f *exitcodeFlag) String() string {
	if f.configOnly {
		return "config"
	}
	return ""
}

func (f *exitcodeFlag) IsBoolFlag() bool { return true }

func (f *exitcodeFlag) Set(v string) error {
	switch v {
	case "true":
		*f = exitcodeFlag{on: true}
	case "false":
		*f = exitcodeFlag{}
	case "config":
		*f = exitcodeFlag{on: true, configOnly: true}
	default:
		return errors.New("it takes no value, or =config (exit 2 only for configuration changes)")
	}
	return nil
}

// exitsTwo says whether the plan makes the flag exit 2.
func (f *exitcodeFlag) exitsTwo(p *planner.Rollout) bool {
	switch {
	case !f.on:
		return false
	case f.configOnly:
		return p.HasConfigChanges()
	}
	return p.HasChanges()
}

// scopeFlags are -target and -exclude (plan, and apply without a saved plan).
type scopeFlags struct{ targets, exclude multiFlag }

func (sf *scopeFlags) register(fs *flag.FlagSet) {
	fs.Var(&sf.targets, "target", "limit the rollout to pool.NAME or node.NAME (repeatable; for exceptional use, as Terraform's -target)")
	fs.Var(&sf.exclude, "exclude", "keep node.NAME out of the rollout, as its mcpfleet.io/hold label would (repeatable)")
}

// color reports whether a view colours its output: not with -no-color, and only on a
// terminal.
func (c *cli) color(lf *loadFlags) bool { return !lf.noColor && isTerminal(c.stdout) }

// openLocked parses the flags of the command op, which takes no arguments (with the load
// and lock flags), loads the configuration and reads the state under the lock
// (readStateLocked). On failure it prints
// why and returns a nil session and the exit code.
func (c *cli) openLocked(fs *flag.FlagSet, lf *loadFlags, args []string, op string) (*engine.Workspace, *session, int) {
	lf.register(fs, true)
	pos, err := c.parse(fs, args)
	if err != nil {
		return nil, nil, 1
	}
	if len(pos) > 0 {
		return nil, nil, c.tooMany(op, pos)
	}
	ws := c.load(lf)
	if ws == nil {
		return nil, nil, 1
	}
	s, code := c.readStateLocked(ws, lf, op)
	return ws, s, code
}

// session is the state a command read, and how it holds the state lock.
type session struct {
	st *state.State
	// ctx ends when the lock is lost while held (a Lease another run took), so that no
	// new work starts.
	ctx    context.Context
	unlock func()
	lock   engine.Locking // told to Plan and Apply
}

// readStateLocked takes the state lock (unless -lock=false) and reads the state. On
// failure it prints why and returns a nil session and the exit code.
func (c *cli) readStateLocked(ws *engine.Workspace, lf *loadFlags, op string) (*session, int) {
	ctx, cancelCause := context.WithCancelCause(c.ctx)
	cancel := func() { cancelCause(nil) }
	unlock := cancel
	lock := engine.Locking{NoLock: true}
	if lf.lock {
		u, held, err := ws.Lock(c.ctx, op, lf.lockTimeout)
		if err != nil {
			cancel()
			var le *state.LockError
			if errors.As(err, &le) {
				return nil, c.failErr(err)
			}
			return nil, c.fail("Error acquiring the state lock", views.Capitalize(err.Error()))
		}
		lock = held
		stop := make(chan struct{})
		if l, ok := u.(state.Losable); ok {
			go func() {
				select {
				case <-l.Lost():
					c.fail("Lost the state lock", views.Capitalize(l.LostErr().Error())+"; starting nothing new.")
					cancelCause(fmt.Errorf("%w: %v", state.ErrLockLost, l.LostErr()))
				case <-stop:
				}
			}()
		}
		// Released even when the run was interrupted, or forced to quit (signals.go): a
		// held lock would block the next run.
		var once sync.Once
		release := func(ctx context.Context) {
			once.Do(func() {
				if err := u.Unlock(ctx); err != nil {
					c.fail("Error releasing the state lock", views.Capitalize(err.Error()))
				}
			})
		}
		dropForce := c.intr.onForce(release)
		unlock = func() {
			close(stop)
			cancel()
			dropForce()
			release(context.WithoutCancel(c.ctx))
		}
	}
	st, err := ws.ReadState(ctx)
	if err != nil {
		unlock()
		return nil, c.failErr(err)
	}
	return &session{st: st, ctx: ctx, unlock: unlock, lock: lock}, 0
}
