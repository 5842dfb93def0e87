package nodeexec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
)

// firstBootConfig is a pool's rendered config with a file and a unit, on OS image img.
func firstBootConfig(img string) *model.Rendered {
	return &model.Rendered{Name: "rendered-worker-new", Pool: "worker", OSImage: img,
		Files: []model.File{{Entry: model.Entry{Path: "/etc/chrony.conf"}, Mode: 0o640, Contents: []byte("server x\n")}},
		Units: []model.Unit{{Name: "app.service", Contents: "[Service]\nExecStart=/bin/app\n"}}}
}

// ignitionWrote is the tree Ignition leaves from the served config of r: r's files and
// units, and the first-boot record (of rec, when given: a record that lies).
func ignitionWrote(r *model.Rendered, rec ...content.FirstBoot) tree {
	fb := content.FirstBootOf(r)
	if len(rec) > 0 {
		fb = rec[0]
	}
	tr := tree{"etc/passwd": {Content: "root:x:0:0::/root:/bin/sh\n", Mode: 0o644},
		FirstBootPath: {Content: string(fb.Encode()), Mode: content.FirstBootMode}}
	for _, f := range r.Files {
		tr[strings.TrimPrefix(f.Path, "/")] = entry{Content: string(f.Contents), Mode: os.FileMode(f.Mode)}
	}
	for _, u := range r.Units {
		tr[strings.TrimPrefix(unitPath(u.Name), "/")] = entry{Content: u.Contents, Mode: 0o644}
	}
	return tr
}

// without is tr less the paths named.
func without(tr tree, paths ...string) tree {
	out := tree{}
	for k, v := range tr {
		out[k] = v
	}
	for _, p := range paths {
		delete(out, p)
	}
	return out
}

// firstBootNode is a node on its first boot: a root, a machine whose reboots give a new
// boot id and boot what a pivot staged, and the configs its server has.
type firstBootNode struct {
	root    string
	state   *fakeState
	host    *RecordingHost
	configs map[string]*model.Rendered
	reboots int // reboots that happened (the boot id changed)
}

func newFirstBootNode(t *testing.T, before tree, booted string, configs ...*model.Rendered) *firstBootNode {
	n := &firstBootNode{root: t.TempDir(), state: &fakeState{boot: "boot-1"}, configs: map[string]*model.Rendered{}}
	n.host = &RecordingHost{Booted: booted, Machine: t.TempDir(), BootID: n.state.BootID}
	for _, r := range configs {
		n.configs[r.Name] = r
	}
	makeTree(t, n.root, before)
	n.host.OnCall = n.reboot
	return n
}

func (n *firstBootNode) reboot(call string) error {
	if call == "reboot" {
		n.state.boot += "+"
		n.reboots++
	}
	return nil
}

// agent is the agent a (re)start of the node runs.
func (n *firstBootNode) agent() *Agent {
	return &Agent{Exec: &Executor{Root: n.root, Host: n.host}, State: n.state, RebootWait: 50 * time.Millisecond}
}

func (n *firstBootNode) fetch(_ context.Context, name string) (*model.Rendered, error) {
	if r := n.configs[name]; r != nil {
		return r, nil
	}
	return nil, fmt.Errorf("GET /rendered/%s: 404 Not Found", name)
}

// start is what an agent does when it starts: Resume, then FirstBoot.
func (n *firstBootNode) start(current string) (bool, error) {
	a := n.agent()
	if resumed, err := a.Resume(context.Background(), func(model.Step) {}); resumed || err != nil {
		return resumed, err
	}
	return a.FirstBoot(context.Background(), current, n.fetch, func(model.Step) {})
}

