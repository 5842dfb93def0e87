package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/state"
	"github.com/mcpfleet/mcp/state/localstate"
)

// An apply leaves each node's story in its event log (infra-0's kernel arguments take a
// reboot, inside its claim by the apply), and mcp fleet events prints it.
func TestFleetEvents(t *testing.T) {
	dir := quickstart(t)
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := mcp(t, dir, "fleet", "events", "infra-0")
	if code != 0 {
		t.Fatalf("fleet events exit %d: %s", code, errOut)
	}
	var kinds []string
	line := regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}  infra-0  (\S+)`)
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("line %q", l)
		}
		kinds = append(kinds, m[1])
	}
	if got := strings.Join(kinds, " "); got != "claim cordon working reboot not-ready ready done uncordon release" {
		t.Errorf("infra-0's events: %s\n%s", got, out)
	}
	if code, out, _ := mcp(t, dir, "fleet", "events"); code != 0 || !strings.Contains(out, "infra-1") {
		t.Errorf("all events: exit %d\n%s", code, out)
	}
	if code, _, errOut := mcp(t, dir, "fleet", "events", "nope"); code != 1 || !strings.Contains(errOut, `No node "nope"`) {
		t.Errorf("unknown node: exit %d %s", code, errOut)
	}
	// A set is an event too; faults are set like labels.
	if code, _, errOut := mcp(t, dir, "fleet", "set", "worker-1", "unschedulable=true", "fault.drain=pdb"); code != 0 {
		t.Fatal(errOut)
	}
	_, out, _ = mcp(t, dir, "fleet", "events", "-fleet", filepath.Join(dir, "fleet"), "worker-1")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); !strings.Contains(lines[len(lines)-1], "worker-1  cordon") {
		t.Errorf("the set's cordon is not the last event:\n%s", out)
	}
}

// mcp fleet add: a node added from an old boot image boots the pool's served config,
// pivots once at its first boot and ends Done on the pool's pointer and OS image; the next
// plan has nothing to do. Refusals name what is wrong and leave the fleet as it was.
func TestFleetAdd(t *testing.T) {
	dir := quickstart(t)
	setPoolAttr(t, dir, "worker", `os_image = "quay.io/fedora/fedora-coreos:42"`)
	if code, out, errOut := mcp(t, dir, "fleet", "add", "new-0", "-pool", "worker"); code != 1 ||
		!strings.Contains(errOut, "run mcp apply first") {
		t.Errorf("before any apply: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := mcp(t, dir, "fleet", "add", "new-0", "-pool", "worker", "-boot-image", "quay.io/fedora/fedora-coreos:40", "-zone", "b")
	if code != 0 || !strings.Contains(out, "pivoted to quay.io/fedora/fedora-coreos:42 at its first boot") {
		t.Fatalf("fleet add exit %d\n%s%s", code, out, errOut)
	}
	st := readState(t, dir)
	var n struct {
		CurrentConfig string            `json:"current_config"`
		OSImage       string            `json:"os_image"`
		BootImage     string            `json:"boot_image"`
		State         string            `json:"state"`
		Ready         bool              `json:"ready"`
		Labels        map[string]string `json:"labels"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "fleet/nodes/new-0/node.json"))
	if err := json.Unmarshal(b, &n); err != nil {
		t.Fatal(err)
	}
	if n.CurrentConfig != st.Pointers["worker"] || n.OSImage != "quay.io/fedora/fedora-coreos:42" ||
		n.BootImage != "quay.io/fedora/fedora-coreos:40" || n.State != "Done" || !n.Ready ||
		n.Labels["node-role.kubernetes.io/worker"] != "" || n.Labels["topology.kubernetes.io/zone"] != "b" {
		t.Errorf("new-0: %s", b)
	}
	_, out, _ = mcp(t, dir, "fleet", "events", "new-0")
	for _, want := range []string{"firstboot  from quay.io/fedora/fedora-coreos:40", "pivot      to quay.io/fedora/fedora-coreos:42", "reboot"} {
		if !strings.Contains(out, want) {
			t.Errorf("events lack %q:\n%s", want, out)
		}
	}
	if code, out, errOut := mcp(t, dir, "plan", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Errorf("plan after the add: exit %d, want 0 (no changes)\n%s%s", code, out, errOut)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"new-0", "-pool", "worker"}, `Node "new-0" exists`},
		{[]string{"new-1", "-pool", "nope"}, `Pool "nope" is not in the configuration (pools: infra, worker)`},
		{[]string{"new-1"}, "Usage: mcp fleet add NODE -pool POOL"},
		{[]string{"new-1", "-pool", "worker", "-server", "http://127.0.0.1:1"}, "Fetching the served config"},
		{[]string{".add-x", "-pool", "worker"}, `Node name ".add-x"`},
		{[]string{"UPPER", "-pool", "worker"}, `Node name "UPPER"`},
		{[]string{strings.Repeat("n", 300), "-pool", "worker"}, "must be no more than 253 characters"},
		{[]string{"new-1", "-pool", "worker", "-zone", "../../z"}, `Zone "../../z"`},
	} {
		if code, _, errOut := mcp(t, dir, append([]string{"fleet", "add"}, tt.args...)...); code != 1 || !strings.Contains(errOut, tt.want) {
			t.Errorf("fleet add %v: exit %d, %s", tt.args, code, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "fleet/nodes/new-1")); !os.IsNotExist(err) {
		t.Errorf("a refused add left new-1: %v", err)
	}
}

