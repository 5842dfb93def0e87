package steps

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/testkit/modeltest"
)

var (
	pol  = modeltest.Policies
	file = modeltest.File
)

func cfg(files []model.File, units []model.Unit, kargs []string, image string) *model.Rendered {
	return &model.Rendered{Files: files, Units: units, KernelArgs: kargs, OSImage: image}
}

// keys renders steps as "kind target" for compact expectations.
func keys(steps []model.Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Key())
	}
	return out
}

var reboot = []string{"cordon", "drain", "reboot", "verify", "uncordon"}

func with(steps []string, extra ...string) []string {
	// extra are inserted after drain, in run order, for reboot expectations
	out := []string{steps[0], steps[1]}
	out = append(out, extra...)
	return append(out, steps[2:]...)
}

func TestSteps(t *testing.T) {
	yes := true
	tests := []struct {
		name     string
		old, new *model.Rendered
		want     []string
	}{
		{"no change", cfg([]model.File{file("/etc/a", "1", "none")}, nil, nil, ""),
			cfg([]model.File{file("/etc/a", "1", "none")}, nil, nil, ""), nil},
		{"none", cfg([]model.File{file("/etc/a", "1", "none")}, nil, nil, ""),
			cfg([]model.File{file("/etc/a", "2", "none")}, nil, nil, ""), []string{"write /etc/a"}},
		{"restart", nil, cfg([]model.File{file("/etc/chrony.conf", "x", "restart:chronyd.service")}, nil, nil, ""),
			[]string{"write /etc/chrony.conf", "restart chronyd.service"}},
		{"reload", nil, cfg([]model.File{file("/etc/a", "x", "reload:a.service")}, nil, nil, ""),
			[]string{"write /etc/a", "reload a.service"}},
		{"daemon-reload", nil, cfg([]model.File{file("/etc/a", "x", "daemon-reload")}, nil, nil, ""),
			[]string{"write /etc/a", "daemon-reload"}},
		{"drain", nil, cfg([]model.File{file("/etc/a", "x", "drain")}, nil, nil, ""),
			[]string{"cordon", "drain", "write /etc/a", "uncordon"}},
		{"no policy reboots", nil, cfg([]model.File{file("/etc/a", "x")}, nil, nil, ""),
			with(reboot, "write /etc/a")},
		{"reboot supersedes restart", nil,
			cfg([]model.File{file("/etc/a", "x", "restart:a.service"), file("/etc/b", "y", "reboot")}, nil, nil, ""),
			with(reboot, "write /etc/a", "write /etc/b")},
		{"two policies, shared restart once", nil,
			cfg([]model.File{file("/etc/a", "x", "restart:a.service", "reload:b.service"), file("/etc/b", "y", "restart:a.service")}, nil, nil, ""),
			[]string{"write /etc/a", "write /etc/b", "reload b.service", "restart a.service"}},
		{"removed file uses old policy", cfg([]model.File{file("/etc/a", "x", "none"), file("/etc/b", "y", "restart:b.service")}, nil, nil, ""),
			cfg([]model.File{file("/etc/a", "x", "none")}, nil, nil, ""), []string{"write /etc/b", "restart b.service"}},
		{"mode change", cfg([]model.File{file("/etc/a", "x", "none")}, nil, nil, ""),
			cfg([]model.File{{Entry: model.Entry{Path: "/etc/a", OnChange: pol("none")}, Mode: 0o600, Contents: []byte("x")}}, nil, nil, ""),
			[]string{"write /etc/a"}},
		{"unit implies daemon-reload", nil,
			cfg(nil, []model.Unit{{Name: "x.service", Contents: "[Service]", Enabled: &yes, OnChange: pol("restart:x.service")}}, nil, ""),
			[]string{"write x.service", "daemon-reload", "restart x.service"}},
		{"files before units", nil,
			cfg([]model.File{file("/etc/x", "1", "restart:x.service")}, []model.Unit{{Name: "x.service", Contents: "[Service]", OnChange: pol("restart:x.service")}}, nil, ""),
			[]string{"write /etc/x", "write x.service", "daemon-reload", "restart x.service"}},
		{"kargs", cfg(nil, nil, []string{"a"}, ""), cfg(nil, nil, []string{"a", "nosmt"}, ""),
			with(reboot, "kargs")},
		{"pivot", cfg(nil, nil, nil, "img:1"), cfg(nil, nil, nil, "img:2"), append([]string{"stage"}, with(reboot, "pivot")...)},
		{"no image wanted: no pivot", cfg(nil, nil, nil, "img:1"), cfg(nil, nil, nil, ""), nil},
		{"everything", cfg([]model.File{file("/etc/a", "1", "none")}, nil, []string{"a"}, "img:1"),
			cfg([]model.File{file("/etc/a", "2", "restart:a.service")}, nil, []string{"b"}, "img:2"),
			append([]string{"stage"}, with(reboot, "write /etc/a", "kargs", "pivot")...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Derive(tt.old, tt.new)
			if d := cmp.Diff(tt.want, keys(got)); d != "" {
				t.Errorf("steps (-want +got):\n%s", d)
			}
			for _, s := range got {
				if s.Reason == "" {
					t.Errorf("step %s has no reason", s)
				}
			}
		})
	}
}

func TestStepsReasons(t *testing.T) {
	got := Derive(nil, cfg([]model.File{file("/etc/chrony.conf", "x", "restart:chronyd.service")}, nil, []string{"nosmt"}, ""))
	want := map[string]string{
		"write /etc/chrony.conf": "/etc/chrony.conf added",
		"kargs":                  "kernel arguments +nosmt",
		"reboot":                 "kernel arguments +nosmt",
	}
	for _, s := range got {
		if w, ok := want[s.Key()]; ok && s.Reason != w {
			t.Errorf("%s reason %q, want %q", s.Key(), s.Reason, w)
		}
		if s.Kind == model.StepRestart {
			t.Errorf("restart kept beside a reboot: %v", keys(got))
		}
	}
	only := Derive(nil, cfg([]model.File{file("/etc/chrony.conf", "x", "restart:chronyd.service")}, nil, nil, ""))
	if r := only[1].Reason; r != "/etc/chrony.conf added; on_change restart:chronyd.service" {
		t.Errorf("restart reason %q", r)
	}
}

// TestStageInSlotWhenTheConfigIsUnknown: a node that runs no known config stages in its
// slot, after the drain (its stage hand-over could end on no config), and restoring drift
// on it keeps the stage there; one that runs a known config stages first, before the
// cordon.
func TestStageInSlotWhenTheConfigIsUnknown(t *testing.T) {
	target := cfg([]model.File{file("/etc/a", "1")}, nil, []string{"nosmt"}, "img:2")
	want := []string{"cordon", "drain", "stage", "write /etc/a", "kargs", "pivot", "reboot", "verify", "uncordon"}
	got := DeriveOn(nil, target, Host{})
	if d := cmp.Diff(want, keys(got)); d != "" {
		t.Errorf("from nothing (-want +got):\n%s", d)
	}
	got = Restore(got, []model.Drift{{Path: "/etc/a", Kind: model.DriftContent}}, target, Host{})
	if d := cmp.Diff(want, keys(got)); d != "" {
		t.Errorf("from nothing, drift restored (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want, keys(Rewrite(target, "unknown"))); d != "" {
		t.Errorf("rewrite (-want +got):\n%s", d)
	}
	got = DeriveOn(cfg(nil, nil, nil, "img:1"), target, Host{})
	if len(got) == 0 || got[0].Kind != model.StepStage {
		t.Errorf("from a known config: %v, want the stage first", keys(got))
	}
}
