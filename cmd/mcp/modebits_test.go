package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Setuid, setgid and sticky bits work end to end on a local fleet, as Ignition honours
// them: the plan shows the mode, apply writes it on every node (judged from the nodes'
// files), a bit added by hand on a node is drift, and a node added with mcp fleet add
// boots a sticky directory and a setuid file with their bits.
func TestSpecialModeBitsEndToEnd(t *testing.T) {
	dir := quickstart(t)
	os.WriteFile(filepath.Join(dir, "modes.hcl"), []byte(`config "80-modes" {
  pools = ["worker"]
  file "/usr/local/bin/tool" {
    mode      = "4755"
    content   = "#!/bin/sh\n"
    on_change = ["none"]
  }
  file "/etc/plain" {
    mode      = "0755"
    content   = "p"
    on_change = ["none"]
  }
  directory "/var/spool/drop" {
    mode      = "1777"
    on_change = ["none"]
  }
}
`), 0o644)
	if code, out, errOut := mcp(t, dir, "plan", "-no-color"); code != 0 || !strings.Contains(out, "4755") {
		t.Fatalf("plan: exit %d, want the mode 4755 shown\n%s%s", code, out, errOut)
	}
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	mode := func(node, p string) fs.FileMode {
		t.Helper()
		st, err := os.Lstat(filepath.Join(dir, "fleet/nodes", node, "root", p))
		if err != nil {
			t.Fatal(err)
		}
		return st.Mode()
	}
	for _, n := range []string{"worker-0", "worker-3"} {
		if m := mode(n, "usr/local/bin/tool"); m&fs.ModeSetuid == 0 || m.Perm() != 0o755 {
			t.Errorf("%s: /usr/local/bin/tool is %v, want setuid 0755", n, m)
		}
		if m := mode(n, "var/spool/drop"); m&fs.ModeSticky == 0 || m.Perm() != 0o777 {
			t.Errorf("%s: /var/spool/drop is %v, want sticky 0777", n, m)
		}
	}
	if code, out, errOut := mcp(t, dir, "drift", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Fatalf("drift right after apply: exit %d\n%s%s", code, out, errOut)
	}
	os.Chmod(filepath.Join(dir, "fleet/nodes/worker-1/root/etc/plain"), 0o755|fs.ModeSetuid)
	code, out, errOut := mcp(t, dir, "drift", "-detailed-exitcode", "-no-color")
	if code != 2 || !strings.Contains(out, "worker-1") || !strings.Contains(out, "4755") {
		t.Errorf("a setuid bit added on worker-1: drift exit %d, want 2 naming it\n%s%s", code, out, errOut)
	}
	if code, out, errOut := mcp(t, dir, "fleet", "add", "new-0", "-pool", "worker"); code != 0 {
		t.Fatalf("fleet add: exit %d\n%s%s", code, out, errOut)
	}
	if m := mode("new-0", "var/spool/drop"); m&fs.ModeSticky == 0 || m.Perm() != 0o777 {
		t.Errorf("new-0: /var/spool/drop is %v, want sticky 0777", m)
	}
	if m := mode("new-0", "usr/local/bin/tool"); m&fs.ModeSetuid == 0 {
		t.Errorf("new-0: /usr/local/bin/tool is %v, want setuid", m)
	}
}