// TestFirstBootBeforeAfter: the first-boot path as before/after trees: the root Ignition
// wrote, the image the machine booted and the configs the server has; then the root, the
// host calls and the reports.
func TestFirstBootBeforeAfter(t *testing.T) {
	cfg := firstBootConfig("quay.io/os:2")
	noImage := firstBootConfig("")
	tests := []struct {
		name      string
		before    tree
		booted    string
		configs   []*model.Rendered
		current   string
		ran       bool
		err       string
		after     tree
		hostCalls []string
		reports   []string
	}{
		{
			name: "booted an older image: pivot, one reboot, Done", before: ignitionWrote(cfg), booted: "quay.io/os:1",
			configs: []*model.Rendered{cfg}, ran: true,
			after:     without(ignitionWrote(cfg), FirstBootPath),
			hostCalls: []string{"pivot quay.io/os:2", "reboot"},
			reports:   []string{"working " + cfg.Name, "done " + cfg.Name},
		},
		{
			name: "booted no container image: pivot", before: ignitionWrote(cfg), booted: "",
			configs: []*model.Rendered{cfg}, ran: true,
			after:     without(ignitionWrote(cfg), FirstBootPath),
			hostCalls: []string{"pivot quay.io/os:2", "reboot"},
			reports:   []string{"working " + cfg.Name, "done " + cfg.Name},
		},
		{
			name: "booted the pool's image: no pivot, no reboot", before: ignitionWrote(cfg), booted: "quay.io/os:2",
			configs: []*model.Rendered{cfg}, ran: true,
			after:   without(ignitionWrote(cfg), FirstBootPath),
			reports: []string{"working " + cfg.Name, "done " + cfg.Name},
		},
		{
			name: "a config without an OS image: no pivot", before: ignitionWrote(noImage), booted: "quay.io/os:1",
			configs: []*model.Rendered{noImage}, ran: true,
			after:   without(ignitionWrote(noImage), FirstBootPath),
			reports: []string{"working " + noImage.Name, "done " + noImage.Name},
		},
		{
			name:   "the disk is not what Ignition was served: Degraded, nothing done",
			before: without(ignitionWrote(cfg), "etc/chrony.conf"), booted: "quay.io/os:1",
			configs: []*model.Rendered{cfg}, ran: true, err: "/etc/chrony.conf: missing",
			after:   without(ignitionWrote(cfg), "etc/chrony.conf"),
			reports: []string{"degraded first boot: the disk does not match rendered-worker-new, which the node's Ignition wrote from the served config: /etc/chrony.conf: missing (expected 19133355e0acfc2f, found (none))"},
		},
		{
			name: "the server lacks the config: Degraded", before: ignitionWrote(cfg), booted: "quay.io/os:1",
			ran: true, err: "404 Not Found", after: ignitionWrote(cfg),
			reports: []string{"degraded first boot: fetching rendered config rendered-worker-new, which the node was booted with: GET /rendered/rendered-worker-new: 404 Not Found"},
		},
		{
			name:   "a record whose OS image is not the config's: Degraded",
			before: ignitionWrote(cfg, content.FirstBoot{Rendered: cfg.Name, OSImage: "quay.io/evil:1"}), booted: "quay.io/os:1",
			configs: []*model.Rendered{cfg}, ran: true, err: `says OS image "quay.io/evil:1"`,
			after:   ignitionWrote(cfg, content.FirstBoot{Rendered: cfg.Name, OSImage: "quay.io/evil:1"}),
			reports: []string{`degraded first boot: the first-boot record says OS image "quay.io/evil:1", and rendered config rendered-worker-new has "quay.io/os:2"`},
		},
		{
			name: "a node that runs a config: the record left behind is removed", before: ignitionWrote(cfg), booted: "quay.io/os:2",
			configs: []*model.Rendered{cfg}, current: cfg.Name,
			after: without(ignitionWrote(cfg), FirstBootPath),
		},
		{
			name: "no record: nothing to do", before: without(ignitionWrote(cfg), FirstBootPath), booted: "quay.io/os:1",
			configs: []*model.Rendered{cfg},
			after:   without(ignitionWrote(cfg), FirstBootPath),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newFirstBootNode(t, tt.before, tt.booted, tt.configs...)
			ran, err := n.start(tt.current)
			if ran != tt.ran || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ran %v, error %v; want %v, %q", ran, err, tt.ran, tt.err)
			}
			if d := cmp.Diff(tt.after, readTree(t, n.root)); d != "" {
				t.Errorf("tree after (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.hostCalls, n.host.Recorded()); d != "" {
				t.Errorf("host calls (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.reports, n.state.reports); d != "" {
				t.Errorf("reports (-want +got):\n%s", d)
			}
		})
	}
}

