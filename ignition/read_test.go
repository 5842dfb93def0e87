package ignition

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/model"
)

// TestReadBack: a config of an older spec (3.3) is read as Ignition reads it at boot, with
// Ignition's defaults; a served config reads back as the rendered config it was made from.
func TestReadBack(t *testing.T) {
	c, err := Read([]byte(`{"ignition":{"version":"3.3.0"},
	  "kernelArguments":{"shouldExist":["a","b"],"shouldNotExist":["c"]},
	  "storage":{"directories":[{"path":"/var/d"}],
	    "files":[{"path":"/etc/f","contents":{"source":"data:,x"},"append":[{"source":"data:,y"}],"user":{"id":7},"group":{"name":"g"}}],
	    "links":[{"path":"/etc/l","target":"/etc/f"}]},
	  "systemd":{"units":[{"name":"u.service","dropins":[{"name":"a.conf"},{"name":"b.conf","contents":"[Unit]\n"}]}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Directories[0]; d.Mode != 0o755 || d.Overwrite {
		t.Errorf("directory %+v", d)
	}
	f := c.Files[0]
	x, _ := f.Contents.Data()
	y, _ := f.Append[0].Data()
	if f.Mode != 0o644 || string(x) != "x" || string(y) != "y" || *f.Owner.UID != 7 || f.Owner.Group != "g" {
		t.Errorf("file %+v: %q %q", f, x, y)
	}
	if l := c.Links[0]; l.Target != "/etc/f" || l.Hard {
		t.Errorf("link %+v", l)
	}
	if u := c.Units[0]; u.Contents != nil || !slices.Equal(u.Dropins, []model.Dropin{{Name: "b.conf", Contents: "[Unit]\n"}}) {
		t.Errorf("unit %+v", u)
	}
	if !slices.Equal(c.KernelArgs, []string{"a", "b"}) {
		t.Errorf("kernel arguments %q", c.KernelArgs)
	}

	r := named(t, &model.Rendered{Pool: "worker", KernelArgs: []string{"nosmt"},
		Files: []model.File{{Entry: model.Entry{Path: "/etc/motd", User: "core"}, Mode: 0o600, Contents: []byte("hi\n")}}})
	sv, err := Serve(r, ServeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err = Read(sv.ByMinor[Newest().Minor])
	if err != nil {
		t.Fatal(err)
	}
	motd, _ := c.Files[0].Contents.Data()
	if f := c.Files[0]; f.Path != "/etc/motd" || f.Mode != fs.FileMode(0o600) || string(motd) != "hi\n" || f.Owner.User != "core" ||
		!slices.Equal(c.KernelArgs, r.KernelArgs) {
		t.Errorf("served config read back: %+v, %q", c, motd)
	}
}

// TestReadRefuses: what Ignition's parser refuses, and what Read does not give back, are
// errors naming them; resources not inline, unverified or not gzip are refused when read.
func TestReadRefuses(t *testing.T) {
	for cfg, want := range map[string]string{
		`{"ignition":{"version":"3.7.0-experimental"}}`:                                          "is not one mcp knows",
		`{"ignition":{"version":"3.4.0","config":{"merge":[{"source":"http://x/c"}]}}}`:          "ignition.config",
		`{"ignition":{"version":"3.4.0"},"passwd":{"users":[{"name":"a"}]}}`:                     "passwd",
		`{"ignition":{"version":"3.4.0"},"storage":{"luks":[{"name":"l","device":"/dev/vdb"}]}}`: "luks",
		`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"etc/x"}]}}`:                "absolute",
	} {
		_, err := Read([]byte(cfg))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", cfg, err, want)
		}
		var u *UnsupportedError
		if errors.As(err, &u) != (want != "is not one mcp knows" && want != "absolute") {
			t.Errorf("%s: %v is not an UnsupportedError as it should be", cfg, err)
		}
	}
	var ni *NotInlineError
	if _, err := (Resource{source: "s3://b/k"}).Data(); !errors.As(err, &ni) || ni.Scheme != "s3" {
		t.Errorf("an s3 source: %v", err)
	}
	for res, want := range map[Resource]string{
		{source: "data:,x", hash: "sha512-00"}:    "verification",
		{source: "data:,x", hash: "md5-00"}:       "want sha512",
		{source: "data:,x", compression: "bzip2"}: "gzip only",
		{source: "data:,x", compression: "gzip"}:  "gzip",
	} {
		if _, err := res.Data(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", res, err, want)
		}
	}
}
