package nodeexec

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// RecordingHost records the Host calls it gets instead of performing them, for tests and
// for machines with no systemd. With a Machine and a BootID it also stands in for the
// machine's OS (recordmachine.go): kernel arguments and pivots are staged there and booted
// when the boot id changes, and what the running boot runs is read from there.
type RecordingHost struct {
	mu    sync.Mutex
	Calls []string
	// Fail makes the call with this text fail (e.g. "restart chronyd.service").
	Fail string
	// OnCall, when set, sees each call as it is made.
	OnCall func(call string) error
	// Booted is the OS image BootedImage reports (a read, not recorded) while the machine
	// has no MachineBootedImage: the image it was first booted from.
	Booted string
	// Root, when set, is the node root whose enablement links EnableUnit makes and removes
	// as systemctl would (LinkUnit); otherwise enabling is only recorded.
	Root string
	// Machine, with BootID, is the directory where the host keeps the machine it stands in
	// for (recordmachine.go); a change of BootID's answer is a boot.
	Machine string
	BootID  func() (string, error)

	machine sync.Mutex // the machine's files
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
	if err := h.record("kargs +" + strings.Join(add, ",") + " -" + strings.Join(remove, ",")); err != nil || !h.simulated() {
		return err
	}
	return h.stage(func(st *stagedDeployment) { st.KernelArgs = WithArgs(st.KernelArgs, add, remove) })
}
func (h *RecordingHost) Pivot(_ context.Context, image string) error {
	if err := h.record("pivot " + image); err != nil || !h.simulated() {
		return err
	}
	return h.stage(func(st *stagedDeployment) { st.OSImage = image })
}
func (h *RecordingHost) Reboot(context.Context) error { return h.record("reboot") }

// Stage records the call: what a simulated machine boots next is what kargs and pivot
// stage, and a stage changes nothing of it.
func (h *RecordingHost) Stage(_ context.Context, image string, add, remove []string) error {
	return h.record("stage " + image + " +" + strings.Join(add, ",") + " -" + strings.Join(remove, ","))
}

// Unstage discards the machine's staged deployment, as rpm-ostree cleanup -p does.
func (h *RecordingHost) Unstage(context.Context) error {
	if err := h.record("unstage"); err != nil || !h.simulated() {
		return err
	}
	return h.unstage()
}

// BootedImage reports the machine's MachineBootedImage, else Booted.
func (h *RecordingHost) BootedImage(context.Context) (string, error) {
	if !h.simulated() {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.Booted, nil
	}
	h.machine.Lock()
	defer h.machine.Unlock()
	_, image, err := h.look()
	return image, err
}

// KernelArgs reports the machine's MachineCmdline; nil when there is none, or no machine.
func (h *RecordingHost) KernelArgs(context.Context) ([]string, error) {
	if !h.simulated() {
		return nil, nil
	}
	h.machine.Lock()
	defer h.machine.Unlock()
	kargs, _, err := h.look()
	return kargs, err
}

// Recorded returns a copy of the calls so far.
func (h *RecordingHost) Recorded() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.Calls...)
}
