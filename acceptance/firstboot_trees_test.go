package acceptance

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpfleet/mcp/model"
)

// treesConfig is what real first-boot configs use beside files: directories, links, the
// core user's SSH keys (an HCL block, and the passwd.users of two real Fedora CoreOS
// Butane configs), other users and a group (first boot only: a real Butane config's users,
// and an ignition attribute's group).
var treesConfig = map[string]string{
	"trees.hcl": `config "80-trees" {
  pools = ["worker"]
  directory "/etc/trees" {
    mode  = "0750"
    group = "core"
  }
  directory "/var/lib/trees/spool" {
    mode      = "1777"
    on_change = ["none"]
  }
  link "/etc/trees/current" {
    target    = "../../var/lib/trees/spool"
    on_change = ["none"]
  }
  ssh_authorized_keys {
    keys = ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHcl9a5Vd6ZxQ5E2d0zPqkM2m8yZL0f5Qm3i6KXgY3kH ops@example"]
  }
}

config "81-auth" {
  pools  = ["worker"]
  butane = file("authentication.bu")
}

config "82-tz" {
  pools  = ["worker"]
  butane = file("time-zone.bu")
}

config "83-group" {
  pools    = ["worker"]
  ignition = jsonencode({ ignition = { version = "3.4.0" }, passwd = { groups = [{ name = "ops", gid = 4242 }] } })
}
`,
}

// TestFirstBootTreesAndUsers: directories, links, the core user's keys, more users and a
// group are applied to the local fleet (whose worker roots link /home to var/home, as
// CoreOS does), served by `mcp serve`, and booted by the real Ignition client into a
// scratch root whose /home is that link too. The scratch root is judged: directories
// with their modes, links with their targets, the keys file (MCO's path, 0600, the core
// user's), the users' and the group's entries. The fleet is then drift clean and plans
// nothing.
func TestFirstBootTreesAndUsers(t *testing.T) {
	exclusive(t)
	ign := ignitionClient(t)
	dir := localQuickstart(t, "0s", "0s")
	for name, body := range treesConfig {
		writeFile(t, filepath.Join(dir, name), body)
	}
	for _, name := range []string{"authentication.bu", "time-zone.bu"} {
		b, err := os.ReadFile(filepath.Join("../config/testdata/fcos", name))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, name), string(b))
	}
	roots, _ := filepath.Glob(filepath.Join(dir, "fleet/nodes/worker-*/root"))
	for _, root := range roots {
		coreOSHome(t, root)
	}
	if out, err := exec.Command(mcpBinary(t), "-chdir="+dir, "apply", "-auto-approve", "-no-color").CombinedOutput(); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	for _, root := range roots {
		judgeTrees(t, "local node "+filepath.Base(filepath.Dir(root)), root)
	}
	if code, out := mcpIn(t, dir, "plan", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Errorf("plan after apply: exit %d, want 0 (no drift, nothing to do)\n%s", code, out)
	}

	url := startServe(t, dir)
	S := firstBootInto(t, ign, "metal", "ignition.config.url="+url+"/config/worker", nil, func(S string) {
		// A CoreOS image has the core user, and /home linked into /var.
		appendTo(t, filepath.Join(S, "etc/passwd"), "core:x:1000:1000:CoreOS Admin:/var/home/core:/bin/bash\n")
		appendTo(t, filepath.Join(S, "etc/group"), "core:x:1000:\n")
		appendTo(t, filepath.Join(S, "etc/shadow"), "core:*:19000:0:99999:7:::\n")
		appendTo(t, filepath.Join(S, "etc/gshadow"), "core:!::\n")
		os.Remove(filepath.Join(S, "home"))
		coreOSHome(t, S)
		// Ignition writes a user's keys as that user: the test's temporary directories
		// (0700, root's) must let the users reach the root, as / does on a machine.
		for d := filepath.Dir(S); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
			os.Chmod(d, 0o755)
		}
	})
	judgeTrees(t, "scratch root", S)
	passwd, _ := os.ReadFile(filepath.Join(S, "etc/passwd"))
	for _, u := range []string{"jlebon", "miabbott"} {
		if !strings.Contains(string(passwd), "\n"+u+":") {
			t.Errorf("scratch root: user %s is not in etc/passwd:\n%s", u, passwd)
		}
		keys, err := os.ReadFile(filepath.Join(S, "var/home", u, ".ssh/authorized_keys.d/ignition"))
		if err != nil || !strings.HasPrefix(string(keys), "ssh-") {
			t.Errorf("scratch root: %s's keys: %v %q", u, err, keys)
		}
	}
	if group, _ := os.ReadFile(filepath.Join(S, "etc/group")); !strings.Contains(string(group), "\nops:x:4242:") {
		t.Errorf("scratch root: group ops is not in etc/group:\n%s", group)
	}
}

