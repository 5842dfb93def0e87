package nodeexec

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

// dirTree reads every file, link and directory under root: files as readTree has them,
// directories with their mode (setuid, setgid and sticky as chmod numbers them).
func dirTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, _ := os.Lstat(p)
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "-> " + l
		case info.IsDir():
			out[rel] = "dir " + modeString(info.Mode())
		default:
			b, _ := os.ReadFile(p)
			out[rel] = modeString(info.Mode()) + " " + string(b)
		}
		return nil
	})
	return out
}

func modeString(m fs.FileMode) string { return fmt.Sprintf("%04o", model.UnixMode(m)) }

// The accounts of the test roots: the executor gives files their owners by name, as the
// node's own databases resolve them.
const (
	passwd = "root:x:0:0::/root:/bin/sh\ncore:x:1000:1000::/var/home/core:/bin/bash\n"
	group  = "root:x:0:\ncore:x:1000:\n"
)

// Declarative before/after tests of directories, links and the core user's SSH keys: a
// tree, a config, the steps, the tree after; the disk is then what the config says.
func TestExecutorTreeBeforeAfter(t *testing.T) {
	base := tree{"etc/passwd": {Content: passwd, Mode: 0o644}, "etc/group": {Content: group, Mode: 0o644}}
	keysFile, keysDirs := model.SSHKeyItems([]string{"ssh-ed25519 AAAA one", "ssh-rsa AAAA two"}, model.Range{}, model.TextRef{})
	keys := &model.Rendered{Files: []model.File{keysFile}, Directories: keysDirs}
	write := func(ps ...string) []model.Step {
		var s []model.Step
		for _, p := range ps {
			s = append(s, model.Step{Kind: model.StepWrite, Target: p})
		}
		return s
	}
	tests := []struct {
		name     string
		before   tree
		from, to *model.Rendered
		steps    []model.Step
		after    map[string]string // beside etc and etc/passwd
		err      string
	}{
		{name: "new directories, one sticky, under a missing parent",
			to:    &model.Rendered{Directories: []model.Directory{{Entry: model.Entry{Path: "/var/lib/a/b"}, Mode: 0o750}, {Entry: model.Entry{Path: "/var/tmp2"}, Mode: 0o1777}}},
			steps: write("/var/lib/a/b", "/var/tmp2"),
			after: map[string]string{"var": "dir 0755", "var/lib": "dir 0755", "var/lib/a": "dir 0755",
				"var/lib/a/b": "dir 0750", "var/tmp2": "dir 1777"}},
		{name: "setuid and setgid files keep their bits through the chown to their owner; a sticky one its own",
			to: &model.Rendered{Files: []model.File{{Entry: model.Entry{Path: "/var/lib/suid", User: "core", Group: "core"}, Mode: 0o4755, Contents: []byte("u")},
				{Entry: model.Entry{Path: "/etc/sgid", Group: "core"}, Mode: 0o2750, Contents: []byte("g")}, {Entry: model.Entry{Path: "/etc/sticky"}, Mode: 0o1644, Contents: []byte("s")}}},
			steps: write("/var/lib/suid", "/etc/sgid", "/etc/sticky"),
			after: map[string]string{"var": "dir 0755", "var/lib": "dir 0755", "var/lib/suid": "4755 u", "etc/sgid": "2750 g", "etc/sticky": "1644 s"}},
		{name: "an existing directory gets its mode and keeps what it holds",
			before: tree{"etc/d/keep": {Content: "k", Mode: 0o600}},
			to:     &model.Rendered{Directories: []model.Directory{{Entry: model.Entry{Path: "/etc/d"}, Mode: 0o700}}},
			steps:  write("/etc/d"),
			after:  map[string]string{"etc/d": "dir 0700", "etc/d/keep": "0600 k"}},
		{name: "a symbolic link's target is data, never followed",
			to: &model.Rendered{Links: []model.Link{{Entry: model.Entry{Path: "/etc/localtime"}, Target: "../usr/share/zoneinfo/UTC"},
				{Entry: model.Entry{Path: "/etc/out"}, Target: "../../../../../../etc/shadow"}}},
			steps: write("/etc/localtime", "/etc/out"),
			after: map[string]string{"etc/localtime": "-> ../usr/share/zoneinfo/UTC", "etc/out": "-> ../../../../../../etc/shadow"}},
		{name: "a link replaces the link and the file mcp wrote there",
			before: tree{"etc/localtime": {Link: "../usr/share/zoneinfo/UTC"}, "etc/f": {Content: "x", Mode: 0o644}},
			from:   &model.Rendered{Files: []model.File{{Entry: model.Entry{Path: "/etc/f"}, Mode: 0o644, Contents: []byte("x")}}},
			to: &model.Rendered{Links: []model.Link{{Entry: model.Entry{Path: "/etc/localtime"}, Target: "../usr/share/zoneinfo/Europe/Paris"},
				{Entry: model.Entry{Path: "/etc/f"}, Target: "elsewhere"}}},
			steps: write("/etc/f", "/etc/localtime"),
			after: map[string]string{"etc/localtime": "-> ../usr/share/zoneinfo/Europe/Paris", "etc/f": "-> elsewhere"}},
		{name: "a hard link is its target's file under a second name",
			before: tree{"etc/real": {Content: "r", Mode: 0o640}},
			to:     &model.Rendered{Links: []model.Link{{Entry: model.Entry{Path: "/var/lib/second"}, Target: "/etc/real", Hard: true}}},
			steps:  write("/var/lib/second"),
			after:  map[string]string{"etc/real": "0640 r", "var": "dir 0755", "var/lib": "dir 0755", "var/lib/second": "0640 r"}},
		{name: "removed: an empty directory goes, one holding anything stays, a link goes",
			before: tree{"etc/empty": {Dir: true}, "etc/full/x": {Content: "x", Mode: 0o644}, "etc/l": {Link: "t"}},
			from: &model.Rendered{Directories: []model.Directory{{Entry: model.Entry{Path: "/etc/empty"}, Mode: 0o755}, {Entry: model.Entry{Path: "/etc/full"}, Mode: 0o755}},
				Links: []model.Link{{Entry: model.Entry{Path: "/etc/l"}, Target: "t"}}},
			to:    &model.Rendered{},
			steps: write("/etc/empty", "/etc/full", "/etc/l"),
			after: map[string]string{"etc/full": "dir 0755", "etc/full/x": "0644 x"}},
		{name: "the core user's keys through /home, a link to var/home as on CoreOS",
			before: tree{"home": {Link: "var/home"}, "var/home/core": {Dir: true}},
			to:     keys,
			steps:  write("/home/core/.ssh", "/home/core/.ssh/authorized_keys.d", model.SSHKeysFile),
			after: map[string]string{"home": "-> var/home", "var": "dir 0755", "var/home": "dir 0755", "var/home/core": "dir 0755",
				"var/home/core/.ssh": "dir 0700", "var/home/core/.ssh/authorized_keys.d": "dir 0700",
				"var/home/core/.ssh/authorized_keys.d/ignition": "0600 ssh-ed25519 AAAA one\nssh-rsa AAAA two\n"}},
		{name: "the keys in a real /home too",
			before: tree{"home/core": {Dir: true}},
			to:     keys,
			steps:  write("/home/core/.ssh", "/home/core/.ssh/authorized_keys.d", model.SSHKeysFile),
			after: map[string]string{"home": "dir 0755", "home/core": "dir 0755", "home/core/.ssh": "dir 0700",
				"home/core/.ssh/authorized_keys.d":          "dir 0700",
				"home/core/.ssh/authorized_keys.d/ignition": "0600 ssh-ed25519 AAAA one\nssh-rsa AAAA two\n"}},
		{name: "a directory where a file nobody declared is",
			before: tree{"etc/d": {Content: "mine", Mode: 0o644}},
			to:     &model.Rendered{Directories: []model.Directory{{Entry: model.Entry{Path: "/etc/d"}, Mode: 0o755}}},
			steps:  write("/etc/d"), err: "a regular file is there, which no config of mcp's wrote"},
		{name: "a link where a directory is",
			before: tree{"etc/d/x": {Content: "x", Mode: 0o644}},
			to:     &model.Rendered{Links: []model.Link{{Entry: model.Entry{Path: "/etc/d"}, Target: "t"}}},
			steps:  write("/etc/d"), err: "a directory is there"},
		{name: "a home linked out of the root",
			before: tree{"home": {Link: "/"}},
			to:     keys,
			steps:  write("/home/core/.ssh"), err: "escapes"},
		{name: "other homes are not the keys' tree",
			to:    &model.Rendered{Directories: []model.Directory{{Entry: model.Entry{Path: "/home/alice/.ssh"}, Mode: 0o700}}},
			steps: write("/home/alice/.ssh"), err: "outside the managed prefixes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			makeTree(t, root, base)
			makeTree(t, root, tt.before)
			before := dirTree(t, root)
			e := &Executor{Root: root, Host: &RecordingHost{}}
			var err error
			for _, s := range tt.steps {
				if err = e.Run(context.Background(), tt.from, tt.to, s); err != nil {
					break
				}
			}
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				if d := cmp.Diff(before, dirTree(t, root)); d != "" {
					t.Errorf("a refused write changed the tree (-before +after):\n%s", d)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"etc": "dir 0755", "etc/passwd": "0644 " + passwd, "etc/group": "0644 " + group}
			for k, v := range tt.after {
				want[k] = v
			}
			if d := cmp.Diff(want, dirTree(t, root)); d != "" {
				t.Errorf("tree after (-want +got):\n%s", d)
			}
			if drift, err := e.Verify(tt.to); err != nil || len(drift) != 0 {
				t.Errorf("verify after apply: %v %v", drift, err)
			}
		})
	}
}

