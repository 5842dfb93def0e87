// Package systemdhost performs a node's non-file effects on a real machine: systemd over
// D-Bus (go-systemd, the …Context methods) and the OS through configurable commands
// (rpm-ostree by default, bootc's, or plain ostree's), and reads what the running boot runs: its kernel
// arguments from /proc/cmdline, its OS image from the OS tool's status. It implements
// nodeexec.Host.
package systemdhost

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/coreos/go-systemd/v22/dbus"

	"github.com/mcpfleet/mcp/nodeexec"
)

// Commands are the programs that change kernel arguments and the OS image, and the one
// that says which image is booted. Each is an argv; "{image}" is replaced by the image, and
// kernel-argument changes are appended as --append-if-missing=ARG / --delete-if-present=ARG
// (rpm-ostree's spelling).
type Commands struct {
	// Tool, when ToolOSTree, drives a plain OSTree host (OSTreeCommands): kernel
	// arguments, pivot and unstage are `ostree admin` deployments, not the argv below.
	Tool  string
	Kargs []string // default: rpm-ostree kargs
	Pivot []string // default: rpm-ostree rebase ostree-unverified-registry:{image}
	// Status prints the OS tool's status as JSON (default: rpm-ostree status --json), and
	// Booted reads the booted image from it (default: BootedImageOf).
	Status []string
	Booted func(status []byte) (string, error)
	// Unstage discards the deployment staged for the next boot (default: rpm-ostree
	// cleanup -p; bootc hosts carry rpm-ostree over the same ostree deployments).
	Unstage []string
}

// DefaultCommands are those of Fedora CoreOS / RHCOS: rpm-ostree's.
var DefaultCommands = Commands{
	Kargs:   []string{"rpm-ostree", "kargs"},
	Pivot:   []string{"rpm-ostree", "rebase", "ostree-unverified-registry:{image}"},
	Status:  []string{"rpm-ostree", "status", "--json"},
	Booted:  BootedImageOf,
	Unstage: []string{"rpm-ostree", "cleanup", "-p"},
}

// BootcCommands are those of a host that runs bootc: the image is switched and read with
// bootc. bootc has no command that changes the kernel arguments of a deployment (they come
// from the image's /usr/lib/bootc/kargs.d); its hosts carry rpm-ostree, whose kargs edits
// the same ostree deployments, so kernel arguments are rpm-ostree's here too.
var BootcCommands = Commands{
	Kargs:   []string{"rpm-ostree", "kargs"},
	Pivot:   []string{"bootc", "switch", "{image}"},
	Status:  []string{"bootc", "status", "--format=json"},
	Booted:  BootcBootedImageOf,
	Unstage: []string{"rpm-ostree", "cleanup", "-p"},
}

// CommandsFor gives the commands of an OS tool: "rpm-ostree" (the default: Fedora CoreOS,
// RHCOS), "bootc", or "ostree" (a plain OSTree host: OSTreeCommands). Which one a host
// runs is the operator's word (the agent's -os-tool):
// bootc's own documentation says a host cannot be told to be one or the other, since both
// drive the same ostree deployments.
func CommandsFor(tool string) (Commands, error) {
	switch tool {
	case "", "rpm-ostree":
		return DefaultCommands, nil
	case "bootc":
		return BootcCommands, nil
	case ToolOSTree:
		return OSTreeCommands, nil
	}
	return Commands{}, fmt.Errorf("OS tool %q: want rpm-ostree, bootc or ostree", tool)
}

// DefaultCmdline is where the running kernel's command line is read. A container shares
// its host's kernel, so an agent in a pod reads the host's here, with no chroot.
const DefaultCmdline = "/proc/cmdline"

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
	// Output executes a command that changes nothing and returns its standard output
	// (the status command); tests replace it too.
	Output func(ctx context.Context, argv []string) ([]byte, error)
	// Cmdline is the file the running kernel's arguments are read from (default
	// DefaultCmdline).
	Cmdline string

	ostree ostreeState // with ToolOSTree: what this process asked of the next boot
}

