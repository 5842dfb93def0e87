package acceptance

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_6/types"
	"github.com/vincent-petithory/dataurl"

	"github.com/mcpfleet/mcp/model"
)

// Judging a root and a served config by what a corpus entry declares (corpusButane).

// firstBootPath: mcp leaves these trees to first boot (config FirstBootOnly).
func firstBootPath(p string) bool {
	return slices.ContainsFunc([]string{"/home/", "/root/", "/srv/", "/mnt/"}, func(t string) bool { return strings.HasPrefix(p, t) })
}

// unknownBytes: mcp leaves a file to first boot when it cannot know its bytes when it
// plans (config/butane unknownBytes): from another host, appended to. (Compressed inline
// contents are managed, decompressed.)
func unknownBytes(f types.File) bool {
	return remote(f.Contents) || len(f.Append) > 0
}

func remote(r types.Resource) bool { return r.Source != nil && !strings.HasPrefix(*r.Source, "data:") }

// tally counts what the corpus test compared, by kind.
type tally map[string]int

// judgeEntry compares root with what e declares; ignition says root is Ignition's, which
// also has what mcp leaves to first boot.
func judgeEntry(t *testing.T, e *buEntry, what, root string, ignition bool, n tally) {
	t.Helper()
	bad := func(format string, args ...any) { t.Errorf("%s: %s: %s", e.name, what, fmt.Sprintf(format, args...)) }
	s := &e.cfg.Storage
	for _, f := range s.Files {
		if (firstBootPath(f.Path) || unknownBytes(f)) && !ignition {
			continue
		}
		want, err := contents(f.Contents)
		if err != nil {
			t.Fatalf("%s: %s: %v", e.name, f.Path, err)
		}
		for _, a := range f.Append {
			more, err := contents(a)
			if err != nil {
				t.Fatalf("%s: %s: %v", e.name, f.Path, err)
			}
			want = append(want, more...)
		}
		got, err := os.ReadFile(filepath.Join(root, f.Path))
		if err != nil || !bytes.Equal(got, want) {
			bad("file %s: %d bytes (%v), want %d", f.Path, len(got), err, len(want))
			continue
		}
		checkMode(bad, root, f.Path, f.Mode, 0o644)
		n["files"]++
	}
	for _, d := range s.Directories {
		if firstBootPath(d.Path) && !ignition {
			continue
		}
		if st, err := os.Stat(filepath.Join(root, d.Path)); err != nil || !st.IsDir() {
			bad("directory %s: %v", d.Path, err)
			continue
		}
		checkMode(bad, root, d.Path, d.Mode, 0o755)
		n["directories"]++
	}
	for _, l := range s.Links {
		if firstBootPath(l.Path) && !ignition {
			continue
		}
		p := filepath.Join(root, l.Path)
		if l.Hard != nil && *l.Hard {
			a, err1 := os.Stat(p)
			b, err2 := os.Stat(filepath.Join(root, *l.Target))
			if err1 != nil || err2 != nil || !os.SameFile(a, b) {
				bad("hard link %s is not %s: %v %v", l.Path, *l.Target, err1, err2)
			}
		} else if got, err := os.Readlink(p); err != nil || got != *l.Target {
			bad("link %s → %q (%v), want → %q", l.Path, got, err, *l.Target)
		}
		n["links"]++
	}
	judgeUnits(bad, root, e.cfg.Systemd.Units)
	n["units"] += len(e.cfg.Systemd.Units)
	for _, u := range e.cfg.Passwd.Users {
		if u.Name == "core" && len(u.SSHAuthorizedKeys) > 0 {
			got, err := os.ReadFile(filepath.Join(root, "home/core/.ssh/authorized_keys.d/ignition"))
			var want []string
			for _, k := range u.SSHAuthorizedKeys {
				want = append(want, string(k))
			}
			if err != nil || !slices.Equal(strings.Fields(string(got)), strings.Fields(strings.Join(want, "\n"))) {
				bad("the core user's keys: %v %q, want %q", err, got, want)
			}
			n["core keys"]++
		} else if ignition {
			if passwd, _ := os.ReadFile(filepath.Join(root, "etc/passwd")); !strings.Contains(string(passwd), "\n"+u.Name+":") {
				bad("user %s is not in etc/passwd", u.Name)
			}
			n["users"]++
		}
	}
	for _, g := range e.cfg.Passwd.Groups {
		if !ignition {
			continue
		}
		if group, _ := os.ReadFile(filepath.Join(root, "etc/group")); !strings.Contains(string(group), "\n"+g.Name+":") {
			bad("group %s is not in etc/group", g.Name)
		}
		n["groups"]++
	}
}

func judgeUnits(bad func(string, ...any), root string, units []types.Unit) {
	same := func(p, want string) {
		if got, err := os.ReadFile(filepath.Join(root, p)); err != nil || string(got) != want {
			bad("%s: %v, %d bytes, want %d", p, err, len(got), len(want))
		}
	}
	for _, u := range units {
		if u.Contents != nil && (u.Mask == nil || !*u.Mask) {
			same("etc/systemd/system/"+u.Name, *u.Contents)
		}
		for _, d := range u.Dropins {
			if d.Contents != nil {
				same("etc/systemd/system/"+u.Name+".d/"+d.Name, *d.Contents)
			}
		}
		if u.Mask != nil && *u.Mask {
			if l, err := os.Readlink(filepath.Join(root, "etc/systemd/system", u.Name)); err != nil || l != "/dev/null" {
				bad("unit %s is not masked: %q %v", u.Name, l, err)
			}
		}
	}
}

