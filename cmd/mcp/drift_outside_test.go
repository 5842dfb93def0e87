package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDriftReportsWhatNoConfigManages: on a local fleet, a kernel argument added by hand
// (on a node whose config names others, and on one whose config names none) and another
// booted image in a pool that sets no os_image are reported by mcp drift as information
// (exit 2 with -detailed-exitcode, status "changed", the findings under "outside"), and
// plan and apply do nothing for them.
func TestDriftReportsWhatNoConfigManages(t *testing.T) {
	dir := quickstart(t)
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("first apply: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := mcp(t, dir, "drift", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Fatalf("drift right after apply: exit %d, want 0\n%s%s", code, out, errOut)
	}
	for _, set := range [][]string{{"infra-0", "kernel_args=nosmt,mitigations=auto,debug"}, {"worker-1", "kernel_args=debug"},
		{"worker-3", "os_image=quay.io/fedora/fedora-coreos:40"}} {
		if code, _, errOut := mcp(t, dir, append([]string{"fleet", "set"}, set...)...); code != 0 {
			t.Fatal(errOut)
		}
	}
	code, out, errOut := mcp(t, dir, "drift", "-detailed-exitcode", "-no-color")
	if code != 2 {
		t.Fatalf("drift: exit %d, want 2\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"node.infra-0 (pool infra", "  info: kernel_args: unmanaged-kernel-args (added since the rollout: debug)",
		"node.worker-1 (pool worker", "node.worker-3 (pool worker",
		"  info: os_image: unmanaged-os-image (rolled out on quay.io/fedora/fedora-coreos:stable, now boots quay.io/fedora/fedora-coreos:40)",
		"pool.worker: 2 of 4 nodes changed since the rollout in what the configuration does not manage (information: no plan changes it)",
		"3 nodes changed only in what no config manages.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("drift output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "  drift: ") {
		t.Errorf("information shown as drift:\n%s", out)
	}
	_, out, _ = mcp(t, dir, "drift", "-json")
	var dj struct {
		Drifted bool
		Nodes   []struct {
			Name, Status string
			Drift        []struct{ Kind string }
			Outside      []struct{ Path, Kind, Expected, Found string }
		}
	}
	if err := json.Unmarshal([]byte(out), &dj); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, n := range dj.Nodes {
		if len(n.Drift) > 0 {
			t.Errorf("%s: drift %v", n.Name, n.Drift)
		}
		for _, o := range n.Outside {
			got[n.Name] += n.Status + " " + o.Kind + " " + o.Found + ";"
		}
	}
	want := map[string]string{"infra-0": "changed unmanaged-kernel-args debug;", "worker-1": "changed unmanaged-kernel-args debug;",
		"worker-3": "changed unmanaged-os-image quay.io/fedora/fedora-coreos:40;"}
	if !dj.Drifted || len(got) != 3 || got["infra-0"] != want["infra-0"] || got["worker-1"] != want["worker-1"] || got["worker-3"] != want["worker-3"] {
		t.Errorf("drift -json: drifted %v, outside %q, want %q", dj.Drifted, got, want)
	}
	// Nothing for plan or apply to do: the configuration does not say what these should be.
	if code, out, errOut := mcp(t, dir, "plan", "-detailed-exitcode", "-no-color"); code != 0 || !strings.Contains(out, "No changes.") {
		t.Errorf("plan: exit %d, want 0 and no changes\n%s%s", code, out, errOut)
	}
}
