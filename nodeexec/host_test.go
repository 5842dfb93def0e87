package nodeexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

func TestParseCmdline(t *testing.T) {
	for line, want := range map[string][]string{
		"BOOT_IMAGE=(hd0,gpt3)/boot/vmlinuz-6.15 root=UUID=34bf rw nosmt\n": {"root=UUID=34bf", "rw", "nosmt"},
		`initrd=\initramfs.img  quiet	mitigations=auto,nosmt`:               {"quiet", "mitigations=auto,nosmt"},
		`dyndbg="file usb.c +p" "acpi_osi=!Windows 2020" x=""`:              {"dyndbg=file usb.c +p", "acpi_osi=!Windows 2020", "x="},
		"ro quiet -- single init-arg":                                       {"ro", "quiet"},
		"":                                                                  {},
	} {
		got := ParseCmdline(line)
		if !slices.Equal(got, want) {
			t.Errorf("ParseCmdline(%q) = %q, want %q", line, got, want)
		}
		if back := ParseCmdline(FormatCmdline(got)); !slices.Equal(back, got) {
			t.Errorf("FormatCmdline(%q) = %q, read back as %q", got, FormatCmdline(got), back)
		}
	}
	if got := ParseCmdline(""); got == nil {
		t.Error("an empty command line is no arguments, not an unknown")
	}
}

// recordMachine is a RecordingHost standing in for a machine in a fresh root, booted from
// image with cmdline; boot() is a reboot (a new boot id).
type recordMachine struct {
	root, dir string // the node's root, the machine's directory
	host      *RecordingHost
	boots     int
}

