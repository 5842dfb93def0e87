package standalone

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec"
)

// ignitionWrote writes into root what Ignition leaves from the served config of r: r's
// files and units, and the first-boot record.
func ignitionWrote(t *testing.T, root string, r *model.Rendered) {
	t.Helper()
	write := func(rel string, b []byte, mode os.FileMode) {
		full := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, mode); err != nil {
			t.Fatal(err)
		}
	}
	write("etc/passwd", []byte("root:x:0:0::/root:/bin/sh\n"), 0o644)
	write(nodeexec.FirstBootPath, content.FirstBootOf(r).Encode(), content.FirstBootMode)
	for _, f := range r.Files {
		write(strings.TrimPrefix(f.Path, "/"), f.Contents, os.FileMode(f.Mode))
	}
	for _, u := range r.Units {
		write(strings.TrimPrefix(nodeexec.UnitDir, "/")+"/"+u.Name, []byte(u.Contents), 0o644)
	}
}

// TestStandaloneFirstBoot: `mcp agent` without a cluster, started on a node Ignition just
// wrote from an older boot image, fetches the config the record names from the server,
// pivots, reboots, and after the reboot records that config as current.json and reports
// Done; its next pass has nothing to do.
func TestStandaloneFirstBoot(t *testing.T) {
	cfg := &model.Rendered{Name: "rendered-worker-new", Pool: "worker", OSImage: "quay.io/os:2",
		Files: []model.File{{Entry: model.Entry{Path: "/etc/chrony.conf"}, Mode: 0o640, Contents: []byte("server x\n")}},
		Units: []model.Unit{{Name: "app.service", Contents: "[Service]\nExecStart=/bin/app\n"}}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/rendered/"+cfg.Name {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(cfg)
	}))
	defer srv.Close()
	root := t.TempDir()
	ignitionWrote(t, root, cfg)
	bootID := filepath.Join(t.TempDir(), "boot_id")
	os.WriteFile(bootID, []byte("boot-1\n"), 0o644)
	host := &nodeexec.RecordingHost{Booted: "quay.io/os:1", Machine: t.TempDir(), BootID: func() (string, error) { return nodeexec.ReadBootID(bootID) },
		OnCall: func(c string) error {
			if c == "reboot" {
				os.WriteFile(bootID, []byte("boot-2\n"), 0o644) // the machine comes back
			}
			return nil
		}}
	s := New(root, srv.URL, host)
	s.BootIDPath, s.Agent.RebootWait = bootID, time.Second
	st, err := s.Reconcile(context.Background())
	if err != nil || st.State != model.StateDone || st.Current != cfg.Name {
		t.Fatalf("first boot: %+v, %v", st, err)
	}
	if d := cmp.Diff([]string{"pivot quay.io/os:2", "reboot"}, host.Recorded()); d != "" {
		t.Errorf("host calls (-want +got):\n%s", d)
	}
	var cur model.Rendered
	b, err := os.ReadFile(filepath.Join(root, CurrentPath))
	if err != nil || json.Unmarshal(b, &cur) != nil || cur.Name != cfg.Name {
		t.Errorf("current.json: %v %s", err, b)
	}
	for _, p := range []string{nodeexec.FirstBootPath, nodeexec.PendingPath} {
		if _, err := os.Stat(filepath.Join(root, p)); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", p, err)
		}
	}
	if st, err := s.Reconcile(context.Background()); err != nil || st.State != model.StateDone || len(host.Recorded()) != 2 {
		t.Errorf("the next pass: %+v, %v, calls %v", st, err, host.Recorded())
	}
}

// TestForgedDesiredThroughALinkIsNotFollowed: the forgery on a standalone node —
// var/lib made a link to ../etc/fakelib, where a config wrote a desired naming the infra
// pool's config. The agent does not read its records through the link: Reconcile fails
// naming it, nothing is fetched, the host is not asked for anything, and the root is as
// it was.
func TestForgedDesiredThroughALinkIsNotFollowed(t *testing.T) {
	var fetched []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetched = append(fetched, r.URL.Path)
		http.NotFound(w, r)
	}))
	defer srv.Close()
	root := t.TempDir()
	for p, b := range map[string]string{"etc/fakelib/mcp/desired": "rendered-infra-0\n", "etc/passwd": "root:x:0:0::/root:/bin/sh\n"} {
		os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(root, p), []byte(b), 0o644)
	}
	os.MkdirAll(filepath.Join(root, "var"), 0o755)
	os.Symlink("../etc/fakelib", filepath.Join(root, "var/lib"))
	before := listRoot(t, root)
	host := &nodeexec.RecordingHost{}
	s := New(root, srv.URL, host)
	s.BootIDPath = filepath.Join(t.TempDir(), "boot_id")
	os.WriteFile(s.BootIDPath, []byte("boot-1\n"), 0o644)
	_, err := s.Reconcile(context.Background())
	if err == nil || !strings.Contains(err.Error(), "/var/lib is a link (to ../etc/fakelib)") {
		t.Errorf("reconcile: %v, want an error naming the link", err)
	}
	if len(fetched) > 0 || len(host.Recorded()) > 0 {
		t.Errorf("fetched %v, host calls %v; want none", fetched, host.Recorded())
	}
	if d := cmp.Diff(before, listRoot(t, root)); d != "" {
		t.Errorf("the root changed (-before +after):\n%s", d)
	}
}

// listRoot is every file and link under root with its content or target.
func listRoot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if l, err := os.Readlink(p); err == nil {
			out[p] = "-> " + l
			return nil
		}
		b, _ := os.ReadFile(p)
		out[p] = string(b)
		return nil
	})
	return out
}
