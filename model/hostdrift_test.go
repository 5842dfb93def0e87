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
