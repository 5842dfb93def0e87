// Package systemdhost performs a node's non-file effects on a real machine: systemd over
// D-Bus (go-systemd, the …Context methods) and the OS through configurable commands
// (rpm-ostree by default). It implements nodeexec.Host.
package systemdhost

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/coreos/go-systemd/v22/dbus"
)

// Commands are the programs that change kernel arguments and the OS image. Each is an
// argv; "{image}" is replaced by the image, and kernel-argument changes are appended as
// --append=ARG / --delete=ARG (rpm-ostree's and bootc's spelling).
type Commands struct {
	Kargs []string // default: rpm-ostree kargs
	Pivot []string // default: rpm-ostree rebase ostree-unverified-registry:{image}
}

// DefaultCommands are those of Fedora CoreOS / RHCOS.
var DefaultCommands = Commands{
	Kargs: []string{"rpm-ostree", "kargs"},
	Pivot: []string{"rpm-ostree", "rebase", "ostree-unverified-registry:{image}"},
}

// Host talks to one systemd manager.
type Host struct {
	Conn     *dbus.Conn
	Commands Commands
	// Chroot, when set, runs the commands inside that directory (chroot DIR …): an agent in
	// a container with the host's root mounted at /host changes the host's OS, not its own.
	Chroot string
	// Run executes a command; tests replace it with a recorder (the tools do not exist
	// on machines other than the nodes).
	Run func(ctx context.Context, argv []string) error
}

// New connects to the system manager (DBUS_SYSTEM_BUS_ADDRESS is honoured).
func New(ctx context.Context) (*Host, error) {
	c, err := dbus.NewSystemConnectionContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("connecting to systemd over D-Bus: %w", err)
	}
	return &Host{Conn: c, Commands: DefaultCommands, Run: runCommand}, nil
}

func runCommand(ctx context.Context, argv []string) error {
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Close closes the D-Bus connection.
func (h *Host) Close() { h.Conn.Close() }

func (h *Host) DaemonReload(ctx context.Context) error {
	if err := h.Conn.ReloadContext(ctx); err != nil {
		return fmt.Errorf("systemd daemon-reload: %w", err)
	}
	return nil
}

type jobFunc func(ctx context.Context, name, mode string, ch chan<- string) (int, error)

// job runs one unit job and then checks the unit itself: a job can end "done" while the
// unit has failed (ExecStart=/bin/false), so the unit's state is what counts.
func (h *Host) job(ctx context.Context, verb, unit string, f jobFunc) error {
	ch := make(chan string, 1)
	if _, err := f(ctx, unit, "replace", ch); err != nil {
		return fmt.Errorf("%s %s: %w", verb, unit, err)
	}
	var result string
	select {
	case result = <-ch:
	case <-ctx.Done():
		return fmt.Errorf("%s %s: %w", verb, unit, ctx.Err())
	}
	if result != "done" {
		return fmt.Errorf("%s %s: job %s%s", verb, unit, result, h.unitDetail(ctx, unit))
	}
	active, err := h.property(ctx, unit, "ActiveState")
	if err != nil {
		return fmt.Errorf("%s %s: reading its state: %w", verb, unit, err)
	}
	if active == "failed" {
		return fmt.Errorf("%s %s: unit failed%s", verb, unit, h.unitDetail(ctx, unit))
	}
	return nil
}

func (h *Host) property(ctx context.Context, unit, name string) (string, error) {
	p, err := h.Conn.GetUnitPropertyContext(ctx, unit, name)
	if err != nil {
		return "", err
	}
	s, _ := p.Value.Value().(string)
	return s, nil
}

// unitDetail gives the unit's state for an error message: " (active=failed sub=failed result=exit-code)".
func (h *Host) unitDetail(ctx context.Context, unit string) string {
	var parts []string
	for _, n := range []string{"ActiveState", "SubState"} {
		if v, err := h.property(ctx, unit, n); err == nil {
			parts = append(parts, strings.ToLower(strings.TrimSuffix(n, "State"))+"="+v)
		}
	}
	if p, err := h.Conn.GetServicePropertyContext(ctx, unit, "Result"); err == nil {
		if s, ok := p.Value.Value().(string); ok {
			parts = append(parts, "result="+s)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, " ") + ")"
}

func (h *Host) RestartUnit(ctx context.Context, unit string) error {
	return h.job(ctx, "restart", unit, h.Conn.RestartUnitContext)
}

func (h *Host) ReloadUnit(ctx context.Context, unit string) error {
	return h.job(ctx, "reload", unit, h.Conn.ReloadUnitContext)
}

func (h *Host) EnableUnit(ctx context.Context, unit string, enable bool) error {
	var err error
	if enable {
		_, _, err = h.Conn.EnableUnitFilesContext(ctx, []string{unit}, false, true)
	} else {
		_, err = h.Conn.DisableUnitFilesContext(ctx, []string{unit}, false)
	}
	if err != nil {
		verb := map[bool]string{true: "enable", false: "disable"}[enable]
		return fmt.Errorf("%s %s: %w", verb, unit, err)
	}
	return nil
}

func (h *Host) SetKernelArgs(ctx context.Context, add, remove []string) error {
	if len(add) == 0 && len(remove) == 0 {
		return nil
	}
	argv := append([]string(nil), h.Commands.Kargs...)
	// The -if-missing/-if-present forms make the call idempotent (nodeexec.Host's
	// contract): a resumed step, or one restoring drift, asks for arguments already there.
	for _, a := range add {
		argv = append(argv, "--append-if-missing="+a)
	}
	for _, r := range remove {
		argv = append(argv, "--delete-if-present="+r)
	}
	return h.run(ctx, argv)
}

func (h *Host) Pivot(ctx context.Context, image string) error {
	if image == "" {
		return errors.New("pivot: no OS image given")
	}
	argv := make([]string, len(h.Commands.Pivot))
	for i, a := range h.Commands.Pivot {
		argv[i] = strings.ReplaceAll(a, "{image}", image)
	}
	return h.run(ctx, argv)
}

func (h *Host) run(ctx context.Context, argv []string) error {
	if len(argv) == 0 {
		return errors.New("no command configured")
	}
	if h.Chroot != "" {
		argv = append([]string{"chroot", h.Chroot}, argv...)
	}
	run := h.Run
	if run == nil {
		run = runCommand
	}
	return run(ctx, argv)
}

// Reboot starts reboot.target irreversibly. login1's Reboot drops its error, so the
// manager's job is used; the caller learns of success from the new boot id after boot.
func (h *Host) Reboot(ctx context.Context) error {
	ch := make(chan string, 1)
	if _, err := h.Conn.StartUnitContext(ctx, "reboot.target", "replace-irreversibly", ch); err != nil {
		return fmt.Errorf("reboot: %w", err)
	}
	select {
	case r := <-ch:
		if r != "done" {
			return fmt.Errorf("reboot: job %s", r)
		}
	case <-ctx.Done():
		return fmt.Errorf("reboot: %w", ctx.Err())
	}
	return nil
}
