package acceptance

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/planner"
)

// bootImageConfig is a local fleet's configuration with two boot images and a worker pool
// on OS image quay.io/fcos:41 with the given boot_image block.
func bootImageConfig(t *testing.T, dir, poolBootImage string) {
	t.Helper()
	hcl := `provider "local" {
  fleet           = "./fleet"
  reboot_duration = "50ms"
}

boot_image "fcos-40" {
  os_image = "quay.io/fcos:40"
  images   = { gcp = "projects/fcos/global/images/fcos-40" }
}

boot_image "fcos-41" {
  os_image = "quay.io/fcos:41"
  images   = { gcp = "projects/fcos/global/images/fcos-41" }
}

pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = 3
  os_image        = "quay.io/fcos:41"
` + poolBootImage + `
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
}

// planBootImages runs mcp plan -json and returns its boot images and exit code.
func planBootImages(t *testing.T, mcp, dir string) ([]planner.BootImagePlan, []string, int) {
	t.Helper()
	out, err := exec.Command(mcp, "-chdir="+dir, "plan", "-json").Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ResourceChanges []struct {
			Address string `json:"address"`
			Change  struct {
				Actions []string `json:"actions"`
			} `json:"change"`
		} `json:"resource_changes"`
		MCP struct {
			BootImages []planner.BootImagePlan `json:"boot_images"`
		} `json:"mcp"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("plan JSON: %v\n%s", err, out)
	}
	var actions []string
	for _, rc := range doc.ResourceChanges {
		if strings.HasPrefix(rc.Address, "boot_image.") {
			actions = append(actions, rc.Address+" "+strings.Join(rc.Change.Actions, ","))
		}
	}
	return doc.MCP.BootImages, actions, code
}

// Pinned and managed give the documented plans on a real local fleet, skew names the nodes
// left on another OS image, and skew = "enforce" refuses: plan fails, apply changes nothing.
func TestBootImagePlansSkewAndEnforce(t *testing.T) {
	exclusive(t)
	dir, mcp := t.TempDir(), mcpBinary(t)
	runMCP(t, mcp, "-chdir="+dir, "fleet", "init", "fleet", "-nodes", "worker=3", "-os-image", "quay.io/fcos:40")
	// Managed: the boot image of the pool's OS image; the held node stays on fcos:40.
	bootImageConfig(t, dir, `  boot_image { policy = "managed" }`)
	runMCP(t, mcp, "-chdir="+dir, "fleet", "set", "worker-2", "hold=disk replacement")
	bis, actions, code := planBootImages(t, mcp, dir)
	if code != 0 || len(bis) != 1 {
		t.Fatalf("plan exit %d, boot images %+v", code, bis)
	}
	b := bis[0]
	if b.To.Name != "fcos-41" || !b.Changed || b.FirstBootPivot || !slices.Equal(b.Lagging, []string{"worker-2"}) {
		t.Errorf("managed: to %s changed %v first-boot pivot %v lagging %v", b.To.Name, b.Changed, b.FirstBootPivot, b.Lagging)
	}
	if !slices.Equal(actions, []string{"boot_image.worker create"}) {
		t.Errorf("resource changes %v", actions)
	}
	text := runMCP(t, mcp, "-chdir="+dir, "plan")
	for _, want := range []string{"boot_image.worker (none) → boot_image.fcos-41  [managed, skew warn]",
		"skew: 1 node would keep another OS image than quay.io/fcos:41 after this apply: worker-2",
		"1 boot image changed"} {
		if !strings.Contains(text, want) {
			t.Errorf("plan lacks %q:\n%s", want, text)
		}
	}
	runMCP(t, mcp, "-chdir="+dir, "apply", "-auto-approve")
	if bis, actions, _ = planBootImages(t, mcp, dir); bis[0].Changed || !slices.Equal(actions, []string{"boot_image.worker no-op"}) {
		t.Errorf("after apply: changed %v, %v", bis[0].Changed, actions)
	}

	// Pinned to the older image: new nodes pivot at first boot; warn shows it.
	bootImageConfig(t, dir, `  boot_image {
    policy = "pinned"
    image  = boot_image.fcos-40
  }`)
	text = runMCP(t, mcp, "-chdir="+dir, "plan")
	for _, want := range []string{"boot_image.worker boot_image.fcos-41 → boot_image.fcos-40  [pinned, skew warn]",
		"skew: new nodes boot boot_image.fcos-40 (OS image quay.io/fcos:40) and pivot to quay.io/fcos:41 at first boot"} {
		if !strings.Contains(text, want) {
			t.Errorf("pinned plan lacks %q:\n%s", want, text)
		}
	}

	// Enforce: plan shows it and fails; apply refuses and changes nothing.
	bootImageConfig(t, dir, `  boot_image {
    policy = "pinned"
    image  = boot_image.fcos-40
    skew   = "enforce"
  }`)
	if _, _, code := planBootImages(t, mcp, dir); code != 1 {
		t.Errorf("plan of a refused boot image exits %d, want 1", code)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "mcp.state"))
	out, err := exec.Command(mcp, "-chdir="+dir, "apply", "-auto-approve").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Apply refused, nothing changed: pool worker has skew = \"enforce\"") {
		t.Errorf("apply: %v\n%s", err, out)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "mcp.state")); string(after) != string(before) {
		t.Error("a refused apply wrote the state")
	}
}
