package acceptance

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec"
	"github.com/mcpfleet/mcp/nodeexec/systemdhost"
	"github.com/mcpfleet/mcp/steps"
)

// systemdManager is a real systemd manager running for one test, contained in a cgroup of
// its own (testdata/systemd-manager.sh).
type systemdManager struct {
	Base    string // XDG dirs: run/, config/, home/
	UnitDir string // where user units are read from
	Bus     string // D-Bus address of the manager's bus
}

// startSystemd starts the manager, or skips the test with the reason when this machine
// cannot contain one safely.
func startSystemd(t *testing.T, env ...string) *systemdManager {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPING real-systemd test: needs root to create cgroups")
	}
	if _, err := os.Stat("/lib/systemd/systemd"); err != nil {
		t.Skip("SKIPPING real-systemd test: /lib/systemd/systemd is not installed")
	}
	var rb [4]byte
	rand.Read(rb[:])
	name := "mcp-test-" + hex.EncodeToString(rb[:])
	base := t.TempDir()
	var stderr bytes.Buffer
	cmd := exec.Command("bash", "testdata/systemd-manager.sh", name, base)
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { stopSystemd(t, cmd, exited, name) })
	m := &systemdManager{Base: base, UnitDir: filepath.Join(base, "config/systemd/user"),
		Bus: "unix:path=" + filepath.Join(base, "run/bus")}
	deadline := time.Now().Add(15 * time.Second)
	for !isSocket(filepath.Join(base, "run/bus")) || !isSocket(filepath.Join(base, "run/systemd/private")) {
		select {
		case err := <-exited:
			exited <- err
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.ExitCode() == 3 {
				t.Skipf("SKIPPING real-systemd test: the cgroup containment guard refused: %s", stderr.String())
			}
			t.Fatalf("systemd manager exited: %v\n%s", err, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			console, _ := os.ReadFile(filepath.Join(base, "console.log"))
			t.Fatalf("systemd manager not up after 15s\n%s\n%s", stderr.String(), console)
		}
	}
	return m
}

func isSocket(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode()&os.ModeSocket != 0
}

// stopSystemd: SIGTERM the manager, SIGKILL whatever is left in its cgroup (and only
// there), then remove the cgroup directories depth-first.
func stopSystemd(t *testing.T, cmd *exec.Cmd, exited chan error, name string) {
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
	}
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*/" + name)
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && e.Name() == "cgroup.procs" {
				b, _ := os.ReadFile(p)
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}
			return nil
		})
	}
	time.Sleep(100 * time.Millisecond)
	for _, d := range dirs {
		var all []string
		filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				all = append(all, p)
			}
			return nil
		})
		for i := len(all) - 1; i >= 0; i-- {
			if err := os.Remove(all[i]); err != nil {
				t.Logf("removing cgroup %s: %v", all[i], err)
			}
		}
	}
}

