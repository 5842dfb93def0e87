package nodeexec

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/testkit/anybytes"
)

// coreos is a root as Fedora CoreOS and RHCOS have it: /usr/local and /opt are links into
// /var, relative, as rpm-ostree makes them.
var coreos = tree{
	"usr/local":    {Link: "../var/usrlocal"},
	"opt":          {Link: "var/opt"},
	"var/usrlocal": {Dir: true},
	"var/opt":      {Dir: true},
	"usr/bin/true": {Content: "os", Mode: 0o755},
}

// TestLocalSoftwarePathsBeforeAfter: files under /usr/local and /opt land where the node's
// OS puts them — through its links into /var on a CoreOS root, in real directories on a
// host without OSTree, in new directories where the OS made none — and verify reads them
// back with no drift; a removed one is removed where it was written.
func TestLocalSoftwarePathsBeforeAfter(t *testing.T) {
	files := []model.File{{Entry: model.Entry{Path: "/usr/local/bin/x"}, Mode: 0o755, Contents: []byte("#!/bin/sh\necho [x]\n")},
		{Entry: model.Entry{Path: "/opt/libexec/tool/y.bin"}, Mode: 0o644, Contents: []byte{0, 0xff, '\r', '\n', 0x7f}}}
	writes := []model.Step{{Kind: model.StepWrite, Target: files[0].Path}, {Kind: model.StepWrite, Target: files[1].Path}}
	with := func(base, extra tree) tree {
		out := tree{}
		for _, tr := range []tree{base, extra} {
			for k, v := range tr {
				if !v.Dir { // readTree lists files and links; directories are implied
					out[k] = v
				}
			}
		}
		return out
	}
	realDirs := tree{"usr/local/share": {Dir: true}, "opt": {Dir: true}}
	tests := []struct {
		name            string
		before, written tree
	}{
		{"CoreOS links", coreos, tree{"var/usrlocal/bin/x": {Content: string(files[0].Contents), Mode: 0o755},
			"var/opt/libexec/tool/y.bin": {Content: string(files[1].Contents), Mode: 0o644}}},
		{"real directories", realDirs, tree{"usr/local/bin/x": {Content: string(files[0].Contents), Mode: 0o755},
			"opt/libexec/tool/y.bin": {Content: string(files[1].Contents), Mode: 0o644}}},
		// Before systemd-tmpfiles made /var/usrlocal and /var/opt (Ignition's first boot).
		{"dangling CoreOS links", tree{"usr/local": {Link: "../var/usrlocal"}, "opt": {Link: "var/opt"}},
			tree{"var/usrlocal/bin/x": {Content: string(files[0].Contents), Mode: 0o755},
				"var/opt/libexec/tool/y.bin": {Content: string(files[1].Contents), Mode: 0o644}}},
		{"neither", tree{"etc/hostname": {Content: "n\n", Mode: 0o644}}, tree{"usr/local/bin/x": {Content: string(files[0].Contents), Mode: 0o755},
			"opt/libexec/tool/y.bin": {Content: string(files[1].Contents), Mode: 0o644}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			makeTree(t, root, tt.before)
			e := &Executor{Root: root, Host: &RecordingHost{}, NoSync: true}
			to := &model.Rendered{Files: files}
			for _, s := range writes {
				if err := e.Run(context.Background(), nil, to, s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			if d := cmp.Diff(with(tt.before, tt.written), readTree(t, root)); d != "" {
				t.Errorf("tree after (-want +got):\n%s", d)
			}
			if drift, err := e.Verify(to); err != nil || len(drift) != 0 {
				t.Errorf("verify after apply: %v %v", drift, err)
			}
			for _, s := range writes {
				if err := e.Run(context.Background(), to, &model.Rendered{}, s); err != nil {
					t.Fatalf("remove, %s: %v", s, err)
				}
			}
			if d := cmp.Diff(with(tt.before, nil), readTree(t, root)); d != "" {
				t.Errorf("tree after removal (-want +got):\n%s", d)
			}
		})
	}
}

// TestPrefixLinksOutAreRefused: a managed prefix that is a link out of the managed trees
// (an /opt into /usr/lib) or out of the root is not written through, and nothing changes.
func TestPrefixLinksOutAreRefused(t *testing.T) {
	outside := t.TempDir()
	tests := []struct {
		name   string
		before tree
		path   string
		want   string
	}{
		{"/opt into /usr", tree{"opt": {Link: "usr/lib"}, "usr/lib": {Dir: true}}, "/opt/x", "the node's /opt is a link to usr/lib, outside the managed prefixes"},
		{"/usr/local to itself", tree{"usr/local": {Link: "."}}, "/usr/local/bin/x", "the node's /usr/local is a link to ., outside"},
		{"/opt out of the root", tree{"opt": {Link: "../../../../../.."}}, "/opt/x", "outside the managed prefixes"},
		{"/opt absolute, out of the root", tree{"opt": {Link: outside}}, "/opt/x", "outside the managed prefixes"},
		{"/usr/local absolute into /var", tree{"usr/local": {Link: "/var/usrlocal"}, "var/usrlocal": {Dir: true}}, "/usr/local/bin/x", "escapes"},
		{"/usr/local/bin to /usr/bin", tree{"usr/local/bin": {Link: "../bin"}, "usr/bin": {Dir: true}}, "/usr/local/bin/x", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			makeTree(t, root, tt.before)
			before := readTree(t, root)
			e := &Executor{Root: root, Host: &RecordingHost{}, NoSync: true}
			to := &model.Rendered{Files: []model.File{{Entry: model.Entry{Path: tt.path}, Mode: 0o644, Contents: []byte("x")}}}
			err := e.Run(context.Background(), nil, to, model.Step{Kind: model.StepWrite, Target: tt.path})
			if tt.want == "" {
				// A link below a prefix is the node's own, as under /etc: os.Root
				// keeps it inside the root, and a CoreOS /usr is read-only anyway.
				if err != nil {
					t.Fatalf("write: %v", err)
				}
				return
			}
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

// TestAnyBytesWrittenAndVerified: every class of bytes is written byte for byte and
// verifies without drift; one byte changed on disk is content drift.
func TestAnyBytesWrittenAndVerified(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, coreos)
	e := &Executor{Root: root, Host: &RecordingHost{}, NoSync: true}
	to := &model.Rendered{}
	for name, b := range anybytes.Classes() {
		to.Files = append(to.Files, model.File{Entry: model.Entry{Path: "/usr/local/share/" + strings.ReplaceAll(name, " ", "-")}, Mode: 0o644, Contents: b})
	}
	for _, f := range to.Files {
		if err := e.Run(context.Background(), nil, to, model.Step{Kind: model.StepWrite, Target: f.Path}); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(root, "var/usrlocal/share", filepath.Base(f.Path)))
		if err != nil || string(got) != string(f.Contents) {
			t.Errorf("%s: %d bytes on disk (%v), want %d", f.Path, len(got), err, len(f.Contents))
		}
	}
	if drift, err := e.Verify(to); err != nil || len(drift) != 0 {
		t.Fatalf("verify: %v %v", drift, err)
	}
	p := filepath.Join(root, "var/usrlocal/share/every-byte")
	b, _ := os.ReadFile(p)
	b[0x5b] = 'x'
	os.WriteFile(p, b, 0o644)
	if drift, err := e.Verify(to); err != nil || len(drift) != 1 || drift[0].Kind != model.DriftContent {
		t.Errorf("one byte changed: %v %v", drift, err)
	}
}