func checkMode(bad func(string, ...any), root, p string, mode *int, def int) {
	want := def
	if mode != nil {
		want = *mode
	}
	st, err := os.Stat(filepath.Join(root, p))
	if err != nil {
		return
	}
	if got := model.UnixMode(st.Mode()); got != want {
		bad("%s: mode %04o, want %04o", p, got, want)
	}
}

// contents is a file's bytes as Ignition writes them: a data URL, gzip when it says so.
func contents(r types.Resource) ([]byte, error) {
	if r.Source == nil {
		return nil, nil
	}
	d, err := dataurl.DecodeString(*r.Source)
	if err != nil {
		return nil, err
	}
	if r.Compression != nil && *r.Compression == "gzip" {
		z, err := gzip.NewReader(bytes.NewReader(d.Data))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(z)
	}
	return d.Data, nil
}

// judgeServed: what mcp serves at first boot only is in the pool's served config as the
// entry gives it.
func judgeServed(t *testing.T, e *buEntry, served types.Config) {
	t.Helper()
	in := func(what string, want, got any) {
		w, g := reflect.ValueOf(want), reflect.ValueOf(got)
		for i := range w.Len() {
			found := false
			for j := range g.Len() {
				if canon(w.Index(i).Interface()) == canon(g.Index(j).Interface()) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: the served config lacks %s %d: %+v", e.name, what, i, w.Index(i).Interface())
			}
		}
	}
	s, g := &e.cfg.Storage, &served.Storage
	in("storage.disks", s.Disks, g.Disks)
	in("storage.raid", s.Raid, g.Raid)
	in("storage.filesystems", s.Filesystems, g.Filesystems)
	in("storage.luks", s.Luks, g.Luks)
	in("ignition.config.merge", e.cfg.Ignition.Config.Merge, served.Ignition.Config.Merge)
	in("ignition.security.tls.certificateAuthorities", e.cfg.Ignition.Security.TLS.CertificateAuthorities, served.Ignition.Security.TLS.CertificateAuthorities)
	if r := e.cfg.Ignition.Config.Replace; r.Source != nil && !reflect.DeepEqual(r, served.Ignition.Config.Replace) {
		t.Errorf("%s: the served config's ignition.config.replace is %+v, want %+v", e.name, served.Ignition.Config.Replace, r)
	}
	if p := e.cfg.Ignition.Proxy; p.HTTPSProxy != nil && !reflect.DeepEqual(p, served.Ignition.Proxy) {
		t.Errorf("%s: the served config's ignition.proxy is %+v, want %+v", e.name, served.Ignition.Proxy, p)
	}
	for _, f := range s.Files {
		if !unknownBytes(f) {
			continue
		}
		if i := slices.IndexFunc(g.Files, func(h types.File) bool { return h.Path == f.Path }); i < 0 || !sameBytesSource(f, g.Files[i]) {
			t.Errorf("%s: the served config lacks file %s as the entry gives it", e.name, f.Path)
		}
	}
	var users []string
	for _, u := range served.Passwd.Users {
		users = append(users, u.Name)
	}
	for _, u := range e.cfg.Passwd.Users {
		if u.Name != "core" && !slices.Contains(users, u.Name) {
			t.Errorf("%s: the served config lacks user %s (has %v)", e.name, u.Name, users)
		}
	}
}

// canon is v's JSON as Ignition reads it: what is unset or empty (nil, "", {}, []) left
// out, since Ignition reads an unset field and an empty one alike (a compression of ""
// is none).
func canon(v any) string {
	b, _ := json.Marshal(v)
	var m any
	json.Unmarshal(b, &m)
	var drop func(any) any
	drop = func(x any) any {
		switch y := x.(type) {
		case map[string]any:
			for k, e := range y {
				if e = drop(e); e == nil {
					delete(y, k)
				} else {
					y[k] = e
				}
			}
			if len(y) == 0 {
				return nil
			}
		case []any:
			for i := range y {
				y[i] = drop(y[i])
			}
			if len(y) == 0 {
				return nil
			}
		case string:
			if y == "" {
				return nil
			}
		}
		return x
	}
	b, _ = json.Marshal(drop(m))
	return string(b)
}

// sameBytesSource reports whether two files take their bytes from the same places, in the
// same way: sources, compression, hash, appended fragments.
func sameBytesSource(a, b types.File) bool {
	key := func(f types.File) string {
		return strings.Join(resourceKeys(append([]types.Resource{f.Contents}, f.Append...)), ";")
	}
	return key(a) == key(b)
}

// resourceKeys are resources as Ignition reads them: source, compression and hash (an
// unset compression and an empty one are the same: none).
func resourceKeys(rs []types.Resource) []string {
	var k []string
	for _, r := range rs {
		k = append(k, fmt.Sprintf("%s|%s|%s", deref(r.Source), deref(r.Compression), deref(r.Verification.Hash)))
	}
	return k
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
