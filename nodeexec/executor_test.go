package nodeexec

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

// entry is one node of a tree: a file (content, mode), a symlink or a directory.
type entry struct {
	Content string
	Mode    fs.FileMode
	Link    string
	Dir     bool
}

type tree map[string]entry

func makeTree(t *testing.T, root string, tr tree) {
	t.Helper()
	for p, e := range tr {
		full := filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		switch {
		case e.Dir:
			os.MkdirAll(full, 0o755)
		case e.Link != "":
			if err := os.Symlink(e.Link, full); err != nil {
				t.Fatal(err)
			}
		default:
			if err := os.WriteFile(full, []byte(e.Content), e.Mode); err != nil {
				t.Fatal(err)
			}
			os.Chmod(full, e.Mode)
		}
	}
}

// readTree reads every file and link under root (directories are implied).
func readTree(t *testing.T, root string) tree {
	t.Helper()
	out := tree{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, _ := os.Lstat(p)
		if info.Mode()&fs.ModeSymlink != 0 {
			l, _ := os.Readlink(p)
			out[rel] = entry{Link: l}
			return nil
		}
		b, _ := os.ReadFile(p)
		out[rel] = entry{Content: string(b), Mode: info.Mode().Perm()}
		return nil
	})
	return out
}

func TestExecutorBeforeAfter(t *testing.T) {
	yes, no := true, false
	base := tree{"etc/passwd": {Content: "root:x:0:0::/root:/bin/sh\n", Mode: 0o644}}
	with := func(extra tree) tree {
		out := tree{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	unit := model.Unit{Name: "app.service", Contents: "[Service]\nExecStart=/bin/app\n", Enabled: &yes,
		Dropins: []model.Dropin{{Name: "10-env.conf", Contents: "[Service]\nEnvironment=A=1\n"}}}
	tests := []struct {
		name      string
		before    tree
		from, to  *model.Rendered
		steps     []model.Step
		after     tree
		hostCalls []string
	}{
		{
			name:      "new file with mode",
			before:    base,
			to:        &model.Rendered{Files: []model.File{{Entry: model.Entry{Path: "/etc/chrony.conf"}, Mode: 0o600, Contents: []byte("server x\n")}}},
			steps:     []model.Step{{Kind: model.StepWrite, Target: "/etc/chrony.conf"}, {Kind: model.StepRestart, Target: "chronyd.service"}},
			after:     with(tree{"etc/chrony.conf": {Content: "server x\n", Mode: 0o600}}),
			hostCalls: []string{"restart chronyd.service"},
		},
		{
			name:   "overwrite keeps no trace of the old content or temp files",
			before: with(tree{"var/lib/app/conf": {Content: "old old old old", Mode: 0o644}}),
			to:     &model.Rendered{Files: []model.File{{Entry: model.Entry{Path: "/var/lib/app/conf"}, Mode: 0o640, Contents: []byte("new")}}},
			steps:  []model.Step{{Kind: model.StepWrite, Target: "/var/lib/app/conf"}},
			after:  with(tree{"var/lib/app/conf": {Content: "new", Mode: 0o640}}),
		},
		{
			name:   "removed file",
			before: with(tree{"etc/gone": {Content: "x", Mode: 0o644}}),
			from:   &model.Rendered{Files: []model.File{{Entry: model.Entry{Path: "/etc/gone"}, Mode: 0o644, Contents: []byte("x")}}},
			to:     &model.Rendered{},
			steps:  []model.Step{{Kind: model.StepWrite, Target: "/etc/gone"}},
			after:  base,
		},
		{
			name:   "unit with drop-in, enabled",
			before: base,
			to:     &model.Rendered{Units: []model.Unit{unit}},
			steps:  []model.Step{{Kind: model.StepWrite, Target: "app.service"}, {Kind: model.StepDaemonReload}, {Kind: model.StepRestart, Target: "app.service"}},
			after: with(tree{"etc/systemd/system/app.service": {Content: unit.Contents, Mode: 0o644},
				"etc/systemd/system/app.service.d/10-env.conf": {Content: unit.Dropins[0].Contents, Mode: 0o644}}),
			hostCalls: []string{"enable app.service", "daemon-reload", "restart app.service"},
		},
		{
			name: "drop-in removed, unit disabled",
			before: with(tree{"etc/systemd/system/app.service": {Content: unit.Contents, Mode: 0o644},
				"etc/systemd/system/app.service.d/10-env.conf": {Content: "x", Mode: 0o644}}),
			from:      &model.Rendered{Units: []model.Unit{unit}},
			to:        &model.Rendered{Units: []model.Unit{{Name: "app.service", Contents: unit.Contents, Enabled: &no}}},
			steps:     []model.Step{{Kind: model.StepWrite, Target: "app.service"}},
			after:     with(tree{"etc/systemd/system/app.service": {Content: unit.Contents, Mode: 0o644}}),
			hostCalls: []string{"disable app.service"},
		},
		{
			name:   "mask",
			before: base,
			to:     &model.Rendered{Units: []model.Unit{{Name: "bad.service", Mask: true}}},
			steps:  []model.Step{{Kind: model.StepWrite, Target: "bad.service"}},
			after:  with(tree{"etc/systemd/system/bad.service": {Link: "/dev/null"}}),
		},
		{
			name:      "kargs and pivot go to the host",
			before:    base,
			from:      &model.Rendered{KernelArgs: []string{"a", "old"}},
			to:        &model.Rendered{KernelArgs: []string{"a", "nosmt"}, OSImage: "img:2"},
			steps:     []model.Step{{Kind: model.StepKargs}, {Kind: model.StepPivot}, {Kind: model.StepReboot}},
			after:     base,
			hostCalls: []string{"kargs +a,nosmt -old", "pivot img:2", "reboot"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			makeTree(t, root, tt.before)
			h := &RecordingHost{}
			e := &Executor{Root: root, Host: h}
			for _, s := range tt.steps {
				if err := e.Run(context.Background(), tt.from, tt.to, s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			if d := cmp.Diff(tt.after, readTree(t, root)); d != "" {
				t.Errorf("tree after (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.hostCalls, h.Recorded()); d != "" {
				t.Errorf("host calls (-want +got):\n%s", d)
			}
			if drift, err := e.Verify(tt.to); err != nil || len(drift) != 0 {
				t.Errorf("verify after apply: %v %v", drift, err)
			}
		})
	}
}

func TestExecutorRefusesEscapes(t *testing.T) {
	outside := t.TempDir()
	tests := []struct {
		name   string
		before tree
		path   string
		want   string
	}{
		{"dot-dot", nil, "/etc/../../x", "not a clean absolute path"},
		{"outside allow-list", nil, "/usr/bin/evil", "outside the managed prefixes"},
		{"the prefix itself", nil, "/etc", "outside the managed prefixes"},
		{"symlinked parent to an absolute path", tree{"etc/sub": {Link: outside}}, "/etc/sub/x", "escapes"},
		{"symlinked parent up and out", tree{"etc/sub": {Link: "../../.."}}, "/etc/sub/x", "escapes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			makeTree(t, root, tt.before)
			before := readTree(t, root)
			e := &Executor{Root: root, Host: &RecordingHost{}}
			to := &model.Rendered{Files: []model.File{{Entry: model.Entry{Path: tt.path}, Mode: 0o644, Contents: []byte("x")}}}
			err := e.Run(context.Background(), nil, to, model.Step{Kind: model.StepWrite, Target: tt.path})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if d := cmp.Diff(before, readTree(t, root)); d != "" {
				t.Errorf("the root changed (-before +after):\n%s", d)
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Errorf("wrote outside the root: %v", ents)
			}
		})
	}
}

func TestVerifyReportsTypedDrift(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, tree{"etc/a": {Content: "changed", Mode: 0o644}, "etc/b": {Content: "same", Mode: 0o600}})
	to := &model.Rendered{Files: []model.File{
		{Entry: model.Entry{Path: "/etc/a"}, Mode: 0o644, Contents: []byte("want")},
		{Entry: model.Entry{Path: "/etc/b"}, Mode: 0o644, Contents: []byte("same")},
		{Entry: model.Entry{Path: "/etc/c"}, Mode: 0o644, Contents: []byte("x")},
	}}
	e := &Executor{Root: root, Host: &RecordingHost{}}
	drift, err := e.Verify(to)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, d := range drift {
		kinds = append(kinds, d.Path+" "+string(d.Kind))
	}
	if d := cmp.Diff([]string{"/etc/a content", "/etc/b mode", "/etc/c missing"}, kinds); d != "" {
		t.Errorf("drift (-want +got):\n%s", d)
	}
	err = e.Run(context.Background(), nil, to, model.Step{Kind: model.StepVerify})
	var de *DriftError
	if !errors.As(err, &de) || len(de.Drift) != 3 {
		t.Errorf("verify step: %v", err)
	}
}

func TestExecutorRefusesEngineSteps(t *testing.T) {
	e := &Executor{Root: t.TempDir(), Host: &RecordingHost{}}
	for _, k := range []model.StepKind{model.StepCordon, model.StepDrain, model.StepUncordon} {
		if err := e.Run(context.Background(), nil, &model.Rendered{}, model.Step{Kind: k}); err == nil {
			t.Errorf("%s ran on the node", k)
		}
	}
}

func TestRollbackRestoresExactPriorState(t *testing.T) {
	yes := true
	before := tree{
		"etc/passwd":                       {Content: "root:x:0:0::/root:/bin/sh\n", Mode: 0o644},
		"etc/chrony.conf":                  {Content: "server old\n", Mode: 0o600},
		"etc/gone":                         {Content: "keep me", Mode: 0o640},
		"etc/systemd/system/bad.service":   {Content: "[Service]\n", Mode: 0o644},
		"etc/systemd/system/old.service.d": {Dir: true},
	}
	from := &model.Rendered{Files: []model.File{{Entry: model.Entry{Path: "/etc/gone"}, Mode: 0o640, Contents: []byte("keep me")}}}
	to := &model.Rendered{
		Files: []model.File{{Entry: model.Entry{Path: "/etc/chrony.conf"}, Mode: 0o644, Contents: []byte("server new\n")},
			{Entry: model.Entry{Path: "/var/lib/new/file"}, Mode: 0o644, Contents: []byte("n")}},
		Units: []model.Unit{{Name: "app.service", Contents: "[Service]\n", Enabled: &yes,
			Dropins: []model.Dropin{{Name: "a.conf", Contents: "x"}}}, {Name: "bad.service", Mask: true}},
	}
	root := t.TempDir()
	makeTree(t, root, before)
	want := readTree(t, root)
	h := &RecordingHost{Fail: "restart app.service"}
	e := &Executor{Root: root, Host: h}
	steps := []model.Step{{Kind: model.StepWrite, Target: "/etc/chrony.conf"}, {Kind: model.StepWrite, Target: "/etc/gone"},
		{Kind: model.StepWrite, Target: "/var/lib/new/file"}, {Kind: model.StepWrite, Target: "app.service"},
		{Kind: model.StepWrite, Target: "bad.service"}, {Kind: model.StepDaemonReload}, {Kind: model.StepRestart, Target: "app.service"}}
	var failed error
	for _, s := range steps {
		if failed = e.Run(context.Background(), from, to, s); failed != nil {
			break
		}
	}
	if failed == nil {
		t.Fatal("the injected restart failure did not happen")
	}
	if err := e.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, readTree(t, root)); d != "" {
		t.Errorf("after rollback (-before +after):\n%s", d)
	}
	if d := cmp.Diff([]string{"enable app.service", "daemon-reload", "restart app.service", "disable app.service", "daemon-reload"}, h.Recorded()); d != "" {
		t.Errorf("host calls (-want +got):\n%s", d)
	}
}

func TestCheckBeforeUpdate(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, tree{"etc/a": {Content: "tampered", Mode: 0o644}, "etc/b": {Content: "b", Mode: 0o644}})
	from := &model.Rendered{Name: "rendered-w-1", Files: []model.File{
		{Entry: model.Entry{Path: "/etc/a"}, Mode: 0o644, Contents: []byte("a")}, {Entry: model.Entry{Path: "/etc/b"}, Mode: 0o644, Contents: []byte("b")}}}
	e := &Executor{Root: root, Host: &RecordingHost{}}
	err := e.CheckBeforeUpdate(from, nil, []model.Step{{Kind: model.StepWrite, Target: "/etc/b"}})
	var de *DriftError
	if !errors.As(err, &de) || len(de.Drift) != 1 || de.Drift[0].Path != "/etc/a" || !strings.Contains(err.Error(), "rendered-w-1") {
		t.Fatalf("drift on a path the plan does not write: %v", err)
	}
	if err := e.CheckBeforeUpdate(from, nil, []model.Step{{Kind: model.StepWrite, Target: "/etc/a"}}); err != nil {
		t.Errorf("drift the plan restores was refused: %v", err)
	}
}

// A file whose owner is not its config's user and group, as resolved in the node's own
// etc/passwd and etc/group, has drifted; a write restores the owner.
func TestVerifyReportsOwnerDrift(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("owners are set, and so checked, only as root")
	}
	root := t.TempDir()
	makeTree(t, root, tree{
		"etc/passwd": {Content: "root:x:0:0::/root:/bin/sh\nchrony:x:994:992::/var/lib/chrony:/sbin/nologin\n", Mode: 0o644},
		"etc/group":  {Content: "root:x:0:\nchrony:x:992:\n", Mode: 0o644},
		"etc/c.conf": {Content: "x", Mode: 0o644},
	})
	to := &model.Rendered{Files: []model.File{{Entry: model.Entry{Path: "/etc/c.conf", User: "chrony", Group: "chrony"}, Mode: 0o644, Contents: []byte("x")}}}
	e := &Executor{Root: root, Host: &RecordingHost{}}
	drift, err := e.Verify(to)
	if err != nil {
		t.Fatal(err)
	}
	if len(drift) != 1 || drift[0].Kind != model.DriftOwner || drift[0].Expected != "994:992 (chrony:chrony)" || drift[0].Found != "0:0" {
		t.Fatalf("drift = %+v, want the owner 994:992 where 0:0 is", drift)
	}
	if err := e.Run(context.Background(), to, to, model.Step{Kind: model.StepWrite, Target: "/etc/c.conf"}); err != nil {
		t.Fatal(err)
	}
	if drift, err := e.Verify(to); err != nil || len(drift) != 0 {
		t.Errorf("after the write: %+v, %v", drift, err)
	}
	// A name the node does not know is not drift (the write would fail, not drift).
	to.Files[0].User = "nobody-here"
	if drift, err := e.Verify(to); err != nil || len(drift) != 0 {
		t.Errorf("unresolvable owner: %+v, %v", drift, err)
	}
}

