package nodeexec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/mcpfleet/mcp/internal/atomicfile"
	"github.com/mcpfleet/mcp/model"
)

// The machine a RecordingHost stands in for, when it has a Machine directory and a BootID:
// files that say what the running boot runs and what is staged for the next one, as ostree
// keeps a booted and a staged deployment. A kargs or pivot call stages (as rpm-ostree
// does); the first look after the boot id changed boots what was staged. Tests overwrite
// the files behind mcp's back, as someone on the machine would change it.
const (
	// MachineDir is where in the node's root `mcp agent -host=record` keeps its machine.
	MachineDir = "run/mcp-record"
	// MachineCmdline is the running kernel's command line, read as /proc/cmdline is
	// (ParseCmdline). Absent: the host cannot say what its kernel arguments are.
	MachineCmdline = "cmdline"
	// MachineBootedImage is the OS image the running boot runs (one line). Absent: the
	// RecordingHost's Booted, the image the machine was first booted from.
	MachineBootedImage = "booted-image"
	// MachineStaged is the deployment staged for the next boot (stagedDeployment, JSON).
	MachineStaged = "staged.json"
	// MachineRollback, while present, makes each boot discard the staged deployment and
	// come up on the one that ran before: a failed deployment rolled back.
	MachineRollback = "rollback"
)

// stagedDeployment is what the machine boots next: the whole command line and the image.
type stagedDeployment struct {
	BootID     string   `json:"boot_id"` // the boot it was staged in
	OSImage    string   `json:"os_image,omitempty"`
	KernelArgs []string `json:"kernel_args"` // nil: the command line is not known, and stays so
}

// simulated says whether the host keeps a machine.
func (h *RecordingHost) simulated() bool { return h.Machine != "" && h.BootID != nil }

// machineDir opens the machine's directory, made if need be.
func (h *RecordingHost) machineDir() (*os.Root, error) {
	if err := os.MkdirAll(h.Machine, 0o755); err != nil {
		return nil, err
	}
	return os.OpenRoot(h.Machine)
}

// look boots what was staged when the boot id changed since it was staged (or, with
// MachineRollback, discards it), and returns the running kernel's arguments and image.
// The caller holds h.machine.
func (h *RecordingHost) look() (kargs []string, image string, err error) {
	r, err := os.OpenRoot(h.Machine)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, h.Booted, nil // a machine nobody described or changed yet
	}
	if err != nil {
		return nil, "", err
	}
	defer r.Close()
	st, err := readStaged(r)
	if err != nil {
		return nil, "", err
	}
	if st != nil {
		boot, err := h.BootID()
		if err != nil {
			return nil, "", err
		}
		if boot != st.BootID {
			if err := h.boot(r, st); err != nil {
				return nil, "", fmt.Errorf("simulated boot: %w", err)
			}
		}
	}
	if b, err := r.ReadFile(MachineCmdline); err == nil {
		kargs = ParseCmdline(string(b))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, "", err
	}
	image = h.Booted
	if b, err := r.ReadFile(MachineBootedImage); err == nil {
		image = strings.TrimSpace(string(b))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, "", err
	}
	return kargs, image, nil
}

// boot makes the staged deployment the running one, unless MachineRollback is there.
func (h *RecordingHost) boot(r *os.Root, st *stagedDeployment) error {
	if _, err := r.Stat(MachineRollback); errors.Is(err, fs.ErrNotExist) {
		if st.OSImage != "" {
			if err := atomicfile.WriteIn(r, MachineBootedImage, []byte(st.OSImage+"\n"), 0o644); err != nil {
				return err
			}
		}
		if st.KernelArgs != nil {
			if err := atomicfile.WriteIn(r, MachineCmdline, []byte(FormatCmdline(st.KernelArgs)+"\n"), 0o644); err != nil {
				return err
			}
		}
	} else if err != nil {
		return err
	}
	return r.Remove(MachineStaged)
}

// stage changes the deployment staged for the next boot (made from the running one when
// none is staged) with change.
func (h *RecordingHost) stage(change func(*stagedDeployment)) error {
	h.machine.Lock()
	defer h.machine.Unlock()
	kargs, image, err := h.look()
	if err != nil {
		return err
	}
	r, err := h.machineDir()
	if err != nil {
		return err
	}
	defer r.Close()
	st, err := readStaged(r)
	if err != nil {
		return err
	}
	if st == nil {
		boot, err := h.BootID()
		if err != nil {
			return err
		}
		st = &stagedDeployment{BootID: boot, OSImage: image, KernelArgs: kargs}
	}
	change(st)
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return atomicfile.WriteIn(r, MachineStaged, b, 0o644)
}

// unstage removes the staged deployment, if any.
func (h *RecordingHost) unstage() error {
	h.machine.Lock()
	defer h.machine.Unlock()
	r, err := h.machineDir()
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.Remove(MachineStaged); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func readStaged(r *os.Root) (*stagedDeployment, error) {
	b, err := r.ReadFile(MachineStaged)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	st := new(stagedDeployment)
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("reading /%s: %w", MachineStaged, err)
	}
	return st, nil
}

// WithArgs is args with each of remove absent and each of add present (appended when
// missing), as rpm-ostree kargs --append-if-missing/--delete-if-present leaves them: what
// a kargs call stages on a simulated machine.
func WithArgs(args, add, remove []string) []string {
	// An argument as a config writes it and as the kernel reports it are one argument
	// (model.KernelReads): either form removes or stands for the other.
	in := func(list []string, a string) bool {
		return slices.ContainsFunc(list, func(b string) bool { return model.KernelReads(b) == model.KernelReads(a) })
	}
	out := []string{}
	for _, a := range args {
		if !in(remove, a) {
			out = append(out, a)
		}
	}
	for _, a := range add {
		if !in(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// DefaultBootIDPath is where the running boot's id is read on Linux.
const DefaultBootIDPath = "/proc/sys/kernel/random/boot_id"
