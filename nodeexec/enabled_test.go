package nodeexec

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

const (
	installed = "[Service]\nExecStart=/bin/a\n\n[Install]\nWantedBy=multi-user.target\n"
	twoLinks  = "[Service]\nExecStart=/bin/a\n\n[Install]\nWantedBy=multi-user.target\nAlias=b.service\n"
	wantsA    = "etc/systemd/system/multi-user.target.wants/a.service"
)

func enabledUnit(contents string, on bool) model.Unit {
	return model.Unit{Name: "a.service", Contents: contents, Enabled: &on}
}

// The disk check reads a unit's enablement from its links, as systemctl is-enabled does.
func TestVerifyReportsEnabledDrift(t *testing.T) {
	unitFile := entry{Content: installed, Mode: 0o644}
	tests := []struct {
		name  string
		disk  tree
		units []model.Unit
		found string // "" no drift; else the drift's Expected + " / " + Found
	}{
		{"enabled, linked", tree{"etc/systemd/system/a.service": unitFile, wantsA: {Link: "/etc/systemd/system/a.service"}},
			[]model.Unit{enabledUnit(installed, true)}, ""},
		{"enabled, a relative link is a link to it too", tree{"etc/systemd/system/a.service": unitFile, wantsA: {Link: "../a.service"}},
			[]model.Unit{enabledUnit(installed, true)}, ""},
		{"enabled, link missing", tree{"etc/systemd/system/a.service": unitFile},
			[]model.Unit{enabledUnit(installed, true)}, "enabled / disabled (no multi-user.target.wants/a.service)"},
		{"enabled, one of two links missing", tree{"etc/systemd/system/a.service": {Content: twoLinks, Mode: 0o644},
			wantsA: {Link: "/etc/systemd/system/a.service"}},
			[]model.Unit{enabledUnit(twoLinks, true)}, "enabled / partly enabled (no b.service)"},
		{"enabled, link elsewhere", tree{"etc/systemd/system/a.service": unitFile, wantsA: {Link: "/dev/null"}},
			[]model.Unit{enabledUnit(installed, true)}, "enabled / disabled (multi-user.target.wants/a.service → /dev/null)"},
		{"enabled, a file where the link belongs", tree{"etc/systemd/system/a.service": unitFile, wantsA: {Content: "x", Mode: 0o644}},
			[]model.Unit{enabledUnit(installed, true)}, "enabled / disabled (multi-user.target.wants/a.service is not a link)"},
		{"the config's [Install] counts, not the drifted file's", tree{"etc/systemd/system/a.service": {Content: "[Service]\n", Mode: 0o644}},
			[]model.Unit{enabledUnit(installed, true)}, "enabled / disabled (no multi-user.target.wants/a.service)"},
		{"a drop-in's [Install] counts", tree{"etc/systemd/system/a.service": unitFile},
			[]model.Unit{{Name: "a.service", Contents: installed, Enabled: new(true),
				Dropins: []model.Dropin{{Name: "10-w.conf", Contents: "[Install]\nWantedBy=\nWantedBy=x.target\n"}}}},
			"enabled / disabled (no x.target.wants/a.service)"},
		{"disabled, linked", tree{"etc/systemd/system/a.service": unitFile, wantsA: {Link: "/etc/systemd/system/a.service"}},
			[]model.Unit{enabledUnit(installed, false)}, "disabled / enabled (multi-user.target.wants/a.service)"},
		{"disabled, linked by hand from a target its [Install] does not name", tree{"etc/systemd/system/a.service": unitFile,
			"etc/systemd/system/other.target.requires/a.service": {Link: "/etc/systemd/system/a.service"},
			"etc/systemd/system/b.service":                       {Link: "/etc/systemd/system/a.service"}},
			[]model.Unit{enabledUnit(installed, false)}, "disabled / enabled (b.service, other.target.requires/a.service)"},
		{"disabled, not linked; other units' links are theirs", tree{"etc/systemd/system/a.service": unitFile,
			"etc/systemd/system/multi-user.target.wants/c.service": {Link: "/etc/systemd/system/c.service"},
			"etc/systemd/system/m.service":                         {Link: "/dev/null"}},
			[]model.Unit{enabledUnit(installed, false)}, ""},
		{"no [Install]: nothing to link, nothing to check", tree{"etc/systemd/system/a.service": {Content: "[Service]\n", Mode: 0o644}},
			[]model.Unit{enabledUnit("[Service]\n", true)}, ""},
		{"a vendor unit read from /usr/lib", tree{"usr/lib/systemd/system/a.service": unitFile},
			[]model.Unit{{Name: "a.service", Enabled: new(true)}}, "enabled / disabled (no multi-user.target.wants/a.service)"},
		{"a vendor unit linked", tree{"usr/lib/systemd/system/a.service": unitFile, wantsA: {Link: "/usr/lib/systemd/system/a.service"}},
			[]model.Unit{{Name: "a.service", Enabled: new(true)}}, ""},
		{"a unit on no disk and in no config is not known", tree{},
			[]model.Unit{{Name: "a.service", Enabled: new(true)}}, ""},
		{"an instance links its template", tree{"etc/systemd/system/getty@.service": unitFile,
			"etc/systemd/system/multi-user.target.wants/getty@tty2.service": {Link: "/etc/systemd/system/getty@.service"}},
			[]model.Unit{{Name: "getty@.service", Contents: installed}, {Name: "getty@tty2.service", Enabled: new(true)},
				{Name: "getty@tty3.service", Enabled: new(true)}}, "enabled / disabled (no multi-user.target.wants/getty@tty3.service)"},
		{"masked: no enablement to check", tree{"etc/systemd/system/a.service": {Link: "/dev/null"}},
			[]model.Unit{{Name: "a.service", Mask: true, Enabled: new(true)}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			makeTree(t, root, tt.disk)
			e := &Executor{Root: root, Host: &RecordingHost{}}
			drift, err := e.Verify(&model.Rendered{Units: tt.units})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range drift {
				if d.Kind != DriftEnabled {
					continue
				}
				got = append(got, d.Expected+" / "+d.Found)
				if !strings.HasPrefix(d.Path, UnitDir+"/") {
					t.Errorf("drift path %s is not a unit's", d.Path)
				}
			}
			var want []string
			if tt.found != "" {
				want = []string{tt.found}
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("enabled drift (-want +got):\n%s\nall drift: %v", d, drift)
			}
		})
	}
}

