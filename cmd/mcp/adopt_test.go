package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpfleet/mcp/config"
	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers/local"
)

// Adoption (issue 42), judged from the nodes: a fleet whose roots already carry what the
// configuration asks for — written by hand here, never by mcp — is recorded on its targets
// with no write, restart, drain or reboot; one node that differs in one file gets exactly
// that write and its on_change, nothing else.

// targets renders the configuration in dir, by pool.
func targets(t *testing.T, dir string) map[string]*model.Rendered {
	t.Helper()
	ws, _, diags := engine.Load(dir, config.Options{}, parts.Engine())
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return ws.Rendered
}

// carry makes each node of the quickstart's fleet carry its pool's target as a node
// provisioned without mcp would: files and units written by hand, units enabled by their
// WantedBy links, kernel arguments booted; current_config set to current ("": none).
func carry(t *testing.T, dir, current string) map[string]*model.Rendered {
	t.Helper()
	rs := targets(t, dir)
	for _, n := range quickstartNodes {
		r := rs[poolOfNode(n)]
		if len(r.Directories)+len(r.Links) > 0 {
			t.Fatalf("carry writes files and units only; %s has directories or links", r.Name)
		}
		root := filepath.Join(dir, "fleet/nodes", n, "root")
		for _, f := range r.Files {
			writeFile(t, filepath.Join(root, f.Path), f.Contents, fs.FileMode(f.Mode))
		}
		for _, u := range r.Units {
			p := filepath.Join(root, "etc/systemd/system", u.Name)
			writeFile(t, p, []byte(u.Contents), 0o644)
			if u.Enabled != nil && *u.Enabled {
				wants := filepath.Join(root, "etc/systemd/system/multi-user.target.wants")
				if err := os.MkdirAll(wants, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink("/etc/systemd/system/"+u.Name, filepath.Join(wants, u.Name)); err != nil {
					t.Fatal(err)
				}
			}
		}
		editNode(t, dir, n, func(m map[string]any) {
			m["kernel_args"] = r.KernelArgs
			delete(m, "current_config")
			delete(m, "desired_config")
			if current != "" { // a node at rest on it: desired and current alike
				m["current_config"] = current + "-" + poolOfNode(n)
				m["desired_config"] = m["current_config"]
			}
		})
	}
	return rs
}

var quickstartNodes = []string{"infra-0", "infra-1", "worker-0", "worker-1", "worker-2", "worker-3"}

func poolOfNode(n string) string { return strings.Split(n, "-")[0] }

func writeFile(t *testing.T, p string, b []byte, mode fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

// editNode changes a node's node.json as its fleet's operator would.
func editNode(t *testing.T, dir, node string, edit func(map[string]any)) {
	t.Helper()
	p := filepath.Join(dir, "fleet/nodes", node, "node.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if b, err = json.MarshalIndent(m, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// nodeSnapshot is what a node shows of being touched: every file of its root by inode and
// mtime, its boot id, its systemd operations (host.log) and its event log's length.
type nodeSnapshot struct {
	files  map[string]string
	bootID string
	host   string
	events int
}

func snapshot(t *testing.T, dir string) map[string]nodeSnapshot {
	t.Helper()
	events, err := local.ReadEvents(filepath.Join(dir, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]nodeSnapshot{}
	for _, n := range quickstartNodes {
		s := nodeSnapshot{files: map[string]string{}, events: len(events[n])}
		root := filepath.Join(dir, "fleet/nodes", n, "root")
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			st, err := os.Lstat(p)
			if err != nil {
				return err
			}
			s.files[strings.TrimPrefix(p, root)] = fmt.Sprintf("ino %d mtime %d", st.Sys().(*syscall.Stat_t).Ino, st.ModTime().UnixNano())
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		host, _ := os.ReadFile(filepath.Join(dir, "fleet/nodes", n, "host.log"))
		s.host = string(host)
		s.bootID = nodeField(t, dir, n, "boot_id")
		out[n] = s
	}
	return out
}

func nodeField(t *testing.T, dir, node, key string) string {
	t.Helper()
	var m map[string]any
	b, err := os.ReadFile(filepath.Join(dir, "fleet/nodes", node, "node.json"))
	if err != nil || json.Unmarshal(b, &m) != nil {
		t.Fatalf("node.json of %s: %v", node, err)
	}
	s, _ := m[key].(string)
	return s
}

// untouched checks that apply touched none of nodes: same files (inodes, mtimes), boot id
// and systemd operations, and only claim, done and release events since before.
func untouched(t *testing.T, dir string, before map[string]nodeSnapshot, nodes ...string) {
	t.Helper()
	after := snapshot(t, dir)
	events, err := local.ReadEvents(filepath.Join(dir, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		b, a := before[n], after[n]
		for p, was := range b.files {
			if a.files[p] != was {
				t.Errorf("%s: %s was rewritten or removed (%s → %q)", n, p, was, a.files[p])
			}
		}
		if len(a.files) != len(b.files) {
			t.Errorf("%s: %d files in its root, %d before", n, len(a.files), len(b.files))
		}
		if a.bootID != b.bootID {
			t.Errorf("%s rebooted: boot id %s → %s", n, b.bootID, a.bootID)
		}
		if a.host != b.host {
			t.Errorf("%s: systemd operations ran: %s", n, strings.TrimPrefix(a.host, b.host))
		}
		for _, e := range events[n][b.events:] {
			if !slices.Contains([]local.EventKind{local.EventClaim, local.EventDone, local.EventRelease}, e.Kind) {
				t.Errorf("%s: event %s during an adoption", n, e.Kind)
			}
		}
	}
}

// onTargets checks every node records its pool's target, and the state remembers it.
func onTargets(t *testing.T, dir string, rs map[string]*model.Rendered) {
	t.Helper()
	st := readState(t, dir)
	for _, n := range quickstartNodes {
		want := rs[poolOfNode(n)].Name
		if got := nodeField(t, dir, n, "current_config"); got != want {
			t.Errorf("%s records %q, want %s", n, got, want)
		}
		// At rest on its target: a desired config left behind would count it as updating.
		if got := nodeField(t, dir, n, "desired_config"); got != want {
			t.Errorf("%s records desired config %q, want %s", n, got, want)
		}
		if st.Rendered[want] == nil || st.Pointers[poolOfNode(n)] != want {
			t.Errorf("the state lacks %s (pointer %q)", want, st.Pointers[poolOfNode(n)])
		}
	}
}

func TestAdoptFleetThatCarriesItsConfig(t *testing.T) {
	for _, c := range []struct{ name, current string }{
		{"never managed", ""},
		{"foreign config name", "rendered-0123456789abcdef0123456789abcdef"}, // as the MCO names them
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := quickstart(t)
			rs := carry(t, dir, c.current)
			code, out, errOut := mcp(t, dir, "plan", "-no-color", "-out=p")
			if code != 0 || !strings.Contains(out, "0 nodes to update (0 reboot, 0 in place), 6 nodes to adopt") {
				t.Fatalf("plan exit %d, want 6 nodes to adopt and none to update:\n%s%s", code, out, errOut)
			}
			if strings.Contains(out, "unknown to the state") {
				t.Errorf("the plan still warns of a rewrite:\n%s", out)
			}
			before := snapshot(t, dir)
			code, out, errOut = mcp(t, dir, "apply", "-auto-approve", "-no-color", "p")
			if code != 0 {
				t.Fatalf("apply exit %d\n%s%s", code, out, errOut)
			}
			if !strings.Contains(out, "node.worker-0: adopted") || !strings.Contains(out, "adopted (recorded on its target; nothing on it changed)") {
				t.Errorf("apply does not say the nodes were adopted:\n%s", out)
			}
			if !strings.Contains(out, "Nodes: 0 updated, 6 adopted, 0 failed, 0 not started") {
				t.Errorf("apply's counts do not tell the adopted nodes from updated ones:\n%s", out)
			}
			untouched(t, dir, before, quickstartNodes...)
			onTargets(t, dir, rs)
			if code, out, errOut := mcp(t, dir, "plan", "-no-color", "-detailed-exitcode"); code != 0 {
				t.Errorf("plan after adoption exit %d, want 0\n%s%s", code, out, errOut)
			}
		})
	}
}

// planSteps is each changing node's planned steps ("write /etc/chrony.conf"), from plan -json.
func planSteps(t *testing.T, dir string) map[string][]string {
	t.Helper()
	code, out, errOut := mcp(t, dir, "plan", "-json")
	if code != 0 {
		t.Fatalf("plan -json exit %d\n%s", code, errOut)
	}
	steps := map[string][]string{}
	var pj struct {
		ResourceChanges []struct {
			Address string `json:"address"`
			MCP     struct {
				Steps []struct{ Kind, Target string } `json:"steps"`
			} `json:"mcp"`
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal([]byte(out), &pj); err != nil {
		t.Fatal(err)
	}
	for _, rc := range pj.ResourceChanges {
		if n, ok := strings.CutPrefix(rc.Address, "node."); ok {
			for _, s := range rc.MCP.Steps {
				steps[n] = append(steps[n], strings.TrimSpace(s.Kind+" "+s.Target))
			}
		}
	}
	return steps
}

// One node differs in one file whose on_change is a restart: that file is written on that
// node and its service restarted; no cordon, drain or reboot; the other nodes are adopted.
func TestAdoptFleetOneNodeDiffersInOneFile(t *testing.T) {
	dir := quickstart(t)
	rs := carry(t, dir, "rendered-0123456789abcdef0123456789abcdef")
	chrony := filepath.Join(dir, "fleet/nodes/worker-2/root/etc/chrony.conf")
	writeFile(t, chrony, []byte("server old.example.com iburst\n"), 0o644)
	steps := planSteps(t, dir)
	want := map[string][]string{"worker-2": {"write /etc/chrony.conf", "restart chronyd.service"}}
	for _, n := range quickstartNodes {
		if n != "worker-2" {
			want[n] = []string{"adopt"}
		}
	}
	if fmt.Sprint(steps) != fmt.Sprint(want) {
		t.Fatalf("steps by node:\n got %v\nwant %v", steps, want)
	}
	before := snapshot(t, dir)
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply exit %d\n%s%s", code, out, errOut)
	}
	others := slices.DeleteFunc(slices.Clone(quickstartNodes), func(n string) bool { return n == "worker-2" })
	untouched(t, dir, before, others...)
	onTargets(t, dir, rs)
	after := snapshot(t, dir)["worker-2"]
	if b, _ := os.ReadFile(chrony); string(b) != string(rs["worker"].File("/etc/chrony.conf").Contents) {
		t.Errorf("worker-2's chrony.conf not written: %q", b)
	}
	for p, was := range before["worker-2"].files {
		if p != "/etc/chrony.conf" && after.files[p] != was {
			t.Errorf("worker-2: %s rewritten, only /etc/chrony.conf differed", p)
		}
	}
	var ops []string
	for _, l := range strings.Split(strings.TrimPrefix(after.host, before["worker-2"].host), "\n") {
		var op struct {
			Op   string   `json:"op"`
			Args []string `json:"args"`
		}
		if json.Unmarshal([]byte(l), &op) == nil {
			ops = append(ops, strings.TrimSpace(op.Op+" "+strings.Join(op.Args, " ")))
		}
	}
	if !slices.Equal(ops, []string{"restart chronyd.service"}) {
		t.Errorf("worker-2's systemd operations %v, want exactly restart chronyd.service", ops)
	}
	if after.bootID != before["worker-2"].bootID {
		t.Error("worker-2 rebooted")
	}
	events, _ := local.ReadEvents(filepath.Join(dir, "fleet"))
	for _, e := range events["worker-2"][before["worker-2"].events:] {
		if e.Kind == local.EventCordon || e.Kind == local.EventDrain || e.Kind == local.EventReboot {
			t.Errorf("worker-2: %s, for a file whose on_change is a restart", e.Kind)
		}
	}
}

// A node that changed between plan and apply is not adopted: the saved plan is refused as
// stale, and nothing on any node changes.
func TestAdoptStalePlanRefused(t *testing.T) {
	dir := quickstart(t)
	carry(t, dir, "")
	if code, out, errOut := mcp(t, dir, "plan", "-no-color", "-out=p"); code != 0 || !strings.Contains(out, "6 nodes to adopt") {
		t.Fatalf("plan exit %d\n%s%s", code, out, errOut)
	}
	writeFile(t, filepath.Join(dir, "fleet/nodes/worker-1/root/etc/motd"), []byte("changed by hand\n"), 0o644)
	before := snapshot(t, dir)
	code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color", "p")
	if code == 0 || !strings.Contains(out+errOut, "stale") {
		t.Fatalf("apply of a plan made before worker-1 changed: exit %d, want a stale-plan refusal\n%s%s", code, out, errOut)
	}
	untouched(t, dir, before, quickstartNodes...)
	for _, n := range quickstartNodes {
		if got := nodeField(t, dir, n, "current_config"); got != "" {
			t.Errorf("%s recorded on %q by a refused plan", n, got)
		}
	}
}

// A converged fleet whose state was lost: no node step, the state rebuilt; and drift on a
// node is still seen (its config is the one the plan renders).
func TestLostStateOnConvergedFleet(t *testing.T) {
	dir := quickstart(t)
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply exit %d\n%s%s", code, out, errOut)
	}
	rs := targets(t, dir)
	for _, p := range []string{"mcp.state", "mcp.state.backup", "mcp.state.d"} {
		os.RemoveAll(filepath.Join(dir, p))
	}
	code, out, errOut := mcp(t, dir, "plan", "-no-color")
	if code != 0 || !strings.Contains(out, "Plan: 0 nodes to update (0 reboot, 0 in place), 2 pools re-rendered") {
		t.Fatalf("plan without state: exit %d, want no node to update, the pools' pointers recorded again\n%s%s", code, out, errOut)
	}
	before := snapshot(t, dir)
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply exit %d\n%s%s", code, out, errOut)
	}
	untouched(t, dir, before, quickstartNodes...)
	onTargets(t, dir, rs)
	if code, out, errOut := mcp(t, dir, "plan", "-no-color", "-detailed-exitcode"); code != 0 {
		t.Fatalf("plan after the state was rebuilt: exit %d, want 0\n%s%s", code, out, errOut)
	}

	for _, p := range []string{"mcp.state", "mcp.state.backup", "mcp.state.d"} {
		os.RemoveAll(filepath.Join(dir, p))
	}
	writeFile(t, filepath.Join(dir, "fleet/nodes/worker-3/root/etc/chrony.conf"), []byte("server elsewhere\n"), 0o644)
	code, out, errOut = mcp(t, dir, "plan", "-no-color")
	if code != 0 || !strings.Contains(out, "node.worker-3") || !strings.Contains(out, "restore drifted /etc/chrony.conf") {
		t.Errorf("plan without state, worker-3's chrony.conf changed: exit %d, want its drift restored\n%s%s", code, out, errOut)
	}
}

// A node whose update from what it carries failed, and was rolled back (its agent reported
// Degraded, no step done), still carries what it carried: the next plan derives its steps
// from it again — that one write and its restart — not a rewrite and a reboot because its
// config name is foreign.
func TestAdoptAfterAFailedUpdate(t *testing.T) {
	dir := quickstart(t)
	carry(t, dir, "rendered-0123456789abcdef0123456789abcdef")
	chrony := filepath.Join(dir, "fleet/nodes/worker-2/root/etc/chrony.conf")
	writeFile(t, chrony, []byte("server old.example.com iburst\n"), 0o644)
	if code, out, errOut := mcp(t, dir, "fleet", "set", "worker-2", "fault.write=/etc/chrony.conf"); code != 0 {
		t.Fatalf("fleet set exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 1 || !strings.Contains(out, "node.worker-2  failed") {
		t.Fatalf("apply with a write fault on worker-2: exit %d, want 1 and worker-2 failed\n%s", code, out)
	}
	if got := nodeField(t, dir, "worker-2", "state"); got != "Degraded" {
		t.Fatalf("worker-2 is %q after its failed write, want Degraded", got)
	}
	if code, out, errOut := mcp(t, dir, "fleet", "set", "worker-2", "fault.write-"); code != 0 {
		t.Fatalf("fleet set exit %d\n%s%s", code, out, errOut)
	}
	want := []string{"write /etc/chrony.conf", "restart chronyd.service"}
	if got := planSteps(t, dir)["worker-2"]; !slices.Equal(got, want) {
		t.Fatalf("worker-2's steps after its failed update: %v, want %v", got, want)
	}
	before := snapshot(t, dir)["worker-2"]
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply exit %d\n%s%s", code, out, errOut)
	}
	if after := snapshot(t, dir)["worker-2"]; after.bootID != before.bootID {
		t.Error("worker-2 rebooted for one file whose on_change is a restart")
	}
	if got := nodeField(t, dir, "worker-2", "state"); got != "Done" {
		t.Errorf("worker-2 is %q, want Done", got)
	}
	if code, out, errOut := mcp(t, dir, "plan", "-no-color", "-detailed-exitcode"); code != 0 {
		t.Errorf("plan after the retry exit %d, want 0\n%s%s", code, out, errOut)
	}
}

// A named pipe where the config has a file: the plan says before apply that apply will
// refuse it (mcp never replaces what a failed update could not put back), and apply does,
// the pipe left as it was.
func TestAdoptSpecialFileWarnedBeforeApply(t *testing.T) {
	dir := quickstart(t)
	carry(t, dir, "rendered-0123456789abcdef0123456789abcdef")
	motd := filepath.Join(dir, "fleet/nodes/worker-3/root/etc/motd")
	if err := os.Remove(motd); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(motd, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := mcp(t, dir, "plan", "-no-color")
	if code != 0 || !strings.Contains(out, "apply will refuse to write /etc/motd: it is a named pipe on the node") {
		t.Fatalf("plan exit %d does not warn of the named pipe:\n%s%s", code, out, errOut)
	}
	if code, out, _ := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 1 || !strings.Contains(out, "/etc/motd is a named pipe, not a file mcp can manage") {
		t.Errorf("apply exit %d, want 1 refusing the named pipe:\n%s", code, out)
	}
	if st, err := os.Lstat(motd); err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("worker-3's /etc/motd is no longer the named pipe: %v %v", st, err)
	}
}
