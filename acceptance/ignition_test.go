package acceptance

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/state/localstate"
	"github.com/mcpfleet/mcp/testkit/serveurl"
)

// ignitionClient is the real, unmodified Ignition client built by `make bin/ignition`.
func ignitionClient(t *testing.T) string {
	t.Helper()
	p, _ := filepath.Abs("../bin/ignition-client/ignition")
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("MCP_SKIP_IGNITION") == "1" {
			t.Skip("MCP_SKIP_IGNITION=1: not running the real Ignition client")
		}
		t.Fatalf("the real Ignition client is not built (%v): run `make bin/ignition` (make test does)", err)
	}
	return p
}

// startServe runs the real `mcp serve` on a free loopback port and returns its base URL.
func startServe(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(mcpBinary(t), append([]string{"serve", "-listen", "127.0.0.1:0", "-poll", "50ms"}, args...)...)
	cmd.Dir = dir
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return serveurl.Wait(t, stderr)
}

// TestIgnitionBootsFromServe: the quickstart is applied, `mcp serve` follows its state, and
// the real Ignition client — fetch and files stages, as on a first boot — writes a scratch
// root from /config/worker. Every file and unit of the pool's rendered config is there,
// with its content and mode.
func TestIgnitionBootsFromServe(t *testing.T) {
	exclusive(t)
	ign := ignitionClient(t)
	dir := applyQuickstart(t, map[string]string{"boot.hcl": `config "80-boot" {
  pools = ["worker"]
  file "/etc/mcp/boot.conf" {
    mode      = "0640"
    content   = templatefile("chrony.conf.tpl", { server = "boot.example" })
    on_change = ["none"]
  }
  unit "kubelet.service" {
    dropin "20-mcp.conf" { contents = "[Service]\nEnvironment=MCP=1\n" }
    on_change = ["none"]
  }
}
`})
	url := startServe(t, dir)

	st, err := (&localstate.Local{Path: filepath.Join(dir, "mcp.state")}).Read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	r := st.Rendered[st.Pointers["worker"]]
	if r == nil {
		t.Fatalf("no worker pointer in the state: %v", st.Pointers)
	}

	S := firstBoot(t, ign, url+"/config/worker")
	for _, f := range r.Files {
		got, err := os.ReadFile(filepath.Join(S, f.Path))
		if err != nil || string(got) != string(f.Contents) {
			t.Errorf("%s: %v, content %q, want %q", f.Path, err, got, f.Contents)
			continue
		}
		if st, _ := os.Stat(filepath.Join(S, f.Path)); st.Mode().Perm() != fs.FileMode(f.Mode) {
			t.Errorf("%s: mode %o, want %o", f.Path, st.Mode().Perm(), f.Mode)
		}
	}
	checkUnits(t, S, r.Units)
	if len(r.Files) != 4 {
		t.Errorf("the worker config has %d files, want 4", len(r.Files))
	}
	checkFirstBootRecord(t, S, r)
}

// checkFirstBootRecord: the served config's first-boot record is in the root Ignition
// wrote, mode 0600, naming the pool's rendered config and its OS image.
func checkFirstBootRecord(t *testing.T, S string, r *model.Rendered) {
	t.Helper()
	p := filepath.Join(S, content.FirstBootPath)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("the first-boot record: %v", err)
	}
	rec, err := content.ParseFirstBoot(b)
	if err != nil || rec != content.FirstBootOf(r) {
		t.Errorf("first-boot record %+v (%v), want %+v", rec, err, content.FirstBootOf(r))
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != content.FirstBootMode {
		t.Errorf("first-boot record mode %o, want %o", st.Mode().Perm(), content.FirstBootMode)
	}
}

// applyQuickstart applies a copy of the quickstart, with simulated durations of zero and
// files added to its configuration, through the real mcp binary, and returns its directory.
func applyQuickstart(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := localQuickstart(t, "0s", "0s")
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command(mcpBinary(t), "-chdir="+dir, "apply", "-auto-approve", "-no-color").CombinedOutput(); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	return dir
}

// firstBoot runs the real Ignition client's fetch and files stages, as on a node's first
// boot, against the config at url, into a fresh scratch root, and returns the root.
func firstBoot(t *testing.T, ign, url string) string {
	t.Helper()
	return firstBootWith(t, ign, "metal", "ignition.config.url="+url, nil)
}