func TestSystemdHostAgainstRealManager(t *testing.T) {
	m := startSystemd(t)
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", m.Bus)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h, err := systemdhost.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()

	marker := filepath.Join(m.Base, "started")
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(m.UnitDir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("mcp-ok.service", "[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/sh -c 'echo x >> "+marker+"'\n[Install]\nWantedBy=default.target\n")
	write("mcp-bad.service", "[Service]\nExecStart=/bin/false\n")
	if err := h.DaemonReload(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.RestartUnit(ctx, "mcp-ok.service"); err != nil {
		t.Fatalf("restart (start) of a good unit: %v", err)
	}
	if err := h.RestartUnit(ctx, "mcp-ok.service"); err != nil {
		t.Fatalf("restart of a running unit: %v", err)
	}
	if b, _ := os.ReadFile(marker); strings.Count(string(b), "x") != 2 {
		t.Errorf("the unit ran %d times, want 2 (start, restart)", strings.Count(string(b), "x"))
	}
	if err := h.EnableUnit(ctx, "mcp-ok.service", true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(m.UnitDir, "default.target.wants/mcp-ok.service")); err != nil {
		t.Errorf("enable made no wants link: %v", err)
	}
	if err := h.EnableUnit(ctx, "mcp-ok.service", false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(m.UnitDir, "default.target.wants/mcp-ok.service")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("disable left the wants link: %v", err)
	}
	// A job can end "done" while the unit failed: the host must report the failure.
	var failErr error
	for i := 0; i < 20 && failErr == nil; i++ { // /bin/false may still be starting when the job ends
		failErr = h.RestartUnit(ctx, "mcp-bad.service")
		time.Sleep(50 * time.Millisecond)
	}
	if failErr == nil || !strings.Contains(failErr.Error(), "mcp-bad.service") || !strings.Contains(failErr.Error(), "failed") {
		t.Fatalf("restart of a failing unit: %v, want an error naming it as failed", failErr)
	}
}

// TestExecutorWithRealSystemd runs the node agent's update — unit written through os.Root,
// daemon-reload, enable, restart — against a real systemd manager reading units from the
// node root, and shows a failing unit reported as failed and rolled back.
func TestExecutorWithRealSystemd(t *testing.T) {
	root := t.TempDir()
	unitDir := filepath.Join(root, "etc/systemd/system")
	os.MkdirAll(unitDir, 0o755)
	m := startSystemd(t, "SYSTEMD_UNIT_PATH="+unitDir+":")
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", m.Bus)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h, err := systemdhost.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	marker := filepath.Join(m.Base, "ran")
	yes := true
	good := &model.Rendered{Name: "rendered-w-1", Units: []model.Unit{{Name: "mcp-web.service", Enabled: &yes,
		Contents: "[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/sh -c 'echo run >> " + marker + "'\n[Install]\nWantedBy=default.target\n",
		Dropins:  []model.Dropin{{Name: "10-env.conf", Contents: "[Service]\nEnvironment=MODE=test\n"}},
		OnChange: []model.Policy{{Kind: model.PolicyRestart, Unit: "mcp-web.service"}}}}}
	a := &nodeexec.Agent{Exec: &nodeexec.Executor{Root: root, Host: h}, State: &memState{}, RebootWait: time.Second}
	todo := steps.Derive(nil, good)
	var done []string
	if err := a.Update(ctx, nil, good, todo, func(s model.Step) { done = append(done, s.Key()) }); err != nil {
		t.Fatalf("update: %v", err)
	}
	if want := []string{"write mcp-web.service", "daemon-reload", "restart mcp-web.service"}; strings.Join(done, ",") != strings.Join(want, ",") {
		t.Errorf("steps done %v, want %v", done, want)
	}
	p, err := h.Conn.GetUnitPropertyContext(ctx, "mcp-web.service", "ActiveState")
	if err != nil || p.Value.Value() != "active" {
		t.Errorf("mcp-web.service: %v %v, want active", p, err)
	}
	if env, err := h.Conn.GetServicePropertyContext(ctx, "mcp-web.service", "Environment"); err != nil || !strings.Contains(fmt.Sprint(env.Value.Value()), "MODE=test") {
		t.Errorf("drop-in not in effect: %v %v", env, err)
	}
	if _, err := os.Lstat(filepath.Join(m.UnitDir, "default.target.wants/mcp-web.service")); err != nil {
		t.Errorf("not enabled: %v", err)
	}

	// The next config's unit fails to start: reported as failed, and the disk rolled back.
	bad := &model.Rendered{Name: "rendered-w-2", Units: []model.Unit{{Name: "mcp-web.service", Enabled: &yes,
		Contents: "[Service]\nType=oneshot\nExecStart=/bin/false\n[Install]\nWantedBy=default.target\n",
		Dropins:  good.Units[0].Dropins, OnChange: good.Units[0].OnChange}}}
	st := &memState{}
	a.State = st
	err = a.Update(ctx, good, bad, steps.Derive(good, bad), func(model.Step) {})
	if err == nil || !strings.Contains(err.Error(), "mcp-web.service") || !strings.Contains(err.Error(), "rolled back to rendered-w-1") {
		t.Fatalf("failing unit: %v, want its failure and a rollback", err)
	}
	if st.state != model.StateDegraded {
		t.Errorf("state %q, want Degraded", st.state)
	}
	if b, _ := os.ReadFile(filepath.Join(unitDir, "mcp-web.service")); string(b) != good.Units[0].Contents {
		t.Errorf("unit file not rolled back: %q", b)
	}
}

// TestEnablementDriftWithRealSystemd: the disk check's verdict on whether a unit is
// enabled agrees with the real manager's own (its UnitFileState, what systemctl is-enabled
// says), when the manager made the links — on the update, and when it enabled and disabled
// units behind mcp's back — and a plan's restore, through systemdhost's EnableUnitFiles and
// DisableUnitFiles, puts enablement back. The manager's unit directory is the node root's
// etc/systemd/system, so it links there as a system manager would in that root.
func TestEnablementDriftWithRealSystemd(t *testing.T) {
	root := t.TempDir()
	unitDir := filepath.Join(root, "etc/systemd/system")
	os.MkdirAll(unitDir, 0o755)
	m := startSystemd(t, "SYSTEMD_UNIT_PATH="+unitDir+":", "MCP_USER_UNIT_DIR="+unitDir)
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", m.Bus)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h, err := systemdhost.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	on, off := true, false
	none := []model.Policy{{Kind: model.PolicyNone}}
	cfg := &model.Rendered{Name: "rendered-w-1", Units: []model.Unit{
		{Name: "mcp-web.service", Enabled: &on, OnChange: none,
			Contents: "[Service]\nType=oneshot\nExecStart=/bin/true\n[Install]\nWantedBy=default.target\nAlias=mcp-www.service\n"},
		{Name: "mcp-off.service", Enabled: &off, OnChange: none,
			Contents: "[Service]\nType=oneshot\nExecStart=/bin/true\n[Install]\nWantedBy=default.target\n"}}}
	ex := &nodeexec.Executor{Root: root, Host: h}
	a := &nodeexec.Agent{Exec: ex, State: &memState{}, RebootWait: time.Second}
	states := func() string {
		t.Helper()
		if err := h.DaemonReload(ctx); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, u := range cfg.Units {
			p, err := h.Conn.GetUnitPropertyContext(ctx, u.Name, "UnitFileState")
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, u.Name+"="+fmt.Sprint(p.Value.Value()))
		}
		return strings.Join(out, " ")
	}
	kinds := func() string {
		t.Helper()
		drift, err := ex.Verify(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range drift {
			out = append(out, d.String())
		}
		return strings.Join(out, "; ")
	}
	const asConfigured = "mcp-web.service=enabled mcp-off.service=disabled"

	if err := a.Update(ctx, nil, cfg, steps.Derive(nil, cfg), func(model.Step) {}); err != nil {
		t.Fatalf("update: %v", err)
	}
	if got := states(); got != asConfigured {
		t.Errorf("systemd after the update: %s, want %s", got, asConfigured)
	}
	if l, err := os.Readlink(filepath.Join(unitDir, "default.target.wants/mcp-web.service")); err != nil {
		t.Errorf("the manager made no wants-link in the node root: %v", err)
	} else {
		t.Logf("the manager's link: default.target.wants/mcp-web.service → %s", l)
	}
	if got := kinds(); got != "" {
		t.Errorf("drift right after the update: %s", got)
	}

	// Behind mcp's back, through the manager itself: systemctl disable mcp-web, enable mcp-off.
	if _, err := h.Conn.DisableUnitFilesContext(ctx, []string{"mcp-web.service"}, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Conn.EnableUnitFilesContext(ctx, []string{"mcp-off.service"}, false, false); err != nil {
		t.Fatal(err)
	}
	if got := states(); got != "mcp-web.service=disabled mcp-off.service=enabled" {
		t.Fatalf("systemd after the drift: %s", got)
	}
	drift, err := ex.Verify(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := "/etc/systemd/system/mcp-web.service: enabled (expected enabled, found disabled (no default.target.wants/mcp-web.service, no mcp-www.service)); " +
		"/etc/systemd/system/mcp-off.service: enabled (expected disabled, found enabled (default.target.wants/mcp-off.service))"
	if got := kinds(); got != want {
		t.Errorf("drift:\n got %s\nwant %s", got, want)
	}

	// The plan's restore: each unit written again, which asks the manager to link.
	restore := steps.Restore(nil, drift, cfg, steps.Host{})
	if err := a.Update(ctx, cfg, cfg, restore, func(model.Step) {}); err != nil {
		t.Fatalf("restore (%v): %v", restore, err)
	}
	if got := states(); got != asConfigured {
		t.Errorf("systemd after the restore: %s, want %s", got, asConfigured)
	}
	if got := kinds(); got != "" {
		t.Errorf("drift after the restore: %s", got)
	}
}

// memState is a NodeState in memory.
type memState struct{ state, current, reason string }

func (m *memState) Working(string) error    { m.state = model.StateWorking; return nil }
func (m *memState) Done(c string) error     { m.state, m.current = model.StateDone, c; return nil }
func (m *memState) Degraded(r string) error { m.state, m.reason = model.StateDegraded, r; return nil }
func (m *memState) BootID() (string, error) { return "boot", nil }
