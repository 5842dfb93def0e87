package main

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// openshiftDocs is the corpus of OpenShift's documentation's Butane (variant openshift).
const openshiftDocs = "../../acceptance/testdata/corpus/openshift-docs/"

// freshFleet is a configuration directory with a fleet `mcp fleet init` made (nodes) and
// a worker pool that applies without waiting; hcl and files are added to it.
func freshFleet(t *testing.T, nodes, hcl string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if code, _, errOut := mcp(t, dir, "fleet", "init", "fleet", "-nodes", nodes); code != 0 {
		t.Fatal(errOut)
	}
	files["main.hcl"] = `provider "local" {
  fleet           = "./fleet"
  drain_duration  = "0s"
  reboot_duration = "0s"
}

pool "worker" {
  node_selector = { "node-role.kubernetes.io/worker" = "" }
}
` + hcl
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// nodeKernelArgs are the kernel arguments node's machine runs, as its host reports them.
func nodeKernelArgs(t *testing.T, dir, node string) []string {
	t.Helper()
	var n struct {
		KernelArgs []string `json:"kernel_args"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "fleet/nodes", node, "node.json"))
	if err != nil || json.Unmarshal(b, &n) != nil {
		t.Fatalf("node %s: %v %s", node, err, b)
	}
	return n.KernelArgs
}

// The OpenShift documentation's kdump config, as it is (Butane, variant openshift, its
// pool from its role label), on a fleet `mcp fleet init` just made: the plan shows its
// kernel argument, apply enables the OS's kdump.service and the machines boot with
// crashkernel=256M, judged from the nodes. (Raw, the kernel argument was dropped; and
// enabling kdump.service failed on roots that held no unit of the OS's.)
func TestOpenShiftKdumpOnAFreshFleet(t *testing.T) {
	bu, err := os.ReadFile(openshiftDocs + "99-worker-kdump.bu")
	if err != nil {
		t.Fatal(err)
	}
	dir := freshFleet(t, "worker=2", "\nconfig \"99-worker-kdump\" {\n  butane = file(\"99-worker-kdump.bu\")\n}\n",
		map[string]string{"99-worker-kdump.bu": string(bu)})
	code, out, errOut := mcp(t, dir, "plan", "-no-color")
	if code != 0 || !strings.Contains(out, "+ crashkernel=256M") || !strings.Contains(out, "+ unit kdump.service (enabled unset → true)") ||
		!strings.Contains(out, "write 2 files, write 1 unit, kargs, reboot") {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	for _, node := range []string{"worker-0", "worker-1"} {
		if k := nodeKernelArgs(t, dir, node); !slices.Equal(k, []string{"crashkernel=256M"}) {
			t.Errorf("%s runs kernel arguments %q", node, k)
		}
		root := filepath.Join(dir, "fleet/nodes", node, "root")
		if target, err := os.Readlink(filepath.Join(root, "etc/systemd/system/multi-user.target.wants/kdump.service")); err != nil ||
			target != "/usr/lib/systemd/system/kdump.service" {
			t.Errorf("%s: kdump.service enabled as %q, %v", node, target, err)
		}
		if b, _ := os.ReadFile(filepath.Join(root, "etc/kdump.conf")); string(b) != "path /var/crash\ncore_collector makedumpfile -l --message-level 7 -d 31\n" {
			t.Errorf("%s: /etc/kdump.conf %q", node, b)
		}
	}
	if code, out, errOut := mcp(t, dir, "drift", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Errorf("drift after apply: exit %d\n%s%s", code, out, errOut)
	}
}

// gz is data gzip-compressed.
func gz(data []byte) []byte {
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	z.Write(data)
	z.Close()
	return b.Bytes()
}

// Files whose inline contents are gzip-compressed — in Butane, in a MachineConfig, in the
// Butane documentation's own openshift example — reach running nodes byte for byte as
// Ignition writes them (decompressed), drift compares the decompressed bytes, and apply
// restores them. (They were first boot only: running nodes never got them.)
func TestCompressedFilesAreManagedDayTwo(t *testing.T) {
	bin := append([]byte("#!/bin/sh\n\x00\xff\x1b[2J"), bytes.Repeat([]byte("zz"), 5000)...)
	url := "data:;base64," + base64.StdEncoding.EncodeToString(gz(bin))
	example, err := os.ReadFile(openshiftDocs + "butane-compression.bu")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"z.bu": fmt.Sprintf("variant: fcos\nversion: 1.6.0\nstorage:\n  files:\n    - path: /etc/z.bin\n      mode: 0755\n"+
			"      contents: {compression: gzip, source: %q}\n", url),
		"mc.yaml": fmt.Sprintf("apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: 60-mc\n"+
			"spec:\n  config:\n    ignition: {version: 3.2.0}\n    storage:\n      files:\n        - path: /etc/mc.txt\n"+
			"          contents: {compression: gzip, source: %q}\n", "data:;base64,"+base64.StdEncoding.EncodeToString(gz([]byte("from a MachineConfig\n")))),
		"example.bu": string(example),
	}
	hcl := `
config "50-z" {
  pools  = ["worker"]
  butane = file("z.bu")
}

config "60-mc" {
  pools         = ["worker"]
  machineconfig = file("mc.yaml")
}

config "70-example" {
  butane = file("example.bu")
}
`
	dir := freshFleet(t, "worker=1", hcl, files)
	code, out, errOut := mcp(t, dir, "plan", "-no-color")
	if code != 0 || !strings.Contains(out, "write 3 files") || strings.Contains(errOut, "First boot only") {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	root := filepath.Join(dir, "fleet/nodes/worker-0/root")
	want := map[string][]byte{"etc/z.bin": bin, "etc/mc.txt": []byte("from a MachineConfig\n")}
	// The documentation's /opt/file2 (through /opt → var/opt, as on CoreOS): the lorem
	// ipsum its gzip holds.
	if b, err := os.ReadFile(filepath.Join(root, "var/opt/file2")); err != nil || !bytes.HasPrefix(b, []byte("Lorem ipsum dolor sit amet")) {
		t.Errorf("/opt/file2: %v %q", err, b)
	}
	for p, w := range want {
		if b, err := os.ReadFile(filepath.Join(root, p)); err != nil || !bytes.Equal(b, w) {
			t.Errorf("/%s on the node is not the decompressed contents: %v %q", p, err, b)
		}
	}
	if fi, err := os.Stat(filepath.Join(root, "etc/z.bin")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("/etc/z.bin mode: %v %v", fi, err)
	}
	if code, out, errOut := mcp(t, dir, "drift", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Fatalf("drift after apply: exit %d\n%s%s", code, out, errOut)
	}
	// A node whose file changed drifts, and apply writes the decompressed bytes again.
	os.WriteFile(filepath.Join(root, "etc/z.bin"), gz(bin), 0o755)
	if code, out, _ := mcp(t, dir, "drift", "-detailed-exitcode", "-no-color"); code != 2 || !strings.Contains(out, "/etc/z.bin") {
		t.Errorf("drift of /etc/z.bin (its compressed bytes): exit %d\n%s", code, out)
	}
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply restoring drift: exit %d\n%s%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc/z.bin")); !bytes.Equal(b, bin) {
		t.Errorf("/etc/z.bin not restored")
	}
}

// Fedora CoreOS's documentation sets the serial console by removing the defaults and
// adding two arguments in one should_exist entry ("console=tty0 console=ttyS0,115200n8"
// beside should_not_exist "console=tty0"…). mcp adds each argument; the removal of the
// same ones is dropped from the first-boot part (Ignition takes an argument in one list
// only, and refused the config: "duplicate entry defined"); the other removals are
// served. Judged from the nodes' kernel arguments and the rendered Ignition config.
func TestFCOSDocsConsoleArgumentsApply(t *testing.T) {
	bu, err := os.ReadFile("../../acceptance/testdata/corpus/fcos-docs/emergency-shell-1.bu")
	if err != nil {
		t.Fatal(err)
	}
	dir := freshFleet(t, "worker=1", "config \"console\" {\n  pools  = [\"worker\"]\n  butane = file(\"console.bu\")\n}\n",
		map[string]string{"console.bu": string(bu)})
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	if got := nodeKernelArgs(t, dir, "worker-0"); !slices.Equal(got, []string{"console=tty0", "console=ttyS0,115200n8"}) {
		t.Errorf("worker-0 runs %q", got)
	}
	_, out, _ := mcp(t, dir, "show", "-rendered", "worker", "-json")
	var r struct {
		Ignition struct {
			KernelArguments struct{ ShouldExist, ShouldNotExist []string }
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	k := r.Ignition.KernelArguments
	if !slices.Equal(k.ShouldExist, []string{"console=tty0", "console=ttyS0,115200n8"}) ||
		!slices.Equal(k.ShouldNotExist, []string{"console=hvc0", "console=ttyAMA0,115200n8", "console=ttyS1,115200n8"}) {
		t.Errorf("rendered kernel arguments %+v", k)
	}
}
