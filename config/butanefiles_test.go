package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const localBu = `variant: fcos
version: 1.6.0
passwd:
  users:
    - name: core
      ssh_authorized_keys_local: [keys/core.pub]
storage:
  files:
    - path: /etc/local.conf
      contents: {local: local.conf}
  trees:
    - local: tree
      path: /etc/tree
systemd:
  units:
    - name: l.service
      contents_local: l.service
`

var localFiles = map[string]string{"keys/core.pub": "ssh-ed25519 AAAA core@x\n", "local.conf": "[main]\nfrom=local\n",
	"tree/a": "a\n", "tree/sub/b": "b\n", "l.service": "[Service]\nExecStart=/bin/true\n"}

// Butane's local references read from the directory of the Butane file a file() call
// reads (its --files-dir), byte for byte: local contents, the core user's keys, a
// unit's contents and a tree with its symlink as a link.
func TestButaneLocalFilesFromItsDirectory(t *testing.T) {
	dir := butaneConfig(t, `file("bu/worker.bu")`, nil)
	writeTree(t, filepath.Join(dir, "bu"), localFiles)
	writeTree(t, filepath.Join(dir, "bu"), map[string]string{"worker.bu": localBu})
	if err := os.Symlink("a", filepath.Join(dir, "bu/tree/l")); err != nil {
		t.Fatal(err)
	}
	res, diags := Load(dir, Options{Schemas: testSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	c := res.Desired.Configs[0]
	got := map[string]string{}
	for _, f := range c.Files {
		got[f.Path] = string(f.Contents)
	}
	for p, want := range map[string]string{"/etc/local.conf": "[main]\nfrom=local\n", "/etc/tree/a": "a\n", "/etc/tree/sub/b": "b\n"} {
		if got[p] != want {
			t.Errorf("%s: %q, want %q (files %v)", p, got[p], want, got)
		}
	}
	if !slices.Equal(c.SSHKeys, []string{"ssh-ed25519 AAAA core@x"}) {
		t.Errorf("core keys %q", c.SSHKeys)
	}
	if len(c.Units) != 1 || c.Units[0].Contents != "[Service]\nExecStart=/bin/true\n" {
		t.Errorf("units %+v", c.Units)
	}
	if len(c.Links) != 1 || c.Links[0].Path != "/etc/tree/l" || c.Links[0].Target != "a" {
		t.Errorf("links %+v", c.Links)
	}
}

// butane_files_dir names the directory when the Butane text is not a file() call.
func TestButaneFilesDir(t *testing.T) {
	dir := butaneConfig(t, `"variant: fcos\nversion: 1.6.0\nstorage:\n  files:\n    - path: /etc/x\n      contents: {local: x}\n"
  butane_files_dir = "files"`, nil)
	writeTree(t, filepath.Join(dir, "files"), map[string]string{"x": "from the files dir\n"})
	res, diags := Load(dir, Options{Schemas: testSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if f := res.Desired.Configs[0].Files; len(f) != 2 || string(f[1].Contents) != "from the files dir\n" {
		t.Errorf("files %+v", f)
	}
}

// Nothing outside the files directory is read: not by "..", not through a symlink, not
// by an absolute path; a reference that is missing or too large is an error naming it.
func TestButaneFilesDirConfined(t *testing.T) {
	for name, c := range map[string]struct{ ref, want string }{
		"dotdot":       {"../secret", `local file "../secret"`},
		"symlink out":  {"out", `local file "out"`},
		"absolute":     {"/etc/passwd", `local file "/etc/passwd"`},
		"missing":      {"nope", `local file "nope"`},
		"tree symlink": {"t", ""},
		"too large":    {"big", "more than mcp reads"},
	} {
		t.Run(name, func(t *testing.T) {
			bu := "variant: fcos\nversion: 1.6.0\nstorage:\n  files:\n    - path: /etc/x\n      contents: {local: " + c.ref + "}\n"
			if name == "tree symlink" {
				bu = "variant: fcos\nversion: 1.6.0\nstorage:\n  trees:\n    - {local: t, path: /etc/t}\n"
			}
			dir := butaneConfig(t, `file("bu/w.bu")`, nil)
			writeTree(t, dir, map[string]string{"secret": "s\n", "bu/w.bu": bu, "bu/t/a": "a\n",
				"bu/big": strings.Repeat("x", maxFileSize+1)})
			os.Symlink(filepath.Join(dir, "secret"), filepath.Join(dir, "bu/out"))
			// A directory symlink inside a tree that leads out is not followed.
			os.Symlink("../..", filepath.Join(dir, "bu/t/up"))
			if name == "tree symlink" {
				os.Remove(filepath.Join(dir, "bu/t/up"))
				os.Symlink(filepath.Join(dir, "secret"), filepath.Join(dir, "bu/t/s"))
			}
			res, diags := Load(dir, Options{Schemas: testSchemas})
			if name == "tree symlink" {
				// Butane makes the symlink a link (its target is data), never reads through it.
				if diags.HasErrors() {
					t.Fatal(diags)
				}
				for _, f := range res.Desired.Configs[0].Files {
					if strings.Contains(string(f.Contents), "s\n") && f.Path != "/etc/t/a" {
						t.Errorf("read through the symlink: %+v", f)
					}
				}
				return
			}
			if !diags.HasErrors() || !strings.Contains(diags.Error(), c.want) {
				t.Errorf("want an error with %q, got %v", c.want, diags)
			}
		})
	}
}
