package config

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/testkit/anybytes"
)

const filesBase = "provider \"local\" { fleet = \"f\" }\npool \"worker\" {}\n"

// Any bytes come in through content_base64: filebase64() of a file of every class of
// bytes, and a literal; content keeps taking text.
func TestContentBase64(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "base.hcl", filesBase)
	var src strings.Builder
	src.WriteString("config \"x\" {\n  pools = [\"worker\"]\n")
	classes := anybytes.Classes()
	names := map[string]string{}
	for name, b := range classes {
		fn := strings.ReplaceAll(name, " ", "-") + ".bin"
		if err := os.WriteFile(filepath.Join(dir, fn), b, 0o644); err != nil {
			t.Fatal(err)
		}
		names["/usr/local/share/"+fn] = name
		src.WriteString("  file \"/usr/local/share/" + fn + "\" { content_base64 = filebase64(\"" + fn + "\") }\n")
	}
	src.WriteString("  file \"/opt/a\" { content_base64 = \"" + base64.StdEncoding.EncodeToString([]byte{0, 0xff, '[', 0x7f}) + "\" }\n")
	src.WriteString("  file \"/etc/t\" { content = \"[main]\\r\\n\" }\n}\n")
	write(t, dir, "main.hcl", src.String())
	res, diags := Load(dir, Options{Schemas: testSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	for _, f := range res.Desired.Configs[0].Files {
		want, ok := classes[names[f.Path]]
		switch f.Path {
		case "/opt/a":
			want, ok = []byte{0, 0xff, '[', 0x7f}, true
		case "/etc/t":
			want, ok = []byte("[main]\r\n"), true
		}
		if !ok || !bytes.Equal(f.Contents, want) {
			t.Errorf("%s: %d bytes, want %d (%v)", f.Path, len(f.Contents), len(want), ok)
		}
	}
	if n := len(res.Desired.Configs[0].Files); n != len(classes)+2 {
		t.Errorf("%d files, want %d", n, len(classes)+2)
	}
}

// A file's content is given once, as text or base64, and base64 must be base64; file()
// of bytes that are not text says to use filebase64. Each error is at its place.
func TestFileContentErrors(t *testing.T) {
	tests := []struct {
		name, src, summary, detail string
		line, col                  int
	}{
		{"neither", "config \"x\" {\n  pools = [\"worker\"]\n  file \"/etc/a\" { mode = \"0600\" }\n}",
			"Missing file content", `File "/etc/a" needs content (UTF-8 text) or content_base64`, 3, 8},
		{"both", "config \"x\" {\n  pools = [\"worker\"]\n  file \"/etc/a\" {\n    content        = \"x\"\n    content_base64 = \"eA==\"\n  }\n}",
			"Conflicting file content", "sets both content and content_base64", 5, 5},
		{"both, base64 first", "config \"x\" {\n  pools = [\"worker\"]\n  file \"/etc/a\" {\n    content_base64 = \"eA==\"\n    content        = \"x\"\n  }\n}",
			"Conflicting file content", "sets both content and content_base64", 5, 5},
		{"not base64", "config \"x\" {\n  pools = [\"worker\"]\n  file \"/etc/a\" { content_base64 = \"not base64!\" }\n}",
			"Invalid content_base64", "content_base64 is not standard base64", 3, 36},
		{"binary through file()", "config \"x\" {\n  pools = [\"worker\"]\n  file \"/etc/a\" { content = file(\"bin\") }\n}",
			"Error in function call", `give its bytes as content_base64 = filebase64("bin")`, 3, 29},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "base.hcl", filesBase)
			write(t, dir, "bin", "\xff\x00")
			write(t, dir, "main.hcl", tt.src)
			_, diags := Load(dir, Options{Schemas: testSchemas})
			for _, d := range diags {
				if d.Summary != tt.summary {
					continue
				}
				if !strings.Contains(d.Detail, tt.detail) {
					t.Errorf("detail %q, want %q in it", d.Detail, tt.detail)
				}
				if s := d.Subject; s == nil || filepath.Base(s.Filename) != "main.hcl" || s.Start.Line != tt.line || s.Start.Column != tt.col {
					t.Errorf("at %v, want main.hcl:%d,%d", s, tt.line, tt.col)
				}
				return
			}
			t.Fatalf("no %q diagnostic: %v", tt.summary, diags)
		})
	}
}

// Paths: /etc, /var, /usr/local and /opt below their tops are managed, in blocks and in
// Butane alike; the rest of /usr is refused saying why, other trees saying which are.
func TestManagedPaths(t *testing.T) {
	for _, p := range []string{"/etc/a", "/var/lib/x", "/usr/local/bin/kubelet-wrapper", "/opt/libexec/tool", "/usr/local/etc/x"} {
		t.Run(p, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "base.hcl", filesBase)
			write(t, dir, "main.hcl", "config \"x\" {\n  pools = [\"worker\"]\n  file \""+p+"\" { content = \"x\" }\n"+
				"  butane = \"variant: fcos\\nversion: 1.5.0\\nstorage:\\n  files:\\n    - path: "+p+".bu\\n      contents:\\n        inline: \\\"[x]\\\"\\n\"\n}\n")
			res, diags := Load(dir, Options{Schemas: testSchemas})
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if fs := res.Desired.Configs[0].Files; len(fs) != 2 || fs[1].Path != p+".bu" || string(fs[1].Contents) != "[x]" {
				t.Errorf("files %+v", fs)
			}
		})
	}
	usr := "/usr is the OS image's own: read-only on Fedora CoreOS and RHCOS"
	other := "outside /etc, /var, /usr/local and /opt: mcp manages configuration, state and local software, not the OS"
	top := "a managed tree's top directory, which the OS makes: files go below it"
	for p, why := range map[string]string{"/usr/bin/x": usr, "/usr/lib/systemd/system/a.service": usr, "/usr/localx/y": usr,
		"/usr": usr, "/usr/local": top, "/opt": top, "/etc": top, "/srv/x": other, "/home/core/x": other, "/optx/y": other} {
		t.Run(p, func(t *testing.T) {
			d := diagAt(t, filesBase, "config \"x\" {\n  pools = [\"worker\"]\n  file \""+p+"\" { content = \"x\" }\n}",
				"Path outside the managed trees", 3, 8)
			if !strings.Contains(d.Detail, why) || !strings.Contains(d.Detail, `"`+p+`"`) {
				t.Errorf("detail %q, want the path and %q", d.Detail, why)
			}
		})
	}
}

// Butane's contents keep their bytes: inline text with CRLF and brackets, and a base64
// data URL of bytes that are not text.
func TestButaneContentsKeepTheirBytes(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "base.hcl", filesBase)
	write(t, dir, "main.hcl", "config \"x\" {\n  pools = [\"worker\"]\n  butane = file(\"n.bu\")\n}\n")
	write(t, dir, "n.bu", "variant: fcos\nversion: 1.5.0\nstorage:\n  files:\n"+
		"    - path: /etc/NetworkManager/conf.d/a.conf\n      contents:\n        inline: \"[main]\\r\\ndns=none\\x7f\"\n"+
		"    - path: /opt/bin/b\n      contents:\n        source: \"data:;base64,AP9/Ww==\"\n")
	res, diags := Load(dir, Options{Schemas: testSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	fs := res.Desired.Configs[0].Files
	if len(fs) != 2 || string(fs[0].Contents) != "[main]\r\ndns=none\x7f" || !bytes.Equal(fs[1].Contents, []byte{0, 0xff, 0x7f, '['}) {
		t.Errorf("files %+v", fs)
	}
}
