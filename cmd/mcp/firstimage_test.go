package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestFirstOSImageShowsBootedImages: adding a first os_image to a pool of a local fleet
// shows, in the text plan and in plan JSON's before, the images the nodes run now and how
// many run each — not "(none)" and null.
func TestFirstOSImageShowsBootedImages(t *testing.T) {
	dir := quickstart(t)
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("first apply: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := mcp(t, dir, "fleet", "set", "worker-3", "os_image=quay.io/fedora/fedora-coreos:40"); code != 0 {
		t.Fatal(errOut)
	}
	setPoolAttr(t, dir, "worker", `os_image = "quay.io/fedora/fedora-coreos:41"`)
	code, out, errOut := mcp(t, dir, "plan", "-no-color")
	want := "    ~ os_image (the config named none; the nodes run now:)\n" +
		"        - quay.io/fedora/fedora-coreos:stable  (3 nodes)\n" +
		"        - quay.io/fedora/fedora-coreos:40  (1 node)\n" +
		"        + quay.io/fedora/fedora-coreos:41\n"
	if code != 0 || !strings.Contains(out, want) || strings.Contains(out, "(none)") ||
		!strings.Contains(out, "pivot, reboot, verify, uncordon: os image quay.io/fedora/fedora-coreos:40 (booted) → quay.io/fedora/fedora-coreos:41") {
		t.Fatalf("plan: exit %d, want the booted images per image:\n%s\n%s%s", code, want, out, errOut)
	}
	_, out, _ = mcp(t, dir, "plan", "-json")
	var pj struct {
		ResourceChanges []struct {
			Address string
			Change  struct {
				Actions []string
				Before  *struct {
					OSImage string `json:"os_image"`
					Running []struct {
						OSImage string `json:"os_image"`
						Nodes   int
					}
				}
			}
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal([]byte(out), &pj); err != nil {
		t.Fatal(err)
	}
	var got string
	for _, rc := range pj.ResourceChanges {
		if rc.Address != "os_image.worker" {
			continue
		}
		got = strings.Join(rc.Change.Actions, ",")
		if b := rc.Change.Before; b != nil {
			got += " " + b.OSImage
			for _, r := range b.Running {
				got += " " + r.OSImage + "×" + string(rune('0'+r.Nodes))
			}
		}
	}
	if w := "update quay.io/fedora/fedora-coreos:stable quay.io/fedora/fedora-coreos:stable×3 quay.io/fedora/fedora-coreos:40×1"; got != w {
		t.Errorf("plan JSON os_image.worker: %q, want %q", got, w)
	}
}
