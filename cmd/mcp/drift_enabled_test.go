package main

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// debugUnit is a disabled unit added to the quickstart's workers: a link made for it by
// hand is drift.
const debugUnit = `
config "65-debug" {
  pools = ["worker"]

  unit "debug.service" {
    enabled   = false
    contents  = "[Service]\nExecStart=/usr/bin/sleep infinity\n\n[Install]\nWantedBy=multi-user.target\n"
    on_change = ["none"]
  }
}
`

// TestDriftOfUnitEnablement is issue 13's last item on a local fleet: whether a unit is
// enabled is its links under /etc/systemd/system. The wants-link of an enabled unit removed
// by hand on one node, and a link made by hand for a disabled unit on another, are drift
// that mcp drift names (exit 2 with -detailed-exitcode), that plan notes and restores, and
// that one apply puts back, after which mcp drift exits 0.
func TestDriftOfUnitEnablement(t *testing.T) {
	dir := quickstart(t)
	f, err := os.OpenFile(filepath.Join(dir, "configs.hcl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(debugUnit)
	f.Close()
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("first apply: exit %d\n%s%s", code, out, errOut)
	}
	link := func(node, unit string) string {
		return filepath.Join(dir, "fleet/nodes", node, "root/etc/systemd/system/multi-user.target.wants", unit)
	}
	// The apply enabled node-exporter on every worker as systemctl enable would, and
	// linked nothing for the disabled unit.
	for _, n := range []string{"worker-0", "worker-1", "worker-2", "worker-3"} {
		if l, err := os.Readlink(link(n, "node-exporter.service")); err != nil || l != "/etc/systemd/system/node-exporter.service" {
			t.Fatalf("%s: node-exporter.service's wants-link after apply: %q %v", n, l, err)
		}
		if _, err := os.Lstat(link(n, "debug.service")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s: the disabled debug.service is linked: %v", n, err)
		}
	}
	if code, out, errOut := mcp(t, dir, "drift", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Fatalf("drift right after apply: exit %d, want 0\n%s%s", code, out, errOut)
	}

	if err := os.Remove(link("worker-1", "node-exporter.service")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/systemd/system/debug.service", link("worker-2", "debug.service")); err != nil {
		t.Fatal(err)
	}
	missing := "drift: /etc/systemd/system/node-exporter.service: enabled (expected enabled, found disabled (no multi-user.target.wants/node-exporter.service))"
	extra := "drift: /etc/systemd/system/debug.service: enabled (expected disabled, found enabled (multi-user.target.wants/debug.service))"
	code, out, errOut := mcp(t, dir, "drift", "-detailed-exitcode", "-no-color")
	if code != 2 {
		t.Fatalf("drift: exit %d, want 2\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"node.worker-1 (pool worker", missing, "node.worker-2 (pool worker", extra,
		"Drift: 2 of 6 nodes differ from the config they run."} {
		if !strings.Contains(out, want) {
			t.Errorf("drift output lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = mcp(t, dir, "drift", "-json")
	var dj struct {
		FormatVersion string `json:"format_version"`
		Nodes         []struct {
			Name  string
			Drift []struct{ Path, Kind, Expected, Found string }
		}
	}
	if err := json.Unmarshal([]byte(out), &dj); err != nil || code != 0 {
		t.Fatalf("drift -json: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	got := map[string]string{}
	for _, n := range dj.Nodes {
		for _, d := range n.Drift {
			got[n.Name] += d.Path + " " + d.Kind + " " + d.Expected + "; "
		}
	}
	want := map[string]string{"worker-1": "/etc/systemd/system/node-exporter.service enabled enabled; ",
		"worker-2": "/etc/systemd/system/debug.service enabled disabled; "}
	if dj.FormatVersion != "1.0" || len(got) != 2 || got["worker-1"] != want["worker-1"] || got["worker-2"] != want["worker-2"] {
		t.Errorf("drift -json: version %s, drift %q, want %q", dj.FormatVersion, got, want)
	}

	// Plan notes it apart and restores it: a unit's write, with the unit's own policy.
	code, out, errOut = mcp(t, dir, "plan", "-detailed-exitcode=config", "-no-color")
	if code != 0 || !strings.Contains(out, "Note: 2 nodes have drifted") || !strings.Contains(out, missing) ||
		!strings.Contains(out, extra) || !strings.Contains(out, "restored by this plan") {
		t.Fatalf("plan -detailed-exitcode=config: exit %d, want 0 with both drifts noted and restored\n%s%s", code, out, errOut)
	}
	code, out, errOut = mcp(t, dir, "apply", "-auto-approve", "-no-color")
	if code != 0 || !strings.Contains(out, "node.worker-1: write node-exporter.service done") ||
		!strings.Contains(out, "node.worker-2: write debug.service done") {
		t.Fatalf("apply restoring drift: exit %d\n%s%s", code, out, errOut)
	}
	if l, err := os.Readlink(link("worker-1", "node-exporter.service")); err != nil || l != "/etc/systemd/system/node-exporter.service" {
		t.Errorf("worker-1: node-exporter.service's wants-link after the restore: %q %v", l, err)
	}
	if _, err := os.Lstat(link("worker-2", "debug.service")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("worker-2: debug.service's link after the restore: %v", err)
	}
	// Each restore asked the host once (the first apply once more): the links that agreed
	// were left alone.
	for node, calls := range map[string]map[string]int{
		"worker-1": {`"args":["node-exporter.service"],"op":"enable"`: 2, `"args":["debug.service"],"op":"disable"`: 1},
		"worker-2": {`"args":["node-exporter.service"],"op":"enable"`: 1, `"args":["debug.service"],"op":"disable"`: 2},
	} {
		b, _ := os.ReadFile(filepath.Join(dir, "fleet/nodes", node, "host.log"))
		for call, n := range calls {
			if got := strings.Count(string(b), call); got != n {
				t.Errorf("%s: host.log has %s %d times, want %d:\n%s", node, call, got, n, b)
			}
		}
	}
	if code, out, errOut := mcp(t, dir, "drift", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Fatalf("drift after apply: exit %d, want 0\n%s%s", code, out, errOut)
	}
}
