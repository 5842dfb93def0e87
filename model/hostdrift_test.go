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
}
