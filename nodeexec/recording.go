package nodeexec

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// RecordingHost records the Host calls it gets instead of performing them, for tests and
// for machines with no systemd (the local provider).
type RecordingHost struct {
	mu    sync.Mutex
	Calls []string
	// Fail makes the call with this text fail (e.g. "restart chronyd.service").
	Fail string
	// OnCall, when set, sees each call as it is made.
	OnCall func(call string) error
	// Booted is the OS image BootedImage reports (a read, not recorded). A pivot does not
	// change it: it takes effect at a boot, and the recording host does not boot.
	Booted string
	// Root, when set, is the node root whose enablement links EnableUnit makes and removes
	// as systemctl would (LinkUnit); otherwise enabling is only recorded.
	Root string
}

func (h *RecordingHost) record(call string) error {
	h.mu.Lock()
	h.Calls = append(h.Calls, call)
	fail, on := h.Fail, h.OnCall
	h.mu.Unlock()
	if call == fail {
		return fmt.Errorf("%s: injected failure", call)
	}
	if on != nil {
		return on(call)
	}
	return nil
}

func (h *RecordingHost) DaemonReload(context.Context) error { return h.record("daemon-reload") }
func (h *RecordingHost) ReloadUnit(_ context.Context, u string) error {
	return h.record("reload " + u)
}
func (h *RecordingHost) RestartUnit(_ context.Context, u string) error {
	return h.record("restart " + u)
}
func (h *RecordingHost) EnableUnit(_ context.Context, u string, enable bool) error {
	call := "disable " + u
	if enable {
		call = "enable " + u
	}
	if err := h.record(call); err != nil || h.Root == "" {
		return err
	}
	return LinkUnit(h.Root, u, enable)
}
func (h *RecordingHost) SetKernelArgs(_ context.Context, add, remove []string) error {
	return h.record("kargs +" + strings.Join(add, ",") + " -" + strings.Join(remove, ","))
}
func (h *RecordingHost) Pivot(_ context.Context, image string) error {
	return h.record("pivot " + image)
}
func (h *RecordingHost) Reboot(context.Context) error { return h.record("reboot") }

// BootedImage reports Booted.
func (h *RecordingHost) BootedImage(context.Context) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.Booted, nil
}

// Recorded returns a copy of the calls so far.
func (h *RecordingHost) Recorded() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.Calls...)
}