// killAt makes the node's agent die (as a SIGKILL would: nothing after runs) at the host
// call that starts with call; at a reboot, after the machine rebooted.
func (n *firstBootNode) killAt(call string) {
	n.host.OnCall = func(c string) error {
		if strings.HasPrefix(c, call) {
			if c == "reboot" {
				n.reboot(c)
			}
			panic("killed at " + c)
		}
		return n.reboot(c)
	}
}

// startKilled runs an agent start that dies as killAt arranged.
func (n *firstBootNode) startKilled(t *testing.T) {
	t.Helper()
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("the agent was not killed")
		}
		n.host.OnCall = n.reboot // the next start's machine
	}()
	n.start("")
}

// TestFirstBootResumesAfterKill: an agent killed on a first boot between its pivot and its
// reboot, or after the reboot, is resumed by the next start: the machine reboots once in
// all, and the node ends Done with the record gone.
func TestFirstBootResumesAfterKill(t *testing.T) {
	cfg := firstBootConfig("quay.io/os:2")
	tests := []struct {
		name string
		// kill sets up the first start's death; the second start must finish with these
		// host calls.
		kill       func(n *firstBootNode)
		afterCalls []string
	}{
		{"after the pivot, before the pending record", func(n *firstBootNode) { n.killAt("pivot") },
			// The staged deployment was not booted: the pivot is asked for again (rpm-ostree
			// stages the same image), then the one reboot.
			[]string{"pivot quay.io/os:2", "reboot"}},
		{"after asking for the reboot, before the machine went down", func(n *firstBootNode) {
			n.host.OnCall = func(c string) error {
				if c == "reboot" {
					panic("killed while asking for the reboot") // the boot id did not change
				}
				return nil
			}
		}, []string{"reboot"}},
		{"after the reboot, before anyone heard", func(n *firstBootNode) { n.killAt("reboot") }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newFirstBootNode(t, ignitionWrote(cfg), "quay.io/os:1", cfg)
			tt.kill(n)
			n.startKilled(t)
			before := len(n.host.Recorded())
			ran, err := n.start("")
			if !ran || err != nil {
				t.Fatalf("the next start: ran %v, %v (reports %v)", ran, err, n.state.reports)
			}
			if d := cmp.Diff(tt.afterCalls, n.host.Recorded()[before:], cmpopts.EquateEmpty()); d != "" {
				t.Errorf("host calls of the next start (-want +got):\n%s", d)
			}
			if n.reboots != 1 {
				t.Errorf("%d reboots happened, want 1 (calls %v)", n.reboots, n.host.Recorded())
			}
			if d := cmp.Diff(without(ignitionWrote(cfg), FirstBootPath), readTree(t, n.root)); d != "" {
				t.Errorf("tree after (-want +got):\n%s", d)
			}
			if last := n.state.reports[len(n.state.reports)-1]; last != "done "+cfg.Name {
				t.Errorf("last report %q (all %v)", last, n.state.reports)
			}
			if _, err := os.Stat(filepath.Join(n.root, PendingPath)); !os.IsNotExist(err) {
				t.Errorf("pending record left: %v", err)
			}
			// A third start has nothing to do.
			if ran, err := n.start(cfg.Name); ran || err != nil {
				t.Errorf("a start after the first boot: ran %v, %v", ran, err)
			}
		})
	}
}

// TestStateDirIsContentsAgentStateDir: the directory validate keeps configs out of is the
// one the agent keeps its records in.
func TestStateDirIsContentsAgentStateDir(t *testing.T) {
	if "/"+StateDir != content.AgentStateDir || "/"+FirstBootPath != content.FirstBootPath {
		t.Errorf("agent's StateDir %q, FirstBootPath %q; ignition/content says %q, %q", StateDir, FirstBootPath, content.AgentStateDir, content.FirstBootPath)
	}
}
