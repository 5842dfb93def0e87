package acceptance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/agent/standalone"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// mcpBinary builds the real mcp and mcp-agent commands once for the package's tests and
// returns mcp's path.
func mcpBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "mcp-acceptance-"); buildErr != nil {
			return
		}
		for _, cmd := range []string{"mcp", "mcp-agent"} {
			out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, cmd), "../cmd/"+cmd).CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", cmd, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "mcp")
}

// agentBinary is the lean mcp-agent, which the DaemonSet runs.
func agentBinary(t *testing.T) string {
	return filepath.Join(filepath.Dir(mcpBinary(t)), "mcp-agent")
}

// serveRendered serves rendered configs by name, as the boot server's /rendered/ does.
func serveRendered(t *testing.T, rs ...*model.Rendered) string {
	t.Helper()
	store := newRenderedStore(t)
	for _, r := range rs {
		store.put(r)
	}
	return store.url
}

func scratchRoot(t *testing.T) (root, bootID string) {
	t.Helper()
	root = t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\n"), 0o644)
	bootID = filepath.Join(t.TempDir(), "boot_id")
	os.WriteFile(bootID, []byte("boot-1\n"), 0o644)
	return root, bootID
}

func status(t *testing.T, root string) standalone.Status {
	t.Helper()
	var st standalone.Status
	b, err := os.ReadFile(filepath.Join(root, standalone.StatusPath))
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(b, &st)
	return st
}

// manyFiles is a write-heavy config: n files of size bytes under /etc/many/.
func manyFiles(name string, n, size int, fill string) *model.Rendered {
	r := &model.Rendered{Name: name}
	for i := 0; i < n; i++ {
		r.Files = append(r.Files, model.File{
			Entry:    model.Entry{Path: fmt.Sprintf("/etc/many/f%04d.conf", i), OnChange: []model.Policy{{Kind: model.PolicyNone}}},
			Mode:     0o644,
			Contents: bytes.Repeat([]byte(fill), size/len(fill)),
		})
	}
	return r
}

// TestAgentKilledMidApplyLeavesNoTornFile kills a real `mcp agent` with SIGKILL at many
// points of a write-heavy update: every managed file is always entirely its old or its
// new content, and a re-run converges.
func TestAgentKilledMidApplyLeavesNoTornFile(t *testing.T) {
	exclusive(t)
	bin := mcpBinary(t)
	const n, size = 1000, 4096
	old, next := manyFiles("rendered-w-old", n, size, "old-"), manyFiles("rendered-w-new", n, size, "NEW!")
	url := serveRendered(t, old, next)
	root, bootID := scratchRoot(t)
	agent := func(desired string) *exec.Cmd {
		return exec.Command(bin, "agent", "-once", "-host=record", "-root", root, "-server", url,
			"-desired", desired, "-boot-id-file", bootID)
	}
	if out, err := agent(old.Name).CombinedOutput(); err != nil {
		t.Fatalf("first apply: %v\n%s", err, out)
	}
	// Each kill starts from the old content and lands once the agent has begun writing
	// (f0000 is the first file it writes), at a random point of a window that shrinks
	// whenever a kill comes after the update finished: the kills land mid-write on any
	// machine, however its start-up and write times compare.
	snapshot := t.TempDir()
	if err := os.CopyFS(snapshot, os.DirFS(root)); err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(root, "etc/many/f0000.conf")
	rng := rand.New(rand.NewPCG(7, 7))
	window := 500 * time.Millisecond
	kills, midway := 0, 0
	for i := 0; i < 15; i++ {
		if i > 0 {
			os.RemoveAll(root)
			if err := os.CopyFS(root, os.DirFS(snapshot)); err != nil {
				t.Fatal(err)
			}
		}
		cmd := agent(next.Name)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		began := false
		for deadline := time.Now().Add(30 * time.Second); !began && time.Now().Before(deadline); {
			select {
			case <-exited:
				t.Fatal("the agent finished before a kill could be aimed")
			default:
			}
			if b, _ := os.ReadFile(first); len(b) > 0 && b[0] == 'N' {
				began = true
			} else {
				time.Sleep(200 * time.Microsecond)
			}
		}
		if !began {
			t.Fatal("the agent never began writing")
		}
		time.Sleep(time.Duration(rng.Int64N(int64(window))))
		if cmd.Process.Signal(syscall.SIGKILL) == nil {
			kills++
		}
		<-exited
		switch fresh := checkNoTornFiles(t, root, n, size); {
		case fresh == n:
			window /= 2
		case fresh > 0:
			midway++
		}
	}
	if midway < 5 {
		t.Fatalf("only %d of 15 kills landed in the middle of the update: the test proved too little", midway)
	}
	if out, err := agent(next.Name).CombinedOutput(); err != nil {
		t.Fatalf("re-run after kills: %v\n%s", err, out)
	}
	for i := 0; i < n; i++ {
		b, _ := os.ReadFile(filepath.Join(root, fmt.Sprintf("etc/many/f%04d.conf", i)))
		if !bytes.Equal(b, next.Files[i].Contents) {
			t.Fatalf("f%04d not converged after re-run", i)
		}
	}
	ents, _ := os.ReadDir(filepath.Join(root, "etc/many"))
	if len(ents) != n {
		t.Errorf("%d entries in /etc/many, want %d (temporary files left?)", len(ents), n)
	}
	if st := status(t, root); st.State != model.StateDone || st.Current != next.Name {
		t.Errorf("status after re-run: %+v", st)
	}
	t.Logf("%d kills, %d in the middle of writing; no torn file", kills, midway)
}