// New connects to the system manager (DBUS_SYSTEM_BUS_ADDRESS is honoured).
func New(ctx context.Context) (*Host, error) {
	c, err := dbus.NewSystemConnectionContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("connecting to systemd over D-Bus: %w", err)
	}
	return &Host{Conn: c, Commands: DefaultCommands, Run: runCommand, Output: commandOutput}, nil
}

func commandOutput(ctx context.Context, argv []string) ([]byte, error) {
	var stderr strings.Builder
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
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
	return h.SetKernelArgsBefore(ctx, add, remove, "")
}

// SetKernelArgsBefore is SetKernelArgs told the image a pivot of this update moves to
// next (nodeexec.KargsBeforePivot): on a plain OSTree host a deployment staged ahead for
// it is left to the pivot.
func (h *Host) SetKernelArgsBefore(ctx context.Context, add, remove []string, pivot string) error {
	if len(add) == 0 && len(remove) == 0 {
		return nil
	}
	if h.Commands.Tool == ToolOSTree {
		return h.ostreeKargs(ctx, add, remove, pivot)
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
	if h.Commands.Tool == ToolOSTree {
		return h.ostreePivot(ctx, image)
	}
	argv := make([]string, len(h.Commands.Pivot))
	for i, a := range h.Commands.Pivot {
		argv[i] = strings.ReplaceAll(a, "{image}", image)
	}
	return h.run(ctx, argv)
}

// Stage prepares a kargs and pivot step before the node's slot (nodeexec.Host). A plain
// OSTree host pulls the image and stages its deployment, locked (ostreeStage). rpm-ostree
// and bootc hosts only check that their tool answers: what they could download ahead
// without deploying is not used yet, so their pull stays in the slot (docs/agent.md).
func (h *Host) Stage(ctx context.Context, image string, add, remove []string) error {
	if h.Commands.Tool == ToolOSTree {
		return h.ostreeStage(ctx, image, add, remove)
	}
	if _, err := h.output(ctx, h.Commands.Status); err != nil {
		return fmt.Errorf("stage: the OS tool does not answer: %w", err)
	}
	return nil
}

// Unstage discards the deployment a kargs or pivot staged (rpm-ostree cleanup -p).
func (h *Host) Unstage(ctx context.Context) error {
	if h.Commands.Tool == ToolOSTree {
		return h.ostreeUnstage(ctx)
	}
	if len(h.Commands.Unstage) == 0 {
		return errors.New("unstage: no command configured")
	}
	return h.run(ctx, h.Commands.Unstage)
}

// BootedImage reads the booted deployment's container-image-reference from the status
// command (in the host's root when Chroot is set) and returns the image it names (see
// ImageOfReference). A booted deployment with no container image reference — a machine
// booted from an ostree commit, as boot images older than container-native ones are —
// reports "": it runs no pool's image.
func (h *Host) BootedImage(ctx context.Context) (string, error) {
	b, err := h.output(ctx, h.Commands.Status)
	if err != nil {
		return "", fmt.Errorf("reading the booted OS image: %w", err)
	}
	booted := h.Commands.Booted
	switch {
	case h.Commands.Tool == ToolOSTree:
		booted = OSTreeBootedImageOf
	case booted == nil:
		booted = BootedImageOf
	}
	return booted(b)
}

// KernelArgs reads the running kernel's arguments from Cmdline (nodeexec.ParseCmdline).
func (h *Host) KernelArgs(context.Context) ([]string, error) {
	p := cmp.Or(h.Cmdline, DefaultCmdline)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("reading the kernel arguments: %w", err)
	}
	return nodeexec.ParseCmdline(string(b)), nil
}

// BootedImageOf reads `rpm-ostree status --json` output: the image of the booted
// deployment's container-image-reference ("" when it has none).
func BootedImageOf(status []byte) (string, error) {
	var st struct {
		Deployments []struct {
			Booted    bool   `json:"booted"`
			Reference string `json:"container-image-reference"`
		} `json:"deployments"`
	}
	if err := json.Unmarshal(status, &st); err != nil {
		return "", fmt.Errorf("reading the booted OS image: rpm-ostree status: %w", err)
	}
	for _, d := range st.Deployments {
		if d.Booted {
			return ImageOfReference(d.Reference), nil
		}
	}
	return "", errors.New("reading the booted OS image: rpm-ostree status lists no booted deployment")
}

