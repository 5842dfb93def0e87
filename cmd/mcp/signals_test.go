package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// watchRecorder runs interrupts.watch on a fake clock and records what it did.
type watchRecorder struct {
	in      *interrupts
	sigs    chan os.Signal
	stderr  syncBuffer
	mu      sync.Mutex
	now     time.Time
	looks   int // times watch read the clock: once per signal taken
	cancels int
	code    int
	done    chan struct{}
}

func newWatchRecorder(notice string) *watchRecorder {
	r := &watchRecorder{sigs: make(chan os.Signal, 16), now: time.Unix(1_000_000, 0), code: -1, done: make(chan struct{})}
	r.in = &interrupts{notice: notice, atForce: map[int]func(context.Context){}, stderr: &r.stderr,
		exit: func(code int) { r.mu.Lock(); r.code = code; r.mu.Unlock() }}
	go func() {
		defer close(r.done)
		r.in.watch(r.sigs, func() { r.mu.Lock(); r.cancels++; r.mu.Unlock() }, func() time.Time {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.looks++
			return r.now
		})
	}()
	return r
}

// send delivers sig after the fake clock moved by d, and waits until watch has taken it
// (read the clock for it).
func (r *watchRecorder) send(t *testing.T, d time.Duration, sig os.Signal) {
	r.mu.Lock()
	r.now = r.now.Add(d)
	looks := r.looks
	r.mu.Unlock()
	r.sigs <- sig
	waitFor(t, 10*time.Second, "the signal taken", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.looks > looks
	})
}

func (r *watchRecorder) result() (cancels, code int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cancels, r.code
}

// Signals of one burst — `timeout` signalling mcp and then its process group, a closing
// terminal's SIGHUP, SIGCONT and SIGTERM — are one interrupt: the graceful stop, with the
// command's own notice. A signal a second later forces the exit, after releasing the lock.
func TestSignalsOfOneBurstCountOnce(t *testing.T) {
	r := newWatchRecorder("finishing the nodes already started")
	released := 0
	r.in.onForce(func(context.Context) { released++ })
	dropped := r.in.onForce(func(context.Context) { t.Error("an unregistered clean-up ran") })
	dropped()
	r.send(t, 0, syscall.SIGTERM)
	r.send(t, time.Millisecond, syscall.SIGTERM)
	r.send(t, 200*time.Millisecond, syscall.SIGHUP)
	r.send(t, 500*time.Millisecond, syscall.SIGTERM)
	if cancels, _ := r.result(); cancels != 1 {
		t.Fatalf("after one burst: %d cancels, want one graceful stop", cancels)
	}
	waitFor(t, 10*time.Second, "the notice", func() bool {
		return strings.Contains(r.stderr.String(), "Interrupt received (terminated): finishing the nodes already started. Interrupt again to quit at once.")
	})
	r.send(t, 2*time.Second, os.Interrupt)
	<-r.done
	// 130 is SIGINT's: none of the burst's signals forced the exit (SIGTERM's is 143).
	if cancels, code := r.result(); cancels != 1 || code != 130 || released != 1 {
		t.Errorf("a later interrupt: %d cancels, exit %d, lock released %d times; want exit 130 after releasing it once", cancels, code, released)
	}
	if !strings.Contains(r.stderr.String(), "Interrupted again (interrupt): releasing the state lock and quitting now") {
		t.Errorf("stderr:\n%s", r.stderr.String())
	}
}

// failingWriter is a stdout whose reader has gone.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.EPIPE }

// A closed stdout does not stop an apply: it goes on to the end, exits with its own result
// (0: every node updated), notes once on stderr that its output is gone, and releases the
// lock.
func TestApplyGoesOnWithoutStdout(t *testing.T) {
	dir := quickstart(t)
	var errb syncBuffer
	code := run(context.Background(), []string{"-chdir=" + dir, "apply", "-auto-approve", "-no-color"}, strings.NewReader(""), failingWriter{}, &errb)
	if code != 0 || strings.Count(errb.String(), "broken pipe; the apply goes on without showing its progress there") != 1 {
		t.Fatalf("apply with a closed stdout: exit %d\n%s", code, errb.String())
	}
	if code, _, errOut := mcp(t, dir, "plan", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Errorf("plan after the apply: exit %d, want 0 (converged)\n%s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "mcp.state.lock")); !os.IsNotExist(err) {
		t.Errorf("the state lock is left: %v", err)
	}
}

// An interrupt stops status -watch at once, and its notice says that, not apply's
// two-stage one ("Interrupt again to quit at once" would offer what is not there).
func TestStatusWatchInterruptNotice(t *testing.T) {
	dir := quickstart(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errb syncBuffer
	in := &interrupts{notice: "stopping", atForce: map[int]func(context.Context){}, stderr: &errb,
		exit: func(code int) { t.Errorf("forced exit %d", code) }}
	sigs := make(chan os.Signal, 1)
	go in.watch(sigs, cancel, time.Now)
	defer close(sigs)
	saved := processInterrupts
	processInterrupts = in
	defer func() { processInterrupts = saved }()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-chdir=" + dir, "status", "-watch"}, strings.NewReader(""), &syncBuffer{}, &errb)
	}()
	// The configuration's read stops at once too, with its own notice: wait for the watch's.
	waitFor(t, 30*time.Second, "the watch's notice set", func() bool {
		notice, atOnce := in.currentNotice()
		return atOnce && strings.HasPrefix(notice, "stopped watching")
	})
	sigs <- os.Interrupt
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("status -watch interrupted: exit %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("status -watch did not stop on an interrupt")
	}
	in.waitNotice(10 * time.Second)
	if got, want := errb.String(), "\nInterrupt received (interrupt): stopped watching; nothing was changed.\n"; got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
}