// The boot image a node is added with by default: the state's boot image for the pool
// (its local image), else the pool's OS image, else the fleet's default image.
func TestFleetAddDefaultBootImage(t *testing.T) {
	r := &model.Rendered{Name: "rendered-worker-1", Pool: "worker", OSImage: "quay.io/os:2"}
	st := &state.State{Pointers: map[string]string{"worker": r.Name}, Rendered: map[string]*model.Rendered{r.Name: r}}
	b, err := newBoot(context.Background(), st, "worker", "worker-9", "")
	if err == nil {
		t.Fatalf("a rendered config of no Ignition spec built a boot: %+v", b)
	}
	b = &boot{pointer: r}
	if got := b.bootImage(st, "worker"); got != "quay.io/os:2" {
		t.Errorf("no boot image in the state: %q", got)
	}
	st.BootImages = map[string]model.BootImageDef{"worker": {Name: "os-1", OSImage: "quay.io/os:1"}}
	if got := b.bootImage(st, "worker"); got != "quay.io/os:1" {
		t.Errorf("the state's boot image: %q", got)
	}
	st.BootImages["worker"] = model.BootImageDef{Name: "os-1", OSImage: "quay.io/os:1", Images: map[string]string{"local": "quay.io/os:1-live"}}
	if got := b.bootImage(st, "worker"); got != "quay.io/os:1-live" {
		t.Errorf("the state's boot image's local image: %q", got)
	}
	b.pointer = &model.Rendered{Name: "rendered-worker-2", Pool: "worker"}
	if got := b.bootImage(&state.State{}, "worker"); got != local.DefaultOSImage {
		t.Errorf("no OS image anywhere: %q", got)
	}
}

func readState(t *testing.T, dir string) *state.State {
	t.Helper()
	st, err := (&localstate.Local{Path: filepath.Join(dir, "mcp.state")}).Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// fleet list prints plain columns, as status does: every row has the header's six fields
// for awk, a node without a config or zone shows "-", and nothing draws a box.
func TestFleetListColumns(t *testing.T) {
	dir := t.TempDir()
	if code, _, errOut := mcp(t, dir, "fleet", "init", "fleet", "-nodes", "worker=2,infra=1"); code != 0 {
		t.Fatalf("fleet init: %s", errOut)
	}
	code, out, errOut := mcp(t, dir, "fleet", "list", "-fleet", "fleet")
	if code != 0 {
		t.Fatalf("fleet list exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 4 || strings.Join(strings.Fields(lines[0]), " ") != "NODE ZONE READY SCHEDULABLE CURRENT CONFIG STATE" {
		t.Fatalf("fleet list:\n%s", out)
	}
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) != 6 || f[4] != "-" || strings.ContainsAny(l, "│┌─") || strings.HasSuffix(l, " ") {
			t.Errorf("row %q", l)
		}
	}
}