// firstBootWith is firstBoot on an Ignition platform with a kernel argument and an
// environment of its own: platform "file" reads the user-data from IGNITION_CONFIG_FILE.
func firstBootWith(t *testing.T, ign, platform, karg string, extraEnv []string) string {
	t.Helper()
	return firstBootInto(t, ign, platform, karg, extraEnv, nil)
}

// firstBootInto is firstBootWith, with setup (when not nil) making the scratch root
// (sysroot, given) more like a machine's image before Ignition runs.
func firstBootInto(t *testing.T, ign, platform, karg string, extraEnv []string, setup func(S string)) string {
	t.Helper()
	R, S := bootScratch(t)
	if setup != nil {
		setup(S)
	}
	runIgnition(t, ign, R, S, platform, karg, extraEnv)
	return S
}

// bootScratch makes a directory R for a first boot's runtime files and, in R/sysroot (S),
// the root Ignition writes: the directories and account files it needs.
func bootScratch(t *testing.T) (R, S string) {
	t.Helper()
	R = t.TempDir()
	S = filepath.Join(R, "sysroot")
	for _, d := range []string{"etc", "home", "root"} {
		os.MkdirAll(filepath.Join(S, d), 0o755)
	}
	for _, d := range []string{"run", "etc", "usrlib"} {
		os.MkdirAll(filepath.Join(R, "sys", d), 0o755)
	}
	for name, body := range map[string]string{"etc/passwd": "root:x:0:0:root:/root:/bin/sh\n", "etc/group": "root:x:0:\n",
		"etc/shadow": "root:*:19000:0:99999:7:::\n", "etc/gshadow": "root:*::\n"} {
		os.WriteFile(filepath.Join(S, name), []byte(body), 0o644)
	}
	return R, S
}

// runIgnition runs the real Ignition client's fetch and files stages on the scratch root
// (bootScratch), on platform with a kernel argument and an environment of its own.
func runIgnition(t *testing.T, ign, R, S, platform, karg string, extraEnv []string) {
	t.Helper()
	os.WriteFile(filepath.Join(R, "cmdline"), []byte("ignition.firstboot ignition.platform.id="+platform+" "+karg+"\n"), 0o644)
	env := append(append(os.Environ(), extraEnv...), "IGNITION_KERNEL_CMDLINE_PATH="+filepath.Join(R, "cmdline"),
		"IGNITION_SYSTEM_RUNTIME_CONFIG_DIR="+filepath.Join(R, "sys/run"),
		"IGNITION_SYSTEM_LOCAL_CONFIG_DIR="+filepath.Join(R, "sys/etc"),
		"IGNITION_SYSTEM_CONFIG_DIR="+filepath.Join(R, "sys/usrlib"))
	common := []string{"--platform=" + platform, "--log-to-stdout", "--config-cache=" + filepath.Join(R, "ignition.json"),
		"--state-file=" + filepath.Join(R, "state"), "--neednet=" + filepath.Join(R, "neednet")}
	for _, stage := range [][]string{{"--stage=fetch", "--fetch-timeout=20s"}, {"--stage=files", "--root=" + S}} {
		cmd := exec.Command(ign, append(stage, common...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ignition %s: %v\n%s", stage[0], err, tail(out))
		}
	}
}

func checkUnits(t *testing.T, S string, units []model.Unit) {
	t.Helper()
	preset, _ := os.ReadFile(filepath.Join(S, "etc/systemd/system-preset/20-ignition.preset"))
	for _, u := range units {
		if u.Contents != "" {
			if got, err := os.ReadFile(filepath.Join(S, "etc/systemd/system", u.Name)); err != nil || string(got) != u.Contents {
				t.Errorf("unit %s: %v %q", u.Name, err, got)
			}
		}
		for _, d := range u.Dropins {
			if got, err := os.ReadFile(filepath.Join(S, "etc/systemd/system", u.Name+".d", d.Name)); err != nil || string(got) != d.Contents {
				t.Errorf("drop-in %s/%s: %v %q", u.Name, d.Name, err, got)
			}
		}
		if u.Enabled != nil && *u.Enabled && !strings.Contains(string(preset), "enable "+u.Name) {
			t.Errorf("unit %s enabled, but the preset says %q", u.Name, preset)
		}
	}
}

func tail(b []byte) string {
	s := string(b)
	if len(s) > 4000 {
		s = "…" + s[len(s)-4000:]
	}
	return s
}
