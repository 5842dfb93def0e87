package local

import (
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestIgnite: a served config's files stage and kargs stage on a fresh root, as a before/
// after tree: directories, files (inline, gzip with a verified hash, appended), links,
// units, drop-ins, masks, presets; the kernel arguments it leaves.
func TestIgnite(t *testing.T) {
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write([]byte("unzipped\n"))
	w.Close()
	sum := sha512.Sum512([]byte("unzipped\n"))
	cfg := fmt.Sprintf(`{"ignition":{"version":"3.4.0"},
	  "kernelArguments":{"shouldExist":["nosmt","quiet"],"shouldNotExist":["debug"]},
	  "storage":{
	    "directories":[{"path":"/var/lib/app","mode":488}],
	    "files":[
	      {"path":"/etc/a.conf","mode":384,"overwrite":true,"contents":{"source":"data:,a%%20b%%0A"}},
	      {"path":"/etc/z","contents":{"source":"data:;base64,%s","compression":"gzip","verification":{"hash":"sha512-%s"}}},
	      {"path":"/etc/passwd","append":[{"source":"data:,app:x:990:990::/:/sbin/nologin%%0A"}]},
	      {"path":"/etc/owned","contents":{"source":"data:,o"},"user":{"name":"app"},"group":{"id":1000}}],
	    "links":[{"path":"/etc/l","target":"/etc/a.conf"},{"path":"/etc/h","target":"/etc/z","hard":true}]},
	  "systemd":{"units":[
	    {"name":"app.service","enabled":true,"contents":"[Service]\n[Install]\nWantedBy=multi-user.target\n","dropins":[{"name":"10.conf","contents":"[Service]\nA=1\n"}]},
	    {"name":"old.service","enabled":false},
	    {"name":"bad.service","mask":true}]}}`,
		base64.StdEncoding.EncodeToString(z.Bytes()), hex.EncodeToString(sum[:]))
	root := t.TempDir()
	if err := writeRoot(root); err != nil {
		t.Fatal(err)
	}
	kargs, err := ignite(root, []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kargs, []string{"nosmt", "quiet"}) {
		t.Errorf("kernel arguments %q", kargs)
	}
	for p, want := range map[string]struct {
		content string
		mode    fs.FileMode
	}{
		"etc/a.conf":                     {"a b\n", 0o600},
		"etc/z":                          {"unzipped\n", 0o644},
		"etc/h":                          {"unzipped\n", 0o644},
		"etc/passwd":                     {"root:x:0:0:root:/root:/bin/sh\ncore:x:1000:1000:CoreOS Admin:/var/home/core:/bin/bash\napp:x:990:990::/:/sbin/nologin\n", 0o644},
		"etc/systemd/system/app.service": {"[Service]\n[Install]\nWantedBy=multi-user.target\n", 0o644},
		"etc/systemd/system/app.service.d/10.conf":     {"[Service]\nA=1\n", 0o644},
		"etc/systemd/system-preset/20-ignition.preset": {"enable app.service\ndisable old.service\n", 0o644},
	} {
		b, err := os.ReadFile(filepath.Join(root, p))
		st, _ := os.Stat(filepath.Join(root, p))
		if err != nil || string(b) != want.content || st.Mode().Perm() != want.mode {
			t.Errorf("%s: %q %v, want %q mode %o", p, b, err, want.content, want.mode)
		}
	}
	for p, target := range map[string]string{"etc/l": "/etc/a.conf", "etc/systemd/system/bad.service": "/dev/null"} {
		if l, err := os.Readlink(filepath.Join(root, p)); err != nil || l != target {
			t.Errorf("%s: link to %q, %v; want %q", p, l, err, target)
		}
	}
	if st, err := os.Stat(filepath.Join(root, "var/lib/app")); err != nil || !st.IsDir() || st.Mode().Perm() != 0o750 {
		t.Errorf("var/lib/app: %v %v", st, err)
	}
	if os.Geteuid() == 0 { // owners are set only as root
		st, _ := os.Stat(filepath.Join(root, "etc/owned"))
		if sys := st.Sys().(*syscall.Stat_t); sys.Uid != 990 || sys.Gid != 1000 {
			t.Errorf("etc/owned: %d:%d, want 990:1000 (app, by name in the root's passwd; group by id)", sys.Uid, sys.Gid)
		}
	}
}

// TestIgniteRefuses: what Ignition would fail on, and what a simulated first boot cannot
// do, is an error naming it.
func TestIgniteRefuses(t *testing.T) {
	for cfg, want := range map[string]string{
		`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/passwd","contents":{"source":"data:,x"}}]}}`:                                "file /etc/passwd: it exists and overwrite is false",
		`{"ignition":{"version":"3.4.0"},"storage":{"directories":[{"path":"/etc/passwd"}]}}`:                                                          "directory /etc/passwd: a non-directory is in the way and overwrite is false",
		`{"ignition":{"version":"3.4.0"},"storage":{"links":[{"path":"/etc/passwd","target":"x"}]}}`:                                                   "link /etc/passwd: it exists and overwrite is false",
		`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/x","contents":{"source":"data:,x","verification":{"hash":"sha512-00"}}}]}}`: "verification",
		`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/x","contents":{"source":"s3://b/k"}}]}}`:                                    "inline data: sources only",
		`{"ignition":{"version":"3.4.0","config":{"merge":[{"source":"http://x/c"}]}}}`:                                                                "ignition.config",
		`{"ignition":{"version":"3.4.0"},"storage":{"disks":[{"device":"/dev/vdb","wipeTable":true}]}}`:                                                "storage disks",
		`{"ignition":{"version":"3.7.0-experimental"}}`:                                                                                                "not one Ignition takes",
	} {
		root := t.TempDir()
		writeRoot(root)
		if _, err := ignite(root, []byte(cfg)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", cfg, err, want)
		}
	}
}
