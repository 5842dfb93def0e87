package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/bootsrv"
	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec"
	"github.com/mcpfleet/mcp/planner"
)

// poolConfig renders pool worker (OS image img, a file, an enabled unit, a masked one and
// kernel arguments) through the real planner and returns its rendered config and the bytes
// the boot server serves a booting Ignition for it.
func poolConfig(t *testing.T, img string) (*model.Rendered, []byte) {
	t.Helper()
	yes := true
	d := &model.Desired{Pools: []model.Pool{{Name: "worker", OSImage: img, KernelArgs: []string{"nosmt"}}},
		Configs: []model.Config{{Name: "10-x", Pools: []string{"worker"},
			Files: []model.File{{Entry: model.Entry{Path: "/etc/chrony.conf"}, Mode: 0o640, Contents: []byte("server x\n")}},
			Units: []model.Unit{{Name: "app.service", Enabled: &yes, Contents: "[Service]\nExecStart=/bin/app\n",
				Dropins: []model.Dropin{{Name: "10-env.conf", Contents: "[Service]\nEnvironment=A=1\n"}}},
				{Name: "bad.service", Mask: true}}}}}
	out, diags := planner.Render(d, ignition.Renderer{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	r := out["worker"]
	snap, err := bootsrv.Build(1, map[string]string{"worker": r.Name}, map[string]*model.Rendered{r.Name: r})
	if err != nil {
		t.Fatal(err)
	}
	ign, err := snap.PoolConfig("worker", bootsrv.IgnitionAccept)
	if err != nil {
		t.Fatal(err)
	}
	return r, ign
}

func fetchFrom(rs ...*model.Rendered) nodeexec.Fetch {
	return func(_ context.Context, name string) (*model.Rendered, error) {
		for _, r := range rs {
			if r.Name == name {
				return r, nil
			}
		}
		return nil, fmt.Errorf("no rendered config %s", name)
	}
}

func addSpec(name, bootImage string, ign []byte) AddSpec {
	return AddSpec{Name: name, Pool: "worker", Labels: map[string]string{"node-role.kubernetes.io/worker": ""},
		Zone: "b", BootImage: bootImage, Ignition: ign}
}

// A machine added from an older boot image boots the served config (files, units, masks,
// presets, kernel arguments), pivots at its first boot, reboots once, joins and ends Done
// on the pool's config and OS image; one added from the pool's image does neither.
func TestAddBootsAndPivots(t *testing.T) {
	p, dir := newFleet(t, 1, Options{})
	r, ign := poolConfig(t, "quay.io/os:2")
	res, err := p.Add(context.Background(), addSpec("new-0", "quay.io/os:1", ign), fetchFrom(r))
	if err != nil {
		t.Fatal(err)
	}
	n := res.Node
	if res.Continued || n.CurrentConfig != r.Name || n.DesiredConfig != r.Name || n.State != model.StateDone || !n.Ready ||
		n.OSImage != "quay.io/os:2" || n.BootImage != "quay.io/os:1" || !slices.Equal(n.KernelArgs, []string{"nosmt"}) ||
		n.Zone != "b" || n.Labels["node-role.kubernetes.io/worker"] != "" || n.Labels["kubernetes.io/hostname"] != "new-0" {
		t.Errorf("node after its first boot: %+v", n)
	}
	evs := events(t, dir, "new-0")
	if got := kinds(evs); got != "firstboot working pivot reboot ready done" {
		t.Errorf("events %q", got)
	}
	if evs[0].OSImage != "quay.io/os:1" || evs[0].DesiredConfig != r.Name || evs[2].OSImage != "quay.io/os:2" {
		t.Errorf("firstboot %+v, pivot %+v", evs[0], evs[2])
	}
	root := rootDir(dir, "new-0")
	if drift, err := (&nodeexec.Executor{Root: root}).Verify(r); err != nil || len(drift) != 0 {
		t.Errorf("the root against the pool's config: %v %v", drift, err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "etc/systemd/system-preset/20-ignition.preset")); err != nil || string(b) != "enable app.service\n" {
		t.Errorf("preset: %q %v", b, err)
	}
	for _, p := range []string{nodeexec.FirstBootPath, nodeexec.PendingPath} {
		if _, err := os.Stat(filepath.Join(root, p)); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", p, err)
		}
	}
	if st, _ := os.Stat(filepath.Join(root, "etc/chrony.conf")); st == nil || st.Mode().Perm() != 0o640 {
		t.Errorf("chrony.conf: %v", st)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".add-*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}

	res, err = p.Add(context.Background(), addSpec("new-1", "quay.io/os:2", ign), fetchFrom(r))
	if err != nil || res.Node.State != model.StateDone || res.Node.OSImage != "quay.io/os:2" || !res.Node.Ready {
		t.Fatalf("added on the pool's image: %+v, %v", res, err)
	}
	if got := kinds(events(t, dir, "new-1")); got != "firstboot working done ready" {
		t.Errorf("events on the pool's image %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(nodeDir(dir, "new-1"), "host.log")); strings.Contains(string(b), "pivot") || strings.Contains(string(b), "reboot") {
		t.Errorf("host.log: %s", b)
	}
	f, err := p.Refresh(context.Background())
	if err != nil || len(f.Nodes) != 3 {
		t.Errorf("refresh: %v, %d nodes", err, len(f.Nodes))
	}
}

// Adding fails cleanly: a name the fleet has, a served config that is not one, one without
// the first-boot record. Nothing is left: no node, no directory beside nodes/.
func TestAddRefusals(t *testing.T) {
	p, dir := newFleet(t, 1, Options{})
	r, ign := poolConfig(t, "quay.io/os:2")
	before, _ := os.ReadFile(nodeFile(dir, "worker-0"))
	noRecord := []byte(`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,a"}}]}}`)
	remote := []byte(`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/a","contents":{"source":"https://example.com/a"}}]}}`)
	users := []byte(`{"ignition":{"version":"3.4.0"},"passwd":{"users":[{"name":"core"}]}}`)
	for _, tt := range []struct {
		name string
		spec AddSpec
		want string
	}{
		{"exists", addSpec("worker-0", "quay.io/os:1", ign), `node "worker-0" exists`},
		{"not a name", addSpec("../x", "quay.io/os:1", ign), `node name "../x"`},
		{"hidden", addSpec(".add-x", "quay.io/os:1", ign), `node name ".add-x"`},
		{"upper case", addSpec("UPPER", "quay.io/os:1", ign), `node name "UPPER"`},
		{"300 characters", addSpec(strings.Repeat("a", 300), "quay.io/os:1", ign), "must be no more than 253 characters"},
		{"zone", withZone(addSpec("new-0", "quay.io/os:1", ign), "../../z"), `zone "../../z"`},
		{"not Ignition", addSpec("new-0", "quay.io/os:1", []byte(`{"ignition":{"version":"2.2.0"}}`)), "not one Ignition takes"},
		{"no record", addSpec("new-0", "quay.io/os:1", noRecord), "no first-boot record"},
		{"remote contents", addSpec("new-0", "quay.io/os:1", remote), "inline data: sources only"},
		{"users", addSpec("new-0", "quay.io/os:1", users), "passwd (users and groups)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := p.Add(context.Background(), tt.spec, fetchFrom(r)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
			if names, _ := nodeNames(dir); !slices.Equal(names, []string{"worker-0"}) {
				t.Errorf("nodes after: %v", names)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".add-*")); len(left) != 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
	if after, _ := os.ReadFile(nodeFile(dir, "worker-0")); string(after) != string(before) {
		t.Errorf("worker-0 changed:\n%s", after)
	}
}

func withZone(s AddSpec, zone string) AddSpec { s.Zone = zone; return s }

// The longest node name Kubernetes allows, 253 characters, is added like any other (the
// node is made aside in a directory named by a digest of it).
func TestAddLongestName(t *testing.T) {
	p, dir := newFleet(t, 1, Options{})
	r, ign := poolConfig(t, "quay.io/os:2")
	name := strings.Repeat("n", 253)
	res, err := p.Add(context.Background(), addSpec(name, "quay.io/os:2", ign), fetchFrom(r))
	if err != nil || res.Node.Name != name || res.Node.State != model.StateDone {
		t.Fatalf("added: %+v, %v", res, err)
	}
	if names, _ := nodeNames(dir); !slices.Contains(names, name) {
		t.Errorf("nodes: %v", names)
	}
}

// A first boot whose reboot hung (the machine did not come back, the agent gave up) is
// finished by adding the node again once the machine is back: the agent that starts
// after boot finds the pending record with a new boot id and ends Done — one reboot in
// all, one pivot. A node that has finished its first boot is not added again.
func TestAddContinuesAnUnfinishedFirstBoot(t *testing.T) {
	p, dir := newFleet(t, 1, Options{NodeTimeout: 100 * time.Millisecond})
	r, ign := poolConfig(t, "quay.io/os:2")
	spec := addSpec("new-0", "quay.io/os:1", ign)
	if err := p.makeNode(spec); err != nil {
		t.Fatal(err)
	}
	set(t, dir, "new-0", "fault.reboot=hang")
	if _, err := p.Add(context.Background(), spec, fetchFrom(r)); err == nil || !strings.Contains(err.Error(), "did not come back") {
		t.Fatalf("the hung first boot: %v", err)
	}
	set(t, dir, "new-0", "fault.reboot-", "ready=true") // a power cycle
	res, err := p.Add(context.Background(), spec, fetchFrom(r))
	if err != nil || !res.Continued || res.Node.State != model.StateDone || res.Node.CurrentConfig != r.Name || res.Node.OSImage != "quay.io/os:2" {
		t.Fatalf("added again: %+v, %v", res, err)
	}
	got := kinds(events(t, dir, "new-0"))
	if strings.Count(got, "reboot") != 1 || strings.Count(got, "pivot") != 1 || !strings.HasSuffix(got, "done") {
		t.Errorf("events %q, want one pivot, one reboot, done", got)
	}
	if _, err := p.Add(context.Background(), spec, fetchFrom(r)); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("a node whose first boot finished, added again: %v", err)
	}
	other := spec
	other.Pool = "infra"
	q, _ := newFleet(t, 1, Options{NodeTimeout: 100 * time.Millisecond})
	if err := q.makeNode(spec); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Add(context.Background(), other, fetchFrom(r)); err == nil || !strings.Contains(err.Error(), "not a config of pool infra") {
		t.Errorf("an unfinished node of another pool: %v", err)
	}
}