// coreOSHome gives root CoreOS's /home: a link to var/home, holding the core user's home.
func coreOSHome(t *testing.T, root string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, "var/home"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "var/home/core"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.Lchown(filepath.Join(root, "var/home/core"), 1000, 1000)
	if err := os.Symlink("var/home", filepath.Join(root, "home")); err != nil {
		t.Fatal(err)
	}
}

// judgeTrees checks the trees config in root: directories, links, the keys file (at
// var/home/core, through the /home link).
func judgeTrees(t *testing.T, who, root string) {
	t.Helper()
	for p, want := range map[string]fs.FileMode{"etc/trees": 0o750, "var/lib/trees/spool": 0o777 | fs.ModeSticky,
		"var/home/core/.ssh": 0o700, "var/home/core/.ssh/authorized_keys.d": 0o700} {
		st, err := os.Lstat(filepath.Join(root, p))
		if err != nil || !st.IsDir() || st.Mode()&(fs.ModePerm|fs.ModeSticky) != want {
			t.Errorf("%s: directory %s: %v, mode %v, want %v", who, p, err, modeOf(st), want)
		}
	}
	for p, want := range map[string]string{"etc/trees/current": "../../var/lib/trees/spool",
		"etc/localtime": "../usr/share/zoneinfo/America/New_York", "home": "var/home"} {
		if got, err := os.Readlink(filepath.Join(root, p)); err != nil || got != want {
			t.Errorf("%s: link %s → %q (%v), want → %q", who, p, got, err, want)
		}
	}
	kp := filepath.Join(root, "var/home/core/.ssh/authorized_keys.d/ignition")
	keys, err := os.ReadFile(kp)
	want := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHcl9a5Vd6ZxQ5E2d0zPqkM2m8yZL0f5Qm3i6KXgY3kH ops@example\nssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQDHn2eh...\n"
	if err != nil || string(keys) != want {
		t.Errorf("%s: %s: %v, %q, want %q", who, model.SSHKeysFile, err, keys, want)
	}
	if st, err := os.Stat(kp); err == nil {
		sys := st.Sys().(*syscall.Stat_t)
		if st.Mode().Perm() != 0o600 || sys.Uid != 1000 || sys.Gid != 1000 {
			t.Errorf("%s: %s: mode %v, owner %d:%d, want 0600 core:core (1000:1000)", who, model.SSHKeysFile, st.Mode().Perm(), sys.Uid, sys.Gid)
		}
	}
	if st, err := os.Stat(filepath.Join(root, "etc/trees")); err == nil && st.Sys().(*syscall.Stat_t).Gid != 1000 {
		t.Errorf("%s: etc/trees: group %d, want core (1000)", who, st.Sys().(*syscall.Stat_t).Gid)
	}
}

func modeOf(st fs.FileInfo) string {
	if st == nil {
		return "(none)"
	}
	return fmt.Sprint(st.Mode())
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendTo(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line); err != nil {
		t.Fatal(err)
	}
}