// Drift of directories and links: missing, of another type, another mode, another target;
// the steps that restore it (steps.Restore, through the executor) leave none.
func TestTreeDriftAndRestore(t *testing.T) {
	root := t.TempDir()
	cfg := &model.Rendered{
		Files:       []model.File{{Entry: model.Entry{Path: "/etc/real"}, Mode: 0o644, Contents: []byte("r")}, {Entry: model.Entry{Path: "/etc/other"}, Mode: 0o644, Contents: []byte("o")}},
		Directories: []model.Directory{{Entry: model.Entry{Path: "/etc/d"}, Mode: 0o750}, {Entry: model.Entry{Path: "/etc/gone"}, Mode: 0o755}, {Entry: model.Entry{Path: "/etc/filed"}, Mode: 0o755}},
		Links: []model.Link{{Entry: model.Entry{Path: "/etc/l"}, Target: "a"}, {Entry: model.Entry{Path: "/etc/flat"}, Target: "b"}, {Entry: model.Entry{Path: "/etc/h"}, Target: "/etc/real", Hard: true},
			{Entry: model.Entry{Path: "/etc/lost"}, Target: "c"}},
	}
	e := &Executor{Root: root, Host: &RecordingHost{}}
	for _, p := range []string{"/etc/real", "/etc/other", "/etc/d", "/etc/gone", "/etc/filed", "/etc/l", "/etc/flat", "/etc/h", "/etc/lost"} {
		if err := e.Run(context.Background(), nil, cfg, model.Step{Kind: model.StepWrite, Target: p}); err != nil {
			t.Fatal(err)
		}
	}
	at := func(p string) string { return filepath.Join(root, p) }
	os.Chmod(at("etc/d"), 0o777)
	os.Remove(at("etc/gone"))
	os.Remove(at("etc/filed"))
	os.WriteFile(at("etc/filed"), []byte("f"), 0o644)
	os.Remove(at("etc/l"))
	os.Symlink("elsewhere", at("etc/l"))
	os.Remove(at("etc/flat"))
	os.WriteFile(at("etc/flat"), []byte("x"), 0o644)
	os.Remove(at("etc/h"))
	os.Link(at("etc/other"), at("etc/h"))
	os.Remove(at("etc/lost"))
	drift, err := e.Verify(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range drift {
		got = append(got, d.String())
	}
	want := []string{
		"/etc/d: mode (expected 0750, found 0777)", "/etc/gone: missing (expected directory, found (none))",
		"/etc/filed: type (expected directory, found regular file)", "/etc/l: target (expected a, found elsewhere)",
		"/etc/flat: type (expected symbolic link, found regular file)", "/etc/h: target (expected /etc/real, found another file)",
		"/etc/lost: missing (expected symbolic link to c, found (none))",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("drift (-want +got):\n%s", d)
	}
	// A restore rewrites each drifted path; a file in a directory's place stays a file
	// nobody declared, so restoring it is the one refusal.
	for _, d := range drift {
		err := e.Run(context.Background(), cfg, cfg, model.Step{Kind: model.StepWrite, Target: d.Path})
		if d.Path == "/etc/filed" {
			if err == nil {
				t.Error("a directory replaced a file nobody declared")
			}
			os.Remove(at("etc/filed"))
			err = e.Run(context.Background(), cfg, cfg, model.Step{Kind: model.StepWrite, Target: d.Path})
		}
		if err != nil {
			t.Fatalf("restore %s: %v", d.Path, err)
		}
	}
	if drift, err := e.Verify(cfg); err != nil || len(drift) != 0 {
		t.Errorf("after restore: %v %v", drift, err)
	}
}

// Rollback puts directories and links back exactly: modes, targets, and what was absent.
func TestRollbackRestoresDirectoriesAndLinks(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, tree{"etc/d/keep": {Content: "k", Mode: 0o600}, "etc/l": {Link: "a"}, "etc/f": {Content: "f", Mode: 0o640}})
	os.Chmod(filepath.Join(root, "etc/d"), 0o755)
	before := dirTree(t, root)
	from := &model.Rendered{Files: []model.File{{Entry: model.Entry{Path: "/etc/f"}, Mode: 0o640, Contents: []byte("f")}}}
	to := &model.Rendered{Directories: []model.Directory{{Entry: model.Entry{Path: "/etc/d"}, Mode: 0o700}, {Entry: model.Entry{Path: "/var/new/dir"}, Mode: 0o750}},
		Links: []model.Link{{Entry: model.Entry{Path: "/etc/l"}, Target: "b"}, {Entry: model.Entry{Path: "/etc/f"}, Target: "c"}}}
	e := &Executor{Root: root, Host: &RecordingHost{}}
	e.Begin()
	for _, p := range []string{"/etc/d", "/etc/f", "/etc/l", "/var/new/dir"} {
		if err := e.Run(context.Background(), from, to, model.Step{Kind: model.StepWrite, Target: p}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := dirTree(t, root)
	delete(after, "var") // parents MkdirAll made are not the executor's to track
	delete(after, "var/new")
	if d := cmp.Diff(before, after); d != "" {
		t.Errorf("rollback (-before +after):\n%s", d)
	}
}

// A setuid, setgid or sticky bit is part of a file's mode: added or dropped on the node it
// is drift, the write that restores it puts it back, and a rollback restores a file's
// bits as they were (after its owner, whose chown clears them).
func TestSpecialModeBitsAreDriftAndRollBack(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, tree{"etc/passwd": {Content: passwd, Mode: 0o644}, "etc/group": {Content: group, Mode: 0o644},
		"etc/tool": {Content: "old", Mode: 0o755}})
	at := func(p string) string { return filepath.Join(root, p) }
	os.Chown(at("etc/tool"), 1000, 1000)
	os.Chmod(at("etc/tool"), 0o755|fs.ModeSetuid)
	before := dirTree(t, root)
	cfg := &model.Rendered{Files: []model.File{{Entry: model.Entry{Path: "/etc/plain"}, Mode: 0o755, Contents: []byte("p")},
		{Entry: model.Entry{Path: "/etc/tool"}, Mode: 0o755, Contents: []byte("new")}}}
	e := &Executor{Root: root, Host: &RecordingHost{}}
	e.Begin()
	for _, p := range []string{"/etc/plain", "/etc/tool"} {
		if err := e.Run(context.Background(), nil, cfg, model.Step{Kind: model.StepWrite, Target: p}); err != nil {
			t.Fatal(err)
		}
	}
	if got := dirTree(t, root)["etc/tool"]; got != "0755 new" {
		t.Errorf("/etc/tool written as %q, want 0755: the config's mode has no setuid bit", got)
	}
	os.Chmod(at("etc/plain"), 0o755|fs.ModeSetuid)
	drift, err := e.Verify(cfg)
	if err != nil || len(drift) != 1 || drift[0].String() != "/etc/plain: mode (expected 0755, found 4755)" {
		t.Errorf("a setuid bit added on the node: drift %v %v", drift, err)
	}
	if err := e.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(before, dirTree(t, root)); d != "" {
		t.Errorf("after rollback (-before +after):\n%s", d)
	}
	if st, err := os.Stat(at("etc/tool")); err != nil || st.Mode()&fs.ModeSetuid == 0 {
		t.Errorf("/etc/tool after rollback: %v %v, want its setuid bit back", st.Mode(), err)
	}
}
