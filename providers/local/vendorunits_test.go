package local

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/internal/unitinstall"
	"github.com/mcpfleet/mcp/nodeexec"
	"github.com/mcpfleet/mcp/testkit/golden"
)

var update = flag.Bool("update", false, "rewrite the quickstart's node roots' units from VendorUnits")

// A new node's root carries the OS's units, each a unit file systemd parses, and enabling
// one links what systemctl links on the OS; a static unit links nothing and is no error.
// (A root held only passwd and group: enabling kdump.service failed, "no unit file".)
func TestNewNodesCarryTheOSUnits(t *testing.T) {
	dir := t.TempDir()
	if err := Init(dir, InitSpec{Pools: []PoolSize{{"worker", 1}}}); err != nil {
		t.Fatal(err)
	}
	root := rootDir(dir, "worker-0")
	for name, body := range VendorUnits() {
		b, err := os.ReadFile(filepath.Join(root, VendorUnitDir, name))
		if err != nil || string(b) != body {
			t.Errorf("%s: %v %q", name, err, b)
		}
		if _, err := unitinstall.Parse(body); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, c := range []struct{ unit, link string }{
		{"kdump.service", "multi-user.target.wants/kdump.service"},
		{"iscsi.service", "remote-fs.target.wants/iscsi.service"},
		{"multipathd.service", "sysinit.target.wants/multipathd.service"},
		{"sshd.socket", "sockets.target.wants/sshd.socket"},
		{"fstrim.timer", "timers.target.wants/fstrim.timer"},
		{"serial-getty@ttyS0.service", "getty.target.wants/serial-getty@ttyS0.service"},
		{"getty@.service", "getty.target.wants/getty@tty1.service"},
		{"NetworkManager.service", "dbus-org.freedesktop.NetworkManager.service"},
		{"systemd-sysctl.service", ""},
	} {
		if err := nodeexec.LinkUnit(root, c.unit, true); err != nil {
			t.Errorf("enable %s: %v", c.unit, err)
			continue
		}
		if c.link == "" {
			continue
		}
		target, err := os.Readlink(filepath.Join(root, "etc/systemd/system", c.link))
		if err != nil || !strings.HasPrefix(target, "/"+VendorUnitDir+"/") {
			t.Errorf("enable %s: link %s → %q, %v", c.unit, c.link, target, err)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "etc/systemd/system")); len(ents) == 0 {
		t.Error("nothing was linked")
	}
}

// The quickstart's nodes are what `mcp fleet init` makes: their roots carry the same
// units (go test ./providers/local -run TestQuickstartRootsCarryTheOSUnits -update
// rewrites them).
func TestQuickstartRootsCarryTheOSUnits(t *testing.T) {
	nodes, err := filepath.Glob("../../examples/quickstart/fleet/nodes/*/root")
	if err != nil || len(nodes) == 0 {
		t.Fatalf("no quickstart nodes: %v", err)
	}
	units := VendorUnits()
	for _, root := range nodes {
		dir := filepath.Join(root, VendorUnitDir)
		if *update {
			os.RemoveAll(dir)
			os.MkdirAll(dir, 0o755)
		}
		for name, body := range units {
			golden.Check(t, filepath.Join(dir, name), body, *update)
		}
		ents, _ := os.ReadDir(dir)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		for _, n := range names {
			if _, ok := units[n]; !ok {
				t.Errorf("%s: %s is no unit of the OS's (VendorUnits)", dir, n)
			}
		}
		if !slices.Contains(names, "kdump.service") {
			t.Errorf("%s lacks kdump.service", dir)
		}
	}
}