// BootcBootedImageOf reads `bootc status --format=json` output (a BootcHost object): the
// image of status.booted, as pools name images — the registry transport's image as it is,
// another transport's with it in front ("containers-storage:IMAGE", "oci:/path"). A host
// whose booted deployment bootc does not manage (status.booted null) is an error: it is
// not a bootc host. A booted deployment with no image (an ostree commit) reports "".
func BootcBootedImageOf(status []byte) (string, error) {
	var st struct {
		Kind   string `json:"kind"`
		Status struct {
			Booted *struct {
				Image *struct {
					Image struct {
						Image     string `json:"image"`
						Transport string `json:"transport"`
					} `json:"image"`
				} `json:"image"`
			} `json:"booted"`
		} `json:"status"`
	}
	if err := json.Unmarshal(status, &st); err != nil {
		return "", fmt.Errorf("reading the booted OS image: bootc status: %w", err)
	}
	if st.Kind != "BootcHost" {
		return "", fmt.Errorf("reading the booted OS image: bootc status printed a %q, not a BootcHost", st.Kind)
	}
	b := st.Status.Booted
	if b == nil {
		return "", errors.New("reading the booted OS image: bootc status has no booted deployment (status.booted is null): the host does not boot through bootc; run the agent with -os-tool=rpm-ostree")
	}
	if b.Image == nil {
		return "", nil
	}
	switch ref := b.Image.Image; ref.Transport {
	case "registry", "":
		return ref.Image, nil
	default:
		return ref.Transport + ":" + ref.Image, nil
	}
}

// ImageOfReference is the image an ostree container image reference names, as pools name
// images: "ostree-unverified-registry:IMAGE", "ostree-remote-registry:REMOTE:IMAGE",
// "ostree-unverified-image:docker://IMAGE", "ostree-remote-image:REMOTE:docker://IMAGE",
// "ostree-image-signed:docker://IMAGE" all give IMAGE. An image of another transport keeps
// it ("oci:/path"), and so never equals a registry image. (The MCO reads this field too,
// cutting at its first colon, which leaves "docker://…" and the remote's name in.)
func ImageOfReference(ref string) string {
	kind, rest, ok := strings.Cut(ref, ":")
	if !ok {
		return ref
	}
	switch kind {
	case "ostree-unverified-registry":
		return rest
	case "ostree-remote-registry":
		if _, img, ok := strings.Cut(rest, ":"); ok {
			return img
		}
		return rest
	case "ostree-remote-image":
		if _, img, ok := strings.Cut(rest, ":"); ok {
			rest = img
		}
	case "ostree-unverified-image", "ostree-image-signed":
	default:
		return ref
	}
	for _, transport := range []string{"docker://", "registry:"} {
		if img, ok := strings.CutPrefix(rest, transport); ok {
			return img
		}
	}
	return rest
}

func (h *Host) run(ctx context.Context, argv []string) error {
	argv, err := h.argv(argv)
	if err != nil {
		return err
	}
	run := h.Run
	if run == nil {
		run = runCommand
	}
	return run(ctx, argv)
}

// output runs a command that changes nothing (chrooted when Chroot is set) and returns
// its standard output.
func (h *Host) output(ctx context.Context, argv []string) ([]byte, error) {
	argv, err := h.argv(argv)
	if err != nil {
		return nil, err
	}
	out := h.Output
	if out == nil {
		out = commandOutput
	}
	return out(ctx, argv)
}

// argv is a command as run: chrooted when Chroot is set.
func (h *Host) argv(argv []string) ([]string, error) {
	if len(argv) == 0 {
		return nil, errors.New("no command configured")
	}
	if h.Chroot != "" {
		argv = append([]string{"chroot", h.Chroot}, argv...)
	}
	return argv, nil
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