func newRecordMachine(t *testing.T, image, cmdline string) *recordMachine {
	t.Helper()
	m := &recordMachine{root: t.TempDir(), dir: t.TempDir()}
	m.host = &RecordingHost{Machine: m.dir, BootID: m.BootID, Booted: image}
	if err := os.WriteFile(m.file(MachineCmdline), []byte(cmdline+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *recordMachine) file(name string) string { return filepath.Join(m.dir, name) }

func (m *recordMachine) boot() { m.boots++ }

func (m *recordMachine) BootID() (string, error) { return fmt.Sprintf("boot-%d", m.boots), nil }

func (m *recordMachine) runs(t *testing.T) ([]string, string) {
	t.Helper()
	kargs, image, err := ObserveHost(context.Background(), m.host)
	if err != nil {
		t.Fatal(err)
	}
	return kargs, image
}

// The recording host's machine: kernel arguments and a pivot are staged, and run only
// from the next boot; with the rollback file the boot discards them.
func TestRecordingHostStagesUntilTheBoot(t *testing.T) {
	ctx := context.Background()
	m := newRecordMachine(t, "os:1", "BOOT_IMAGE=/vmlinuz root=UUID=34bf quiet")
	if err := m.host.SetKernelArgs(ctx, []string{"nosmt"}, []string{"quiet"}); err != nil {
		t.Fatal(err)
	}
	if err := m.host.Pivot(ctx, "os:2"); err != nil {
		t.Fatal(err)
	}
	if kargs, image := m.runs(t); !slices.Equal(kargs, []string{"root=UUID=34bf", "quiet"}) || image != "os:1" {
		t.Errorf("before the boot: %q on %s, want what it booted with", kargs, image)
	}
	m.boot()
	if kargs, image := m.runs(t); !slices.Equal(kargs, []string{"root=UUID=34bf", "nosmt"}) || image != "os:2" {
		t.Errorf("after the boot: %q on %s, want what was staged", kargs, image)
	}
	if _, err := os.Stat(m.file(MachineStaged)); !os.IsNotExist(err) {
		t.Errorf("the booted deployment is still staged: %v", err)
	}

	// A failed boot rolled back.
	os.WriteFile(m.file(MachineRollback), nil, 0o644)
	m.host.Pivot(ctx, "os:3")
	m.host.SetKernelArgs(ctx, []string{"mitigations=off"}, nil)
	m.boot()
	if kargs, image := m.runs(t); !slices.Equal(kargs, []string{"root=UUID=34bf", "nosmt"}) || image != "os:2" {
		t.Errorf("after a rolled back boot: %q on %s, want what ran before", kargs, image)
	}
	if got := strings.Join(m.host.Recorded(), ";"); got != "kargs +nosmt -quiet;pivot os:2;pivot os:3;kargs +mitigations=off -" {
		t.Errorf("calls %s", got)
	}
	// No machine: nothing known of the kernel arguments, the image is Booted.
	if kargs, image, err := ObserveHost(ctx, &RecordingHost{Booted: "os:1"}); kargs != nil || image != "os:1" || err != nil {
		t.Errorf("a recording host with no machine: %q %q %v", kargs, image, err)
	}
}

// The verify step after a reboot reads what the host booted: the kernel arguments the
// update asks for present and those it removed absent, the target's image. A boot that
// came up on something else is Degraded with what was expected and what was found.
func TestVerifyAfterRebootReadsTheHost(t *testing.T) {
	from := &model.Rendered{Name: "rendered-w-old", OSImage: "os:1", KernelArgs: []string{"quiet"}}
	target := &model.Rendered{Name: "rendered-w-new", OSImage: "os:2", KernelArgs: []string{"nosmt"}}
	steps := []model.Step{{Kind: model.StepKargs}, {Kind: model.StepPivot}, {Kind: model.StepReboot}, {Kind: model.StepVerify}}
	for _, tc := range []struct {
		name string
		// atBoot changes the machine as it goes down
		atBoot func(m *recordMachine)
		want   []Drift // nil: Done
	}{
		{"booted as staged", func(*recordMachine) {}, nil},
		{"rolled back", func(m *recordMachine) {
			os.WriteFile(m.file(MachineRollback), nil, 0o644)
		}, []Drift{
			{Path: model.DriftPathKernelArgs, Kind: model.DriftKernelArgs, Expected: "nosmt (without quiet)", Found: "quiet"},
			{Path: model.DriftPathOSImage, Kind: model.DriftOSImage, Expected: "os:2", Found: "os:1"}}},
		{"a removed argument back", func(m *recordMachine) {
			var st stagedDeployment
			b, _ := os.ReadFile(m.file(MachineStaged))
			json.Unmarshal(b, &st)
			st.KernelArgs = append(st.KernelArgs, "quiet")
			b, _ = json.Marshal(st)
			os.WriteFile(m.file(MachineStaged), b, 0o644)
		}, []Drift{{Path: model.DriftPathKernelArgs, Kind: model.DriftKernelArgs, Expected: "nosmt (without quiet)", Found: "nosmt quiet"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newRecordMachine(t, "os:1", "root=UUID=34bf quiet")
			m.host.OnCall = func(call string) error {
				if call == "reboot" {
					tc.atBoot(m)
					m.boot()
				}
				return nil
			}
			st := &fakeState{}
			a := &Agent{Exec: &Executor{Root: m.root, Host: m.host}, State: machineState{st, m}, RebootWait: time.Second}
			err := a.Update(context.Background(), from, target, steps, func(model.Step) {})
			last := st.reports[len(st.reports)-1]
			if tc.want == nil {
				if err != nil || last != "done "+target.Name {
					t.Fatalf("update: %v, reports %q", err, st.reports)
				}
				return
			}
			var de *DriftError
			if !errors.As(err, &de) {
				t.Fatalf("update: %v, want the verify step's drift", err)
			}
			if d := cmp.Diff(tc.want, de.Drift); d != "" {
				t.Errorf("drift (-want +got):\n%s", d)
			}
			if !strings.HasPrefix(last, "degraded after reboot: verify: the node differs from the config: ") ||
				!strings.Contains(last, "expected os:2, found os:1") && tc.name == "rolled back" {
				t.Errorf("report %q", last)
			}
		})
	}
}

// machineState is fakeState with the boot id of the machine.
type machineState struct {
	*fakeState
	m *recordMachine
}

func (s machineState) BootID() (string, error) { return s.m.BootID() }

// An update that fails after its kargs step staged new kernel arguments (its pivot is
// refused) is rolled back, and so is what it staged: the machine's next boot — whoever
// reboots it — runs what it ran before, not the failed update's arguments.
func TestRollbackDiscardsWhatWasStaged(t *testing.T) {
	ctx := context.Background()
	m := newRecordMachine(t, "os:1", "root=UUID=34bf quiet")
	m.host.Fail = "pivot os:2"
	target := &model.Rendered{Name: "rendered-x-2", KernelArgs: []string{"nosmt"}, OSImage: "os:2"}
	e := &Executor{Root: m.root, Host: m.host, NoSync: true}
	e.Begin()
	for _, s := range []model.Step{{Kind: model.StepKargs}, {Kind: model.StepPivot}} {
		if err := e.Run(ctx, nil, target, s); err != nil {
			if rerr := e.Rollback(ctx); rerr != nil {
				t.Fatal(rerr)
			}
			break
		}
	}
	m.boot() // a reboot for any reason
	if kargs, image := m.runs(t); !slices.Equal(kargs, []string{"root=UUID=34bf", "quiet"}) || image != "os:1" {
		t.Errorf("after the rolled-back update and a boot: %q on %s, want what ran before", kargs, image)
	}
	if got := strings.Join(m.host.Recorded(), ";"); got != "kargs +nosmt -;pivot os:2;unstage" {
		t.Errorf("calls %s", got)
	}
}
