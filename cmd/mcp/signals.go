package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// How mcp takes the signals people and their tools send (docs/decisions.md, "Interrupts").
//
// SIGINT, SIGTERM and SIGHUP start the graceful stop: the command's context is cancelled
// and it says what it will do (its notice: apply finishes the nodes it started, saves the
// state and releases the lock). Signals that come within burstWindow of the first are the
// same interrupt: `timeout` signals mcp and then its whole process group, and a closing
// terminal reaches a process through the kernel and the shell. A signal after that is a
// person insisting: mcp releases what it must (the state lock) and exits at once.
// SIGPIPE is taken too, so that a closed stdout or stderr is a write error rather than
// death: a rollout goes on when its reader (`| head`) has gone.

// burstWindow is how long after the first interrupt further signals count as the same one.
const burstWindow = time.Second

// forceTimeout bounds what a forced exit still does (releasing the lock) before exiting.
const forceTimeout = 5 * time.Second

// interrupts is the process's handling of interrupts: the running command's notice, and
// what a forced exit does first. A nil *interrupts (tests calling run) does nothing.
type interrupts struct {
	mu     sync.Mutex
	notice string
	// atOnce: the command stops at once on the first interrupt (status -watch), so its
	// notice offers no second one.
	atOnce  bool
	atForce map[int]func(context.Context)
	nextID  int
	stderr  io.Writer
	exit    func(code int)
	// noticed is closed once the first interrupt's notice is written (nil before it).
	noticed chan struct{}
}

// processInterrupts is the process's, set by main; run hands it to the commands.
var processInterrupts *interrupts

// interruptContext returns a context cancelled on the first interrupt. A signal the
// process was started with ignored (nohup's SIGHUP, SIGINT of a background job) stays
// ignored.
func interruptContext() (context.Context, *interrupts, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	in := &interrupts{notice: "stopping", atForce: map[int]func(context.Context){}, stderr: os.Stderr, exit: os.Exit}
	sigs := make(chan os.Signal, 16)
	for _, s := range []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP} {
		if !signal.Ignored(s) {
			signal.Notify(sigs, s)
		}
	}
	// Handled, so that a write to a closed stdout or stderr fails with EPIPE instead of
	// killing the process (os/signal, "SIGPIPE"); nothing reads the channel.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	go in.watch(sigs, cancel, time.Now)
	return ctx, in, func() { signal.Stop(sigs); cancel() }
}

// watch takes the signals as they come: the first cancels, the same burst is ignored,
// a later one forces the exit. Times are taken as signals are received, and nothing here
// waits on a write (a stalled stderr must not make one burst look like two).
func (in *interrupts) watch(sigs <-chan os.Signal, cancel func(), now func() time.Time) {
	var first time.Time
	for sig := range sigs {
		at := now()
		switch {
		case first.IsZero():
			first = at
			done := make(chan struct{})
			in.mu.Lock()
			in.noticed = done
			in.mu.Unlock()
			cancel()
			go func() {
				defer close(done)
				notice, atOnce := in.currentNotice()
				if atOnce {
					fmt.Fprintf(in.stderr, "\nInterrupt received (%s): %s.\n", sig, notice)
					return
				}
				fmt.Fprintf(in.stderr, "\nInterrupt received (%s): %s. Interrupt again to quit at once.\n", sig, notice)
			}()
		case at.Sub(first) < burstWindow:
			// The same interrupt, delivered again (to the process and to its group).
		default:
			in.force(sig)
			return
		}
	}
}

// force exits at once, after running what must still be done (releasing the state lock),
// bounded by forceTimeout. The exit code is 128+signal, as a shell reports a killed process.
func (in *interrupts) force(sig os.Signal) {
	in.mu.Lock()
	fns := make([]func(context.Context), 0, len(in.atForce))
	for _, fn := range in.atForce {
		fns = append(fns, fn)
	}
	in.mu.Unlock()
	done := make(chan struct{})
	go func() {
		msg := "quitting now"
		if len(fns) > 0 {
			msg = "releasing the state lock and quitting now; nodes stopped mid-update are continued by the next mcp apply"
		}
		fmt.Fprintf(in.stderr, "\nInterrupted again (%s): %s.\n", sig, msg)
		ctx, cancel := context.WithTimeout(context.Background(), forceTimeout)
		defer cancel()
		for _, fn := range fns {
			fn(ctx)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(forceTimeout + time.Second):
	}
	code := 130
	if s, ok := sig.(syscall.Signal); ok {
		code = 128 + int(s)
	}
	in.exit(code)
}

// waitNotice lets the first interrupt's notice reach stderr before the process exits (a
// command that stops at once would otherwise exit before saying why), for at most d: the
// notice is written off the signals' path, and a stalled stderr must not hold the exit.
func (in *interrupts) waitNotice(d time.Duration) {
	if in == nil {
		return
	}
	in.mu.Lock()
	done := in.noticed
	in.mu.Unlock()
	if done == nil {
		return
	}
	select {
	case <-done:
	case <-time.After(d):
	}
}

// setNotice says what the running command does on an interrupt ("finishing the nodes
// already started…"); it is printed with the first one.
func (in *interrupts) setNotice(notice string) {
	if in == nil {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.notice, in.atOnce = notice, false
}

// setStopNotice is setNotice for a command that stops at once on an interrupt, with
// nothing to finish: its notice says so and offers no second interrupt.
func (in *interrupts) setStopNotice(notice string) {
	if in == nil {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.notice, in.atOnce = notice, true
}

// swapNotice sets the notice (atOnce as setStopNotice's) and returns the one it replaces,
// for a stage of a command (reading the configuration) to put back when it ends.
func (in *interrupts) swapNotice(notice string, atOnce bool) (string, bool) {
	if in == nil {
		return "", false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	prev, prevAtOnce := in.notice, in.atOnce
	in.notice, in.atOnce = notice, atOnce
	return prev, prevAtOnce
}

func (in *interrupts) currentNotice() (string, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.notice, in.atOnce
}

// onForce registers fn to run before a forced exit, and returns what unregisters it.
func (in *interrupts) onForce(fn func(context.Context)) (drop func()) {
	if in == nil {
		return func() {}
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	id := in.nextID
	in.nextID++
	in.atForce[id] = fn
	return func() {
		in.mu.Lock()
		defer in.mu.Unlock()
		delete(in.atForce, id)
	}
}

// keepWriting passes writes to w until one fails — its reader has gone (`mcp apply | head`)
// or its terminal was closed — and from then on drops them, reporting success: a rollout
// does not stop for want of an audience. The failure is noted once on stderr, while that
// can still be written.
type keepWriting struct {
	mu     sync.Mutex
	w      io.Writer
	stderr io.Writer
	then   string // what goes on without the output ("the apply goes on…")
	failed bool
}

func (k *keepWriting) Write(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.failed {
		return len(p), nil
	}
	if _, err := k.w.Write(p); err != nil {
		k.failed = true
		fmt.Fprintf(k.stderr, "mcp: %v; %s\n", err, k.then)
	}
	return len(p), nil
}