// pivotHost is a RecordingHost told, with each kargs step, the pivot that follows.
type pivotHost struct {
	RecordingHost
	pivots []string
}

func (h *pivotHost) SetKernelArgsBefore(ctx context.Context, add, remove []string, pivot string) error {
	h.pivots = append(h.pivots, pivot)
	return h.SetKernelArgs(ctx, add, remove)
}

// A kargs step tells a KargsBeforePivot host the image the update pivots to next: the
// target's when the host boots another, none when it boots the target's or the target
// names none (a kargs-only update: nothing staged may stand in for it).
func TestKargsStepSaysThePivotThatFollows(t *testing.T) {
	for _, tc := range []struct{ booted, target, want string }{
		{"quay.io/os:1", "quay.io/os:2", "quay.io/os:2"},
		{"quay.io/os:2", "quay.io/os:2", ""},
		{"quay.io/os:1", "", ""},
	} {
		h := &pivotHost{RecordingHost: RecordingHost{Booted: tc.booted}}
		e := &Executor{Root: t.TempDir(), Host: h}
		target := &model.Rendered{Name: "t", OSImage: tc.target, KernelArgs: []string{"nosmt"}}
		if err := e.Run(context.Background(), &model.Rendered{}, target, model.Step{Kind: model.StepKargs}); err != nil {
			t.Fatal(err)
		}
		if len(h.pivots) != 1 || h.pivots[0] != tc.want {
			t.Errorf("booted %q, target %q: told %q, want %q", tc.booted, tc.target, h.pivots, tc.want)
		}
	}
}
