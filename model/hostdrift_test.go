package model

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHostDrift(t *testing.T) {
	cur := &Rendered{KernelArgs: []string{"nosmt", "quiet"}, OSImage: "os:2"}
	tests := []struct {
		name  string
		kargs []string
		image string
		want  []Drift
	}{
		{"as the config has it, and more", []string{"quiet", "nosmt", "console=ttyS0"}, "os:2", nil},
		{"not reported", nil, "", nil},
		{"an argument removed", []string{"quiet"}, "os:2",
			[]Drift{{Path: DriftPathKernelArgs, Kind: DriftKernelArgs, Expected: "nosmt quiet", Found: "quiet"}}},
		{"all removed", []string{}, "os:2",
			[]Drift{{Path: DriftPathKernelArgs, Kind: DriftKernelArgs, Expected: "nosmt quiet"}}},
		{"another image", []string{"nosmt", "quiet"}, "os:1",
			[]Drift{{Path: DriftPathOSImage, Kind: DriftOSImage, Expected: "os:2", Found: "os:1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HostDrift(&Node{KernelArgs: tt.kargs, OSImage: tt.image}, cur)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	if got := HostDrift(&Node{OSImage: "os:1"}, &Rendered{}); got != nil {
		t.Errorf("a config without an OS image or kernel arguments manages neither: %v", got)
	}
	if s := (Drift{Path: DriftPathOSImage, Kind: DriftOSImage, Expected: "quay.io/fedora/fedora-coreos:stable"}).String(); s !=
		"os_image: os-image (expected quay.io/fedora/fedora-coreos:stable, found (none))" {
		t.Errorf("an image is shown whole: %s", s)
	}
}

// TestCheckHost: the verify step's comparison, with the arguments an update removed, over
// a whole kernel command line as a host reports it.
func TestCheckHost(t *testing.T) {
	target := &Rendered{KernelArgs: []string{"nosmt", "mitigations=auto"}, OSImage: "os:2"}
	cmdline := func(extra ...string) []string {
		return append([]string{"rw", "root=UUID=34bf", "console=ttyS0,115200n8"}, extra...)
	}
	tests := []struct {
		name    string
		kargs   []string
		image   string
		removed []string
		want    []Drift
	}{
		{"as asked", cmdline("nosmt", "mitigations=auto"), "os:2", []string{"quiet"}, nil},
		{"a removed argument still there", cmdline("nosmt", "mitigations=auto", "quiet"), "os:2", []string{"quiet"},
			[]Drift{{Path: DriftPathKernelArgs, Kind: DriftKernelArgs, Expected: "nosmt mitigations=auto (without quiet)",
				Found: "nosmt mitigations=auto quiet"}}},
		{"another value", cmdline("nosmt", "mitigations=off"), "os:2", nil,
			[]Drift{{Path: DriftPathKernelArgs, Kind: DriftKernelArgs, Expected: "nosmt mitigations=auto",
				Found: "nosmt mitigations=off"}}},
		{"the old image booted", cmdline("nosmt", "mitigations=auto"), "os:1", nil,
			[]Drift{{Path: DriftPathOSImage, Kind: DriftOSImage, Expected: "os:2", Found: "os:1"}}},
		{"nothing known", nil, "", []string{"quiet"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckHost(tt.kargs, tt.image, target, tt.removed)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	// An argument the update both removed and keeps (another config adds it back) is asked for.
	if got := CheckHost([]string{"nosmt"}, "", &Rendered{KernelArgs: []string{"nosmt"}}, []string{"nosmt"}); got != nil {
		t.Errorf("an argument removed and kept: %v", got)
	}
	// A quoted argument, as a config writes it, runs with its quotes dropped by the kernel.
	quoted := &Rendered{KernelArgs: []string{`dyndbg="file x +p"`}}
	if got := CheckHost(cmdline("dyndbg=file x +p"), "", quoted, nil); got != nil {
		t.Errorf("a quoted argument the kernel runs: %v", got)
	}
	if got := CheckHost(cmdline("dyndbg=file x +p"), "", &Rendered{}, []string{`dyndbg="file x +p"`}); len(got) != 1 {
		t.Errorf("a removed quoted argument still running: %v, want drift", got)
	}
}

// What the config does not manage is compared with what the node ran at its rollout:
// kernel arguments it does not name, added or removed since, and the image when it names
// none. The config's own arguments and image are HostDrift's; unknown is not compared.
func TestUnmanagedHostDrift(t *testing.T) {
	cur := &Rendered{KernelArgs: []string{"nosmt"}}
	base := &HostRecord{KernelArgs: []string{"root=UUID=1", "nosmt", "quiet"}, OSImage: "os:1"}
	tests := []struct {
		name  string
		node  Node
		cur   *Rendered
		want  []Drift
		shown string
	}{
		{"as rolled out", Node{RolledOut: base, KernelArgs: []string{"root=UUID=1", "nosmt", "quiet"}, OSImage: "os:1"}, cur, nil, ""},
		{"no baseline", Node{KernelArgs: []string{"debug"}, OSImage: "os:2"}, cur, nil, ""},
		{"the config's own argument removed: HostDrift's", Node{RolledOut: base, KernelArgs: []string{"root=UUID=1", "quiet"}, OSImage: "os:1"}, cur, nil, ""},
		{"one added, one removed", Node{RolledOut: base, KernelArgs: []string{"root=UUID=1", "nosmt", "debug"}, OSImage: "os:1"}, cur,
			[]Drift{{Path: DriftPathKernelArgs, Kind: DriftUnmanagedKernelArgs, Expected: "quiet", Found: "debug"}},
			"kernel_args: unmanaged-kernel-args (added since the rollout: debug; removed since the rollout: quiet)"},
		{"another image, none managed", Node{RolledOut: base, KernelArgs: []string{"root=UUID=1", "nosmt", "quiet"}, OSImage: "os:2"}, cur,
			[]Drift{{Path: DriftPathOSImage, Kind: DriftUnmanagedOSImage, Expected: "os:1", Found: "os:2"}},
			"os_image: unmanaged-os-image (rolled out on os:1, now boots os:2)"},
		{"another image, managed: HostDrift's", Node{RolledOut: base, KernelArgs: []string{"root=UUID=1", "nosmt", "quiet"}, OSImage: "os:2"},
			&Rendered{KernelArgs: []string{"nosmt"}, OSImage: "os:3"}, nil, ""},
		{"unknown now", Node{RolledOut: base}, cur, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := UnmanagedHostDrift(&tt.node, tt.cur)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if len(got) == 1 && got[0].String() != tt.shown {
				t.Errorf("shown as %q, want %q", got[0].String(), tt.shown)
			}
		})
	}
}
