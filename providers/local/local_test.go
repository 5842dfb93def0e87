package local

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec"
	"github.com/mcpfleet/mcp/providers"
	"github.com/mcpfleet/mcp/providers/providertest"
)

// fixture writes a providertest fixture in the fleet format.
func fixture(t *testing.T, f providertest.Fixture) string {
	t.Helper()
	dir := t.TempDir()
	ff := fleetFile{FormatVersion: FormatVersion}
	for _, b := range f.PDBs {
		ff.PDBs = append(ff.PDBs, pdbSpec{Namespace: b.Namespace, Name: b.Name, Selector: b.Selector, MinAvailable: b.MinAvailable})
	}
	if err := writeJSON(filepath.Join(dir, "fleet.json"), ff); err != nil {
		t.Fatal(err)
	}
	for _, fn := range f.Nodes {
		n := &model.Node{Name: fn.Name, Zone: fn.Zone, Labels: fn.Labels, Ready: fn.Ready, BootID: newBootID(), State: model.StateDone}
		if err := writeNode(dir, n); err != nil {
			t.Fatal(err)
		}
		var pods []podFile
		for _, p := range f.Pods {
			if p.Node == fn.Name {
				pods = append(pods, podFile{Namespace: p.Namespace, Name: p.Name, Labels: p.Labels, DaemonSet: p.DaemonSet, Ready: p.Ready})
			}
		}
		if err := writeJSON(podsFile(dir, fn.Name), pods); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T, f providertest.Fixture) providers.Provider {
		p, err := New(Options{Dir: fixture(t, f)})
		if err != nil {
			t.Fatal(err)
		}
		return p
	})
}

func TestInitAndSet(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fleet")
	if err := Init(dir, InitSpec{Pools: []PoolSize{{"worker", 3}, {"infra", 1}}, Zones: []string{"a", "b"}, Workloads: true}); err != nil {
		t.Fatal(err)
	}
	if err := Init(dir, InitSpec{Pools: []PoolSize{{"x", 1}}}); err == nil {
		t.Error("Init over an existing fleet succeeded")
	}
	// Each root is as a Fedora CoreOS or RHCOS image brings it: /usr/local and /opt
	// are the OS's links into /var, to directories that exist.
	for link, target := range map[string]string{"usr/local": "../var/usrlocal", "opt": "var/opt"} {
		p := filepath.Join(dir, "nodes/worker-0/root", link)
		if got, err := os.Readlink(p); err != nil || got != target {
			t.Errorf("%s: a link to %q (%v), want %q", link, got, err, target)
		}
		if st, err := os.Stat(p); err != nil || !st.IsDir() {
			t.Errorf("%s does not lead to a directory: %v", link, err)
		}
	}
	p, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	f, err := p.Refresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Nodes) != 4 || f.Nodes[3].Name != "worker-2" || f.Nodes[3].Zone != "a" || f.Nodes[2].Zone != "b" {
		t.Errorf("nodes: %+v", f.Nodes)
	}
	if len(f.PDBs) != 1 || f.PDBs[0].DisruptionsAllowed != 1 {
		t.Errorf("workloads PDB: %+v", f.PDBs)
	}
	if err := Set(dir, "worker-1", []string{"ready=false", "label.gpu=yes", "unschedulable=true"}); err != nil {
		t.Fatal(err)
	}
	n, _ := readRecord(dir, "worker-1")
	if n.Ready || !n.Unschedulable || n.Labels["gpu"] != "yes" {
		t.Errorf("set: %+v", n)
	}
	// hold= is the mcpfleet.io/hold annotation: a reason in free text; hold= lifts it.
	if err := Set(dir, "worker-1", []string{"hold=disk swap pending"}); err != nil {
		t.Fatal(err)
	}
	if n, _ := readRecord(dir, "worker-1"); n.Hold != "disk swap pending" {
		t.Errorf("hold: %q", n.Hold)
	}
	if err := Set(dir, "worker-1", []string{"hold="}); err != nil {
		t.Fatal(err)
	}
	if n, _ := readRecord(dir, "worker-1"); n.Hold != "" {
		t.Errorf("hold= did not lift the hold: %q", n.Hold)
	}
	err = Set(dir, "worker-1", []string{"ready=true", "colour=red"})
	if err == nil || !strings.Contains(err.Error(), "colour") || !strings.Contains(err.Error(), "unschedulable") {
		t.Errorf("unknown key: %v", err)
	}
	if n, _ := readRecord(dir, "worker-1"); n.Ready {
		t.Error("a refused set changed the node")
	}
	if _, err := ParsePoolSizes("worker=x"); err == nil {
		t.Error("bad pool sizes accepted")
	}
}

func TestRebootGivesNewBootIDAndClearsPending(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fleet")
	if err := Init(dir, InitSpec{Pools: []PoolSize{{"worker", 1}}}); err != nil {
		t.Fatal(err)
	}
	p, _ := New(Options{Dir: dir})
	before, _ := readRecord(dir, "worker-0")
	target := &model.Rendered{Name: "rendered-worker-1", KernelArgs: []string{"nosmt"},
		Files: []model.File{{Entry: model.Entry{Path: "/etc/a"}, Mode: 0o644, Contents: []byte("a")}}}
	steps := []model.Step{{Kind: model.StepWrite, Target: "/etc/a"}, {Kind: model.StepKargs}, {Kind: model.StepReboot}, {Kind: model.StepVerify}}
	if err := p.RunNodeSteps(context.Background(), "worker-0", nil, target, steps, func(model.Step) {}); err != nil {
		t.Fatal(err)
	}
	after, _ := readRecord(dir, "worker-0")
	if after.BootID == before.BootID || after.CurrentConfig != target.Name || after.State != model.StateDone ||
		strings.Join(after.KernelArgs, " ") != "nosmt" {
		t.Errorf("after reboot: %+v", after)
	}
	if _, err := os.Stat(filepath.Join(rootDir(dir, "worker-0"), nodeexec.PendingPath)); !os.IsNotExist(err) {
		t.Errorf("pending record left: %v", err)
	}
	// A verify that finds drift degrades the node with the reason.
	os.WriteFile(filepath.Join(dir, "nodes/worker-0/root/etc/a"), []byte("tampered"), 0o644)
	err := p.RunNodeSteps(context.Background(), "worker-0", target, target, []model.Step{{Kind: model.StepVerify}}, func(model.Step) {})
	n, _ := readRecord(dir, "worker-0")
	if err == nil || n.State != model.StateDegraded || !strings.Contains(n.Reason, "/etc/a") {
		t.Errorf("drift: err %v, node %s %q", err, n.State, n.Reason)
	}
}