// checkNoTornFiles fails on a file that is neither entirely old nor entirely new; it
// returns how many are new.
func checkNoTornFiles(t *testing.T, root string, n, size int) int {
	t.Helper()
	fresh := 0
	for i := 0; i < n; i++ {
		b, err := os.ReadFile(filepath.Join(root, fmt.Sprintf("etc/many/f%04d.conf", i)))
		if err != nil {
			t.Fatalf("f%04d: %v", i, err)
		}
		if len(b) != size || !(bytes.Equal(b, bytes.Repeat([]byte("old-"), size/4)) || bytes.Equal(b, bytes.Repeat([]byte("NEW!"), size/4))) {
			t.Fatalf("f%04d is torn: %d bytes, starts %q", i, len(b), b[:min(len(b), 16)])
		}
		if b[0] == 'N' {
			fresh++
		}
	}
	return fresh
}

// TestAgentRebootProtocol: an update that needs a reboot records it as pending and asks
// the host to reboot; killed (the machine going down) and started again with a new boot
// id, the agent verifies the disk and reports Done on the new config.
func TestAgentRebootProtocol(t *testing.T) {
	exclusive(t)
	bin := mcpBinary(t)
	target := &model.Rendered{Name: "rendered-w-kargs", KernelArgs: []string{"nosmt"},
		Files: []model.File{{Entry: model.Entry{Path: "/etc/sysctl.d/90-mcp.conf"}, Mode: 0o644, Contents: []byte("vm.swappiness=10\n")}}}
	url := serveRendered(t, target)
	root, bootID := scratchRoot(t)
	var logs bytes.Buffer
	cmd := exec.Command(bin, "agent", "-once", "-host=record", "-root", root, "-server", url, "-desired", target.Name,
		"-boot-id-file", bootID, "-reboot-wait=1m")
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), `"call":"reboot"`) {
		if time.Now().After(deadline) {
			t.Fatalf("the agent never asked for a reboot:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(root, nodeexec.PendingPath)); err != nil {
		t.Fatalf("no pending record before the reboot: %v", err)
	}
	if !strings.Contains(logs.String(), `"call":"kargs +nosmt -"`) {
		t.Errorf("kernel arguments not set before the reboot:\n%s", logs.String())
	}
	cmd.Process.Signal(syscall.SIGKILL) // the machine goes down
	cmd.Wait()
	os.WriteFile(bootID, []byte("boot-2\n"), 0o644)
	if out, err := exec.Command(bin, "agent", "-once", "-host=record", "-root", root, "-server", url,
		"-desired", target.Name, "-boot-id-file", bootID).CombinedOutput(); err != nil {
		t.Fatalf("agent after boot: %v\n%s", err, out)
	}
	if st := status(t, root); st.State != model.StateDone || st.Current != target.Name {
		t.Errorf("status after boot: %+v", st)
	}
	if _, err := os.Stat(filepath.Join(root, nodeexec.PendingPath)); !os.IsNotExist(err) {
		t.Errorf("pending record left after boot: %v", err)
	}
	// Started again in the same boot with a pending record, it reports the reboot missing.
	root2, bootID2 := scratchRoot(t)
	cmd = exec.Command(bin, "agent", "-once", "-host=record", "-root", root2, "-server", url, "-desired", target.Name,
		"-boot-id-file", bootID2, "-reboot-wait=200ms")
	out, err := cmd.CombinedOutput()
	if err == nil || status(t, root2).State != model.StateDegraded || !strings.Contains(status(t, root2).Reason, "did not go down") {
		t.Errorf("a reboot that never happens: err %v, status %+v\n%s", err, status(t, root2), out)
	}
}

// TestAgentRecordHostLinksUnits: the record host (a machine with no systemd) enables a unit
// as systemctl --root would, by linking it in the node root, so the agent's drift check
// finds the unit enabled after the update, and reports it when the link is removed.
func TestAgentRecordHostLinksUnits(t *testing.T) {
	exclusive(t)
	bin := mcpBinary(t)
	on := true
	target := &model.Rendered{Name: "rendered-w-unit", Units: []model.Unit{{Name: "mcp-web.service", Enabled: &on,
		Contents: "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n",
		OnChange: []model.Policy{{Kind: model.PolicyRestart, Unit: "mcp-web.service"}}}}}
	url := serveRendered(t, target)
	root, bootID := scratchRoot(t)
	agent := func() {
		t.Helper()
		if out, err := exec.Command(bin, "agent", "-once", "-host=record", "-root", root, "-server", url,
			"-desired", target.Name, "-boot-id-file", bootID).CombinedOutput(); err != nil {
			t.Fatalf("agent: %v\n%s", err, out)
		}
	}
	agent()
	wants := filepath.Join(root, "etc/systemd/system/multi-user.target.wants/mcp-web.service")
	if l, err := os.Readlink(wants); err != nil || l != "/etc/systemd/system/mcp-web.service" {
		t.Fatalf("wants-link after the update: %q %v", l, err)
	}
	agent() // on its config: checks drift
	if st := status(t, root); st.State != model.StateDone || len(st.Drift) != 0 {
		t.Fatalf("status after the update: %+v", st)
	}
	os.Remove(wants)
	agent()
	if st := status(t, root); len(st.Drift) != 1 || st.Drift[0].Kind != model.DriftEnabled ||
		st.Drift[0].Path != "/etc/systemd/system/mcp-web.service" || st.Drift[0].Expected != "enabled" {
		t.Errorf("status after the link was removed: %+v", st)
	}
}
