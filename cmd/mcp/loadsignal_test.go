package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
	"github.com/mcpfleet/mcp/providers/record"
)

// An interrupt while the configuration is being read ends the command at once, whatever
// the read is waiting on (here a provider that never finishes starting; a file on a
// stalled mount would do the same): reading changes nothing, so nothing is left to
// finish, and the notice offers no second interrupt.
func TestInterruptWhileReadingEndsTheCommand(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	stuck := record.Spec
	stuck.New = func(s model.Settings) (providers.Provider, error) {
		close(entered)
		<-release
		return record.Spec.New(s)
	}
	withStuck := buildParts{Providers: append(slices.DeleteFunc(slices.Clone(parts.Providers),
		func(p providers.Spec) bool { return p.Name == stuck.Name }), stuck), Backends: parts.Backends}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.hcl"), []byte("provider \"record\" {\n  nodes = 1\n}\npool \"worker\" {}\n"), 0o644)

	var errb syncBuffer
	in := &interrupts{notice: "stopping", atForce: map[int]func(context.Context){}, stderr: &errb,
		exit: func(code int) { t.Errorf("forced exit %d", code) }}
	saved := processInterrupts
	processInterrupts = in
	defer func() { processInterrupts = saved }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		var out bytes.Buffer
		done <- runWith(ctx, withStuck, []string{"-chdir=" + dir, "plan", "-no-color"}, strings.NewReader(""), &out, &errb)
	}()
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the provider was never started")
	}
	if notice, atOnce := in.currentNotice(); !atOnce || !strings.Contains(notice, "still being read") {
		t.Errorf("notice while reading: %q (at once %v)", notice, atOnce)
	}
	cancel()
	select {
	case code := <-done:
		if code != 1 || !strings.Contains(errb.String(), "Error: Interrupted") || !strings.Contains(errb.String(), "while it read the configuration") {
			t.Errorf("exit %d\n%s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("plan still running 10 s after the interrupt")
	}
}
