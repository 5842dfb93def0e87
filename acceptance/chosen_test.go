package acceptance

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestIgnitionBootsAMachinesOwnConfig: a config for chosen nodes names node worker-1 (a
// running node of the local fleet) and worker-9, a machine block told apart by its MAC.
// After apply, worker-1's root has the file and worker-0's does not; `mcp serve` gives the
// real, unmodified Ignition client booting with the iPXE form of the URL
// (?mac=${net0/mac:hexhyp}, hyphens) the machine's own config, a machine with another MAC
// the pool's, and the per-instance user data `mcp pointer -machine` prints (a cloud
// machine's) the machine's own again. Judged from the node roots and the scratch roots
// Ignition wrote.
func TestIgnitionBootsAMachinesOwnConfig(t *testing.T) {
	exclusive(t)
	ign := ignitionClient(t)
	dir := applyQuickstart(t, map[string]string{"chosen.hcl": `config "90-static" {
  pools = ["worker"]
  nodes = ["worker-1", "worker-9"]
  file "/etc/mcp/static.conf" { content = "mine\n" }
}

machine "worker-9" {
  pool = "worker"
  mac  = ["52:54:00:00:00:09"]
}
`})
	nodeFile := func(node string) string {
		b, _ := os.ReadFile(filepath.Join(dir, "fleet", "nodes", node, "root", "etc/mcp/static.conf"))
		return string(b)
	}
	if got, other := nodeFile("worker-1"), nodeFile("worker-0"); got != "mine\n" || other != "" {
		t.Errorf("after apply: worker-1 has %q (want its file), worker-0 %q (want none)", got, other)
	}
	url := startServe(t, dir)
	has := func(S string) string {
		b, _ := os.ReadFile(filepath.Join(S, "etc/mcp/static.conf"))
		return string(b)
	}
	if got := has(firstBoot(t, ign, url+"/config/worker?mac=52-54-00-00-00-09")); got != "mine\n" {
		t.Errorf("the machine booting with its MAC got %q, want its own file", got)
	}
	S := firstBoot(t, ign, url+"/config/worker?mac=52-54-00-00-00-07")
	if got := has(S); got != "" {
		t.Errorf("another machine got the chosen file: %q", got)
	}
	if _, err := os.Stat(filepath.Join(S, "etc/chrony.conf")); err != nil {
		t.Errorf("another machine did not get the pool's config: %v", err)
	}
	ptr, err := exec.Command(mcpBinary(t), "-chdir="+dir, "pointer", "worker", "-url", url, "-machine", "worker-9").Output()
	if err != nil {
		t.Fatalf("mcp pointer -machine: %v", err)
	}
	userData := filepath.Join(t.TempDir(), "user-data.ign")
	os.WriteFile(userData, ptr, 0o600)
	if got := has(firstBootWith(t, ign, "file", "", []string{"IGNITION_CONFIG_FILE=" + userData})); got != "mine\n" {
		t.Errorf("the machine booting with mcp pointer -machine's user data got %q, want its own file\n%s", got, ptr)
	}
}