// Writing a unit makes its links agree with its enabled, whether or not the config
// changed it: a drift restore (from = to) enables or disables through the host, and a
// write over links that already agree asks the host nothing.
func TestWriteRestoresEnablement(t *testing.T) {
	unitFile := entry{Content: installed, Mode: 0o644}
	tests := []struct {
		name   string
		before tree
		unit   model.Unit
		calls  []string
		after  tree
	}{
		{"link removed by hand is put back", tree{"etc/systemd/system/a.service": unitFile},
			enabledUnit(installed, true), []string{"enable a.service"},
			tree{"etc/systemd/system/a.service": unitFile, wantsA: {Link: "/etc/systemd/system/a.service"}}},
		{"a link pointing elsewhere is replaced", tree{"etc/systemd/system/a.service": unitFile, wantsA: {Link: "/dev/null"}},
			enabledUnit(installed, true), []string{"enable a.service"},
			tree{"etc/systemd/system/a.service": unitFile, wantsA: {Link: "/etc/systemd/system/a.service"}}},
		{"links of a disabled unit are removed, every one", tree{"etc/systemd/system/a.service": unitFile,
			wantsA: {Link: "/etc/systemd/system/a.service"}, "etc/systemd/system/x.target.requires/a.service": {Link: "../a.service"}},
			enabledUnit(installed, false), []string{"disable a.service"},
			tree{"etc/systemd/system/a.service": unitFile}},
		{"links that agree: no host call", tree{"etc/systemd/system/a.service": unitFile, wantsA: {Link: "/etc/systemd/system/a.service"}},
			enabledUnit(installed, true), nil,
			tree{"etc/systemd/system/a.service": unitFile, wantsA: {Link: "/etc/systemd/system/a.service"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			makeTree(t, root, tt.before)
			h := &RecordingHost{Root: root}
			e := &Executor{Root: root, Host: h}
			cfg := &model.Rendered{Units: []model.Unit{tt.unit}}
			if err := e.Run(context.Background(), cfg, cfg, model.Step{Kind: model.StepWrite, Target: "a.service"}); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.calls, h.Recorded()); d != "" {
				t.Errorf("host calls (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.after, readTree(t, root)); d != "" {
				t.Errorf("tree after (-want +got):\n%s", d)
			}
			if drift, err := e.Verify(cfg); err != nil || len(drift) != 0 {
				t.Errorf("verify after the write: %v %v", drift, err)
			}
		})
	}
}

// A rollback puts enablement back as it was: the host is asked for the opposite, and the
// links the change touched are restored exactly, so a unit partly enabled before (one of
// its two links) is partly enabled again, and a removed unit is linked again once its file
// is back.
func TestRollbackRestoresEnablement(t *testing.T) {
	twoFile := entry{Content: twoLinks, Mode: 0o644}
	t.Run("partly enabled", func(t *testing.T) {
		root := t.TempDir()
		makeTree(t, root, tree{"etc/systemd/system/a.service": twoFile, wantsA: {Link: "/etc/systemd/system/a.service"},
			"etc/systemd/system/b.service": {Link: "/dev/null"}})
		want := readTree(t, root)
		h := &RecordingHost{Root: root, Fail: "restart a.service"}
		e := &Executor{Root: root, Host: h}
		cfg := &model.Rendered{Units: []model.Unit{enabledUnit(twoLinks, true)}}
		for _, s := range []model.Step{{Kind: model.StepWrite, Target: "a.service"}, {Kind: model.StepDaemonReload}} {
			if err := e.Run(context.Background(), cfg, cfg, s); err != nil {
				t.Fatal(err)
			}
		}
		if l, _ := readTree(t, root)["etc/systemd/system/b.service"]; l.Link != "/etc/systemd/system/a.service" {
			t.Fatalf("the write did not enable a.service: b.service is %+v", l)
		}
		if err := e.Run(context.Background(), cfg, cfg, model.Step{Kind: model.StepRestart, Target: "a.service"}); err == nil {
			t.Fatal("the injected restart failure did not happen")
		}
		if err := e.Rollback(context.Background()); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, readTree(t, root)); d != "" {
			t.Errorf("after rollback (-before +after):\n%s", d)
		}
		if d := cmp.Diff([]string{"enable a.service", "daemon-reload", "restart a.service", "disable a.service", "daemon-reload"}, h.Recorded()); d != "" {
			t.Errorf("host calls (-want +got):\n%s", d)
		}
	})
	t.Run("removed unit", func(t *testing.T) {
		root := t.TempDir()
		makeTree(t, root, tree{"etc/systemd/system/a.service": twoFile, wantsA: {Link: "/etc/systemd/system/a.service"},
			"etc/systemd/system/b.service": {Link: "/etc/systemd/system/a.service"}})
		want := readTree(t, root)
		h := &RecordingHost{Root: root, Fail: "reboot"}
		e := &Executor{Root: root, Host: h}
		from := &model.Rendered{Units: []model.Unit{enabledUnit(twoLinks, true)}}
		to := &model.Rendered{}
		if err := e.Run(context.Background(), from, to, model.Step{Kind: model.StepWrite, Target: "a.service"}); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tree{}, readTree(t, root)); d != "" {
			t.Errorf("after removing the unit (-want +got):\n%s", d)
		}
		if err := e.Rollback(context.Background()); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, readTree(t, root)); d != "" {
			t.Errorf("after rollback (-before +after):\n%s", d)
		}
		if d := cmp.Diff([]string{"disable a.service", "enable a.service", "daemon-reload"}, h.Recorded()); d != "" {
			t.Errorf("host calls (-want +got):\n%s", d)
		}
	})
}

