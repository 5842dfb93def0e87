package acceptance

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/agent/standalone"
	"github.com/mcpfleet/mcp/bootsrv"
	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec"
	"github.com/mcpfleet/mcp/providers/local"
	"github.com/mcpfleet/mcp/state/localstate"
	"github.com/mcpfleet/mcp/testkit/quickstarttest"
)

// The OS images of the first-boot tests: the pools run fcos42; a node added from fcos40
// boots an older image.
const (
	fcos40 = "quay.io/fedora/fedora-coreos:40"
	fcos42 = "quay.io/fedora/fedora-coreos:42"
)

const bootImagesHCL = `boot_image "fcos-40" {
  os_image = "quay.io/fedora/fedora-coreos:40"
}

boot_image "fcos-42" {
  os_image = "quay.io/fedora/fedora-coreos:42"
}
`

// bootImagesQuickstart copies the quickstart (reboots taking reboot), declares the
// boot_image blocks, puts both pools on fcos42 with a managed boot image, and applies it
// with the real mcp (every node pivots to fcos42).
func bootImagesQuickstart(t *testing.T, reboot string) string {
	t.Helper()
	dir := quickstarttest.Copy(t, "../examples/quickstart", "0s", reboot)
	if err := os.WriteFile(filepath.Join(dir, "bootimages.hcl"), []byte(bootImagesHCL), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "main.hcl")
	b, _ := os.ReadFile(p)
	for _, pool := range []string{"worker", "infra"} {
		head := []byte(`pool "` + pool + `" {` + "\n")
		if !bytes.Contains(b, head) {
			t.Fatalf("main.hcl has no pool %s", pool)
		}
		b = bytes.Replace(b, head, append(head, []byte("  os_image = \""+fcos42+"\"\n  boot_image { policy = \"managed\" }\n")...), 1)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := mcpIn(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	return dir
}

// mcpIn runs the real mcp in dir and returns its exit code and output.
func mcpIn(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(mcpBinary(t), append([]string{"-chdir=" + dir}, args...)...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

func readNode(t *testing.T, dir, name string) model.Node {
	t.Helper()
	var n model.Node
	b, err := os.ReadFile(filepath.Join(dir, "fleet/nodes", name, "node.json"))
	if err != nil || json.Unmarshal(b, &n) != nil {
		t.Fatalf("node %s: %v\n%s", name, err, b)
	}
	return n
}

func nodeEvents(t *testing.T, dir, name string) []local.Event {
	t.Helper()
	all, err := local.ReadEvents(filepath.Join(dir, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	return all[name]
}

// kindsOf is the events' kinds, space-separated.
func kindsOf(evs []local.Event) string {
	var ks []string
	for _, k := range eventKinds(evs) {
		ks = append(ks, string(k))
	}
	return strings.Join(ks, " ")
}

func readLocalState(t *testing.T, dir string) (*localstate.Local, map[string]string, map[string]*model.Rendered) {
	t.Helper()
	b := &localstate.Local{Path: filepath.Join(dir, "mcp.state")}
	st, err := b.Read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return b, st.Pointers, st.Rendered
}

// checkJoined: the node ran its first boot to the end: Done, Ready, on the pool's pointer
// and OS image, booted from bootImage, its root as the config has it, no record left.
func checkJoined(t *testing.T, dir, name, bootImage string) {
	t.Helper()
	_, ptr, rendered := readLocalState(t, dir)
	n := readNode(t, dir, name)
	if n.CurrentConfig != ptr["worker"] || n.DesiredConfig != ptr["worker"] || n.State != model.StateDone || !n.Ready ||
		n.OSImage != fcos42 || n.BootImage != bootImage || n.Unschedulable {
		t.Errorf("%s after its first boot: %+v (pointer %s)", name, n, ptr["worker"])
	}
	root := filepath.Join(dir, "fleet/nodes", name, "root")
	if drift, err := (&nodeexec.Executor{Root: root}).Verify(rendered[ptr["worker"]]); err != nil || len(drift) != 0 {
		t.Errorf("%s's root against the pool's config: %v %v", name, drift, err)
	}
	if _, err := os.Stat(filepath.Join(root, content.FirstBootPath)); !os.IsNotExist(err) {
		t.Errorf("%s kept its first-boot record: %v", name, err)
	}
}

// TestFleetAddFirstBootPivots is the acceptance: on the applied quickstart (pools on
// fcos42), `mcp fleet add` of a node booting fcos40 — once building the served config from
// the state, once fetching it from a real `mcp serve` — ends with the node on the pool's OS
// image and rendered config, the first-boot pivot in its event log and exactly one reboot.
// Then `mcp plan -detailed-exitcode` finds nothing to do (no second reboot is coming), and
// an apply adds no event to the new nodes.
func TestFleetAddFirstBootPivots(t *testing.T) {
	exclusive(t)
	dir := bootImagesQuickstart(t, "0s")
	url := startServe(t, dir)
	for _, tt := range []struct {
		node string
		args []string
	}{
		{"new-0", nil},
		{"new-1", []string{"-server", url}},
	} {
		args := append([]string{"fleet", "add", tt.node, "-pool", "worker", "-boot-image", fcos40}, tt.args...)
		code, out := mcpIn(t, dir, args...)
		if code != 0 || !strings.Contains(out, "pivoted to "+fcos42+" at its first boot") {
			t.Fatalf("%v: exit %d\n%s", args, code, out)
		}
		evs := nodeEvents(t, dir, tt.node)
		if got := kindsOf(evs); got != "firstboot working pivot reboot ready done" {
			t.Errorf("%s's events: %s", tt.node, got)
		}
		if evs[0].OSImage != fcos40 || evs[2].OSImage != fcos42 {
			t.Errorf("%s: firstboot from %q, pivot to %q", tt.node, evs[0].OSImage, evs[2].OSImage)
		}
		checkJoined(t, dir, tt.node, fcos40)
	}

	// What mcp serve serves is what fleet add builds from the state: the same bytes.
	_, ptr, rendered := readLocalState(t, dir)
	req, _ := http.NewRequest("GET", url+"/config/worker", nil)
	req.Header.Set("Accept", bootsrv.IgnitionAccept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	snap, err := bootsrv.Build(0, map[string]string{"worker": ptr["worker"]}, rendered)
	if err != nil {
		t.Fatal(err)
	}
	if built, err := snap.PoolConfig("worker", bootsrv.IgnitionAccept); err != nil || !bytes.Equal(built, served) {
		t.Errorf("built from the state (%v):\n%s\nserved:\n%s", err, built, served)
	}

	if code, out := mcpIn(t, dir, "plan", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Errorf("plan after the adds: exit %d, want 0 (nothing to do)\n%s", code, out)
	}
	before := map[string]int{"new-0": len(nodeEvents(t, dir, "new-0")), "new-1": len(nodeEvents(t, dir, "new-1"))}
	if code, out := mcpIn(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply after the adds: exit %d\n%s", code, out)
	}
	for n, k := range before {
		if evs := nodeEvents(t, dir, n); len(evs) != k {
			t.Errorf("apply logged %s: %s", n, kindsOf(evs[k:]))
		}
	}
}

// TestFleetAddOnThePoolsImage: a node booting the pool's OS image (the default boot image)
// neither pivots nor reboots.
func TestFleetAddOnThePoolsImage(t *testing.T) {
	exclusive(t)
	dir := bootImagesQuickstart(t, "0s")
	if code, out := mcpIn(t, dir, "fleet", "add", "new-0", "-pool", "worker"); code != 0 || !strings.Contains(out, "on its boot image") {
		t.Fatalf("fleet add: exit %d\n%s", code, out)
	}
	if got := kindsOf(nodeEvents(t, dir, "new-0")); got != "firstboot working done ready" {
		t.Errorf("events: %s", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "fleet/nodes/new-0/host.log")); bytes.Contains(b, []byte("pivot")) || bytes.Contains(b, []byte("reboot")) {
		t.Errorf("host.log:\n%s", b)
	}
	checkJoined(t, dir, "new-0", fcos42)
	if code, out := mcpIn(t, dir, "plan", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Errorf("plan: exit %d\n%s", code, out)
	}
}

// TestFleetAddKilledDuringFirstBootReboot: `mcp fleet add` killed (SIGKILL) while the new
// node is down for its first boot's reboot leaves the node in the fleet, first boot
// unfinished; the same command again finishes it — the machine came back by itself, so no
// second pivot and no second reboot.
func TestFleetAddKilledDuringFirstBootReboot(t *testing.T) {
	exclusive(t)
	dir := bootImagesQuickstart(t, "3s")
	cmd := exec.Command(mcpBinary(t), "-chdir="+dir, "fleet", "add", "new-0", "-pool", "worker", "-boot-image", fcos40)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, dir, func(e local.Event) bool { return e.Node == "new-0" && e.Kind == local.EventReboot })
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if n := readNode(t, dir, "new-0"); n.CurrentConfig != "" || n.Ready {
		t.Fatalf("killed in its reboot, new-0 is %+v\n%s", n, out.String())
	}
	code, again := mcpIn(t, dir, "fleet", "add", "new-0", "-pool", "worker", "-boot-image", fcos40)
	if code != 0 || !strings.Contains(again, "first boot was unfinished") {
		t.Fatalf("fleet add again: exit %d\n%s", code, again)
	}
	got := kindsOf(nodeEvents(t, dir, "new-0"))
	if got != "firstboot working pivot reboot ready done" {
		t.Errorf("events: %s (want one pivot and one reboot)", got)
	}
	checkJoined(t, dir, "new-0", fcos40)
}

// TestFirstBootAgentKilledAroundItsReboot boots a scratch root with the real Ignition client
// from a real `mcp serve` (as an old-image machine of the pool would), then runs the real
// `mcp agent` on it (-host=record, booted from fcos40): it pivots, records the pending
// reboot and asks for it — and is killed with SIGKILL while the machine goes down. The
// agent that starts after boot (a new boot id) finishes the first boot: Done on the pool's
// config in current.json, no pivot and no reboot of its own, both records gone.
//
// With `mcp serve -first-boot-agent`, as the unit that runs before kubelet does: the agent
// is given no boot server (the record embeds the config), and Ignition wrote the unit.
func TestFirstBootAgentKilledAroundItsReboot(t *testing.T) {
	exclusive(t)
	t.Run("fetched from the server", func(t *testing.T) { firstBootKilledAroundItsReboot(t, false) })
	t.Run("first-boot unit, config embedded", func(t *testing.T) { firstBootKilledAroundItsReboot(t, true) })
}

func firstBootKilledAroundItsReboot(t *testing.T, unit bool) {
	ign := ignitionClient(t)
	dir := bootImagesQuickstart(t, "0s")
	var serveArgs []string
	if unit {
		serveArgs = []string{"-first-boot-agent", "/usr/local/bin/mcp-agent"}
	}
	url := startServe(t, dir, serveArgs...)
	_, ptr, _ := readLocalState(t, dir)
	S := firstBoot(t, ign, url+"/config/worker")
	// What systemd does at a machine's first boot, after Ignition and before any unit of
	// the boot (the agent's first-boot unit among them): apply the presets Ignition left.
	if out, err := exec.Command("systemctl", "--root="+S, "preset-all").CombinedOutput(); err != nil {
		t.Fatalf("systemctl --root preset-all: %v\n%s", err, out)
	}
	bootID := filepath.Join(t.TempDir(), "boot_id")
	os.WriteFile(bootID, []byte("boot-1\n"), 0o644)
	args := []string{"-root", S, "-server", url}
	if unit {
		b, err := os.ReadFile(filepath.Join(S, "etc/systemd/system/mcp-firstboot.service"))
		if err != nil || !strings.Contains(string(b), "ExecStart=/usr/local/bin/mcp-agent -root / -once") {
			t.Fatalf("Ignition did not write the first-boot unit: %v\n%s", err, b)
		}
		// systemd's own preset made kubelet require it: the node does not join before it.
		if l, err := os.Readlink(filepath.Join(S, "etc/systemd/system/kubelet.service.requires/mcp-firstboot.service")); err != nil {
			t.Errorf("preset-all did not make kubelet require the first-boot unit: %v", err)
		} else if !strings.HasSuffix(l, "/mcp-firstboot.service") {
			t.Errorf("kubelet.service.requires/mcp-firstboot.service → %s", l)
		}
		args = []string{"-root", S} // what the unit runs: no server
	}
	agent := func() *exec.Cmd {
		return exec.Command(agentBinary(t), append(args, "-host=record", "-booted-image", fcos40,
			"-boot-id-file", bootID, "-once", "-reboot-wait", "1m")...)
	}

	first := agent()
	var log1 lockedBuffer
	first.Stderr = &log1
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(log1.String(), `"call":"reboot"`) {
		if time.Now().After(deadline) {
			first.Process.Kill()
			t.Fatalf("the agent never asked for the reboot:\n%s", log1.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	first.Process.Signal(syscall.SIGKILL)
	first.Wait()
	if !strings.Contains(log1.String(), `"call":"pivot `+fcos42+`"`) {
		t.Errorf("the first start did not pivot to %s:\n%s", fcos42, log1.String())
	}
	if _, err := os.Stat(filepath.Join(S, nodeexec.PendingPath)); err != nil {
		t.Fatalf("no pending record after the reboot was asked for: %v", err)
	}

	os.WriteFile(bootID, []byte("boot-2\n"), 0o644) // the machine rebooted
	second := agent()
	var log2 bytes.Buffer
	second.Stderr = &log2
	if err := second.Run(); err != nil {
		t.Fatalf("the agent after boot: %v\n%s", err, log2.String())
	}
	if strings.Contains(log2.String(), `"call":"pivot`) || strings.Contains(log2.String(), `"call":"reboot"`) {
		t.Errorf("the agent after boot pivoted or rebooted again:\n%s", log2.String())
	}
	if st := status(t, S); st.State != model.StateDone || st.Current != ptr["worker"] {
		t.Errorf("status after boot: %+v, want Done on %s", st, ptr["worker"])
	}
	var cur model.Rendered
	if b, err := os.ReadFile(filepath.Join(S, standalone.CurrentPath)); err != nil || json.Unmarshal(b, &cur) != nil || cur.Name != ptr["worker"] {
		t.Errorf("current.json: %v, %s", err, cur.Name)
	}
	for _, p := range []string{nodeexec.PendingPath, nodeexec.FirstBootPath} {
		if _, err := os.Stat(filepath.Join(S, p)); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", p, err)
		}
	}
}

// lockedBuffer is a buffer a process writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