// LinkUnit is `systemctl --root enable|disable` for hosts with no systemd.
func TestLinkUnit(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, tree{
		"usr/lib/systemd/system/v.service":      {Content: "[Install]\nWantedBy=multi-user.target\nRequiredBy=x.target\n", Mode: 0o644},
		"etc/systemd/system/v.service.d/a.conf": {Content: "[Install]\nAlias=vv.service\n", Mode: 0o644},
		"etc/systemd/system/m.service":          {Link: "/dev/null"},
		"etc/systemd/system/s.service":          {Content: "[Service]\n", Mode: 0o644},
	})
	if err := LinkUnit(root, "v.service", true); err != nil {
		t.Fatal(err)
	}
	links := tree{}
	for p, e := range readTree(t, root) {
		if e.Link != "" && p != "etc/systemd/system/m.service" {
			links[p] = e
		}
	}
	v := entry{Link: "/usr/lib/systemd/system/v.service"}
	if d := cmp.Diff(tree{"etc/systemd/system/multi-user.target.wants/v.service": v,
		"etc/systemd/system/x.target.requires/v.service": v, "etc/systemd/system/vv.service": v}, links); d != "" {
		t.Errorf("links after enable (-want +got):\n%s", d)
	}
	if err := LinkUnit(root, "v.service", false); err != nil {
		t.Fatal(err)
	}
	for p, e := range readTree(t, root) {
		if e.Link != "" && p != "etc/systemd/system/m.service" {
			t.Errorf("left after disable: %s → %s", p, e.Link)
		}
	}
	for unit, want := range map[string]string{"m.service": "masked", "none.service": "no unit file"} {
		if err := LinkUnit(root, unit, true); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("enable %s: %v, want an error saying %q", unit, err, want)
		}
	}
	if err := LinkUnit(root, "s.service", true); err != nil {
		t.Errorf("enable of a unit with no [Install] (static): %v, want nothing done", err)
	}
}
