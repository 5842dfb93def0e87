package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// driftFleet is the quickstart applied, with an OS image on the worker pool so that the
// workers' image is managed too.
func driftFleet(t *testing.T) string {
	t.Helper()
	dir := quickstart(t)
	setPoolAttr(t, dir, "worker", `os_image = "quay.io/fedora/fedora-coreos:41"`)
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("first apply: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := mcp(t, dir, "drift", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Fatalf("drift right after apply: exit %d, want 0\n%s%s", code, out, errOut)
	}
	return dir
}

// setPoolAttr adds an attribute line to pool's block in main.hcl.
func setPoolAttr(t *testing.T, dir, pool, line string) {
	t.Helper()
	p := filepath.Join(dir, "main.hcl")
	b, _ := os.ReadFile(p)
	head := fmt.Sprintf("pool %q {\n", pool)
	if !bytes.Contains(b, []byte(head)) {
		t.Fatalf("main.hcl has no %s", head)
	}
	if err := os.WriteFile(p, bytes.Replace(b, []byte(head), []byte(head+"  "+line+"\n"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

// introduceDrift does what a person on three nodes would: edits a managed file on
// worker-1, drops a kernel argument on infra-0, and rebases worker-2 onto another image.
func introduceDrift(t *testing.T, dir string) {
	t.Helper()
	chrony := filepath.Join(dir, "fleet/nodes/worker-1/root/etc/chrony.conf")
	if err := os.WriteFile(chrony, []byte("server ntp.evil.example iburst\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, set := range [][]string{{"infra-0", "kernel_args=nosmt"}, {"worker-2", "os_image=quay.io/fedora/fedora-coreos:40"}} {
		if code, _, errOut := mcp(t, dir, append([]string{"fleet", "set"}, set...)...); code != 0 {
			t.Fatal(errOut)
		}
	}
}

// TestDriftRunPlanReportAndRestore is the acceptance on a local fleet: mcp drift
// names each drifted node and what differs and exits 2; with on_drift = "report" plan shows
// the drift and exits 0 under -detailed-exitcode (apply would do nothing); with "restore"
// plan exits 2 (0 with =config), one apply puts all three back, and mcp drift exits 0
// again.
func TestDriftRunPlanReportAndRestore(t *testing.T) {
	dir := driftFleet(t)
	introduceDrift(t, dir)

	code, out, errOut := mcp(t, dir, "drift", "-detailed-exitcode", "-no-color")
	if code != 2 {
		t.Fatalf("drift: exit %d, want 2\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"node.worker-1 (pool worker", "drift: /etc/chrony.conf: content (expected ",
		"node.infra-0 (pool infra", "drift: kernel_args: kernel-args (expected nosmt mitigations=auto, found nosmt)",
		"node.worker-2 (pool worker", "drift: os_image: os-image (expected quay.io/fedora/fedora-coreos:41, found quay.io/fedora/fedora-coreos:40)",
		"Drift: 3 of 6 nodes differ from the config they run.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("drift output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "node.worker-0") || strings.Contains(out, "node.infra-1") {
		t.Errorf("clean nodes listed:\n%s", out)
	}
	if code, out, _ := mcp(t, dir, "drift"); code != 0 || !strings.Contains(out, "Drift:") {
		t.Errorf("drift without -detailed-exitcode: exit %d, want 0 (as terraform plan)\n%s", code, out)
	}
	code, out, errOut = mcp(t, dir, "drift", "-json")
	var dj struct {
		FormatVersion string `json:"format_version"`
		Drifted       bool   `json:"drifted"`
		Nodes         []struct {
			Name, Status string
			Drift        []struct{ Path, Kind, Expected, Found string }
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &dj); err != nil || code != 0 {
		t.Fatalf("drift -json: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	kinds := map[string]string{}
	for _, n := range dj.Nodes {
		for _, d := range n.Drift {
			kinds[n.Name] += d.Path + ":" + d.Kind
		}
	}
	if dj.FormatVersion != "1.0" || !dj.Drifted || kinds["worker-1"] != "/etc/chrony.conf:content" ||
		kinds["infra-0"] != "kernel_args:kernel-args" || kinds["worker-2"] != "os_image:os-image" || len(kinds) != 3 {
		t.Errorf("drift -json: version %q drifted %v kinds %v", dj.FormatVersion, dj.Drifted, kinds)
	}

	// on_drift = "report": shown apart, nothing planned, not a change.
	main := filepath.Join(dir, "main.hcl")
	restoreHCL, _ := os.ReadFile(main)
	setPoolAttr(t, dir, "worker", `on_drift = "report"`)
	setPoolAttr(t, dir, "infra", `on_drift = "report"`)
	code, out, errOut = mcp(t, dir, "plan", "-detailed-exitcode", "-no-color")
	if code != 0 || !strings.Contains(out, "Note: 3 nodes have drifted") || !strings.Contains(out, `reported only: pool on_drift = "report"`) ||
		strings.Contains(out, "mcp will perform") {
		t.Fatalf("plan with on_drift = report: exit %d, want 0 with the drift noted and nothing planned\n%s%s", code, out, errOut)
	}
	_, out, _ = mcp(t, dir, "plan", "-json")
	var pj struct {
		Applyable     bool `json:"applyable"`
		ResourceDrift []struct {
			Address string
			MCP     struct {
				OnDrift  string `json:"on_drift"`
				Restored bool
			} `json:"mcp"`
		} `json:"resource_drift"`
	}
	if err := json.Unmarshal([]byte(out), &pj); err != nil || pj.Applyable || len(pj.ResourceDrift) != 3 ||
		pj.ResourceDrift[0].MCP.OnDrift != "report" || pj.ResourceDrift[0].MCP.Restored {
		t.Errorf("plan -json with on_drift = report: %v %+v", err, pj)
	}

	// on_drift = "restore" (the default): planned apart from changes, and one apply fixes all.
	os.WriteFile(main, restoreHCL, 0o644)
	code, out, errOut = mcp(t, dir, "plan", "-detailed-exitcode", "-no-color")
	if code != 2 || !strings.Contains(out, "restored by this plan") || !strings.Contains(out, "3 only restoring drift") {
		t.Fatalf("plan restoring drift: exit %d, want 2 (apply would reboot nodes)\n%s%s", code, out, errOut)
	}
	if code, out, errOut := mcp(t, dir, "plan", "-detailed-exitcode=config", "-no-color"); code != 0 {
		t.Fatalf("plan -detailed-exitcode=config restoring drift: exit %d, want 0 (no configuration change)\n%s%s", code, out, errOut)
	}
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 ||
		!strings.Contains(out, "node.infra-0: kargs done") || !strings.Contains(out, "node.worker-2: pivot done") ||
		!strings.Contains(out, "node.worker-1: restart chronyd.service done") {
		t.Fatalf("apply restoring drift: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := mcp(t, dir, "drift", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Fatalf("drift after apply: exit %d, want 0\n%s%s", code, out, errOut)
	}
	var n struct {
		OSImage    string   `json:"os_image"`
		KernelArgs []string `json:"kernel_args"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "fleet/nodes/infra-0/node.json"))
	json.Unmarshal(b, &n)
	if strings.Join(n.KernelArgs, " ") != "nosmt mitigations=auto" {
		t.Errorf("infra-0 kernel arguments %q", n.KernelArgs)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "fleet/nodes/worker-2/node.json"))
	json.Unmarshal(b, &n)
	if n.OSImage != "quay.io/fedora/fedora-coreos:41" {
		t.Errorf("worker-2 os image %q", n.OSImage)
	}
}

// treeState is what a drift run must leave alone: every file's and directory's content
// digest (files), mode and modification time.
func treeState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		v := fmt.Sprintf("%v %d", info.Mode(), info.ModTime().UnixNano())
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		out[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDriftTakesNoLockAndWritesNothing: a drift run goes ahead while an apply holds the
// state lock (it neither waits for it nor takes it), leaves the state directory and the
// fleet exactly as they were, and names the node and file a corrupt node.json belongs to.
func TestDriftTakesNoLockAndWritesNothing(t *testing.T) {
	dir := driftFleet(t)
	introduceDrift(t, dir)

	before := treeState(t, dir)
	if code, out, errOut := mcp(t, dir, "drift", "-detailed-exitcode", "-json"); code != 2 {
		t.Fatalf("drift: exit %d, want 2\n%s%s", code, out, errOut)
	}
	after := treeState(t, dir)
	for p, v := range before {
		if after[p] != v {
			t.Errorf("drift changed %s: %q → %q", p, v, after[p])
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("drift created %s", p)
		}
	}

	// A real apply holds the lock (its reboots take seconds): drift is not held up.
	b, _ := os.ReadFile(filepath.Join(dir, "main.hcl"))
	os.WriteFile(filepath.Join(dir, "main.hcl"), bytes.Replace(b, []byte(`reboot_duration = "0s"`), []byte(`reboot_duration = "3s"`), 1), 0o644)
	applied := make(chan int, 1)
	var applyOut syncBuffer
	go func() {
		applied <- run(context.Background(), []string{"-chdir=" + dir, "apply", "-auto-approve", "-no-color"}, strings.NewReader(""), &applyOut, &applyOut)
	}()
	waitFor(t, 10*time.Second, "apply to hold the lock and start a reboot", func() bool {
		_, err := os.Stat(filepath.Join(dir, "mcp.state.lock"))
		return err == nil && strings.Contains(applyOut.String(), "reboot…")
	})
	if code, _, errOut := mcp(t, dir, "plan", "-lock-timeout=0s"); code != 1 || !strings.Contains(errOut, "lock") {
		t.Fatalf("plan while apply runs: exit %d, want 1 for the lock\n%s", code, errOut)
	}
	code, out, errOut := mcp(t, dir, "drift", "-no-color")
	select {
	case c := <-applied:
		t.Fatalf("apply finished (exit %d) before drift returned: the test proves nothing\n%s", c, applyOut.String())
	default:
	}
	// What it finds depends on how far apply got (its steps may already have restored it
	// all): what matters is that it ran, at once.
	if code != 0 || !strings.Contains(out, "drift") {
		t.Errorf("drift during apply: exit %d\n%s%s", code, out, errOut)
	}
	if c := <-applied; c != 0 {
		t.Fatalf("apply: exit %d\n%s", c, applyOut.String())
	}

	// A corrupt node file is an error naming the node's file.
	os.WriteFile(filepath.Join(dir, "fleet/nodes/worker-3/node.json"), []byte(`{"name": "worker-3", "ready": tru`), 0o644)
	code, out, errOut = mcp(t, dir, "drift", "-detailed-exitcode")
	if code != 1 || !strings.Contains(errOut, "worker-3/node.json") {
		t.Errorf("corrupt node.json: exit %d, want 1 naming worker-3/node.json\n%s%s", code, out, errOut)
	}
}

// TestDriftEveryServesMetrics: a periodic drift run serves metrics that follow drift as
// it appears and goes away.
func TestDriftEveryServesMetrics(t *testing.T) {
	dir := driftFleet(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-chdir=" + dir, "drift", "-every", "50ms", "-listen", "127.0.0.1:0", "-json"},
			strings.NewReader(""), &stdout, &stderr)
	}()
	var url string
	addr := regexp.MustCompile(`Serving drift metrics on (http://\S+/metrics)`)
	waitFor(t, 10*time.Second, "the metrics address on stderr", func() bool {
		m := addr.FindStringSubmatch(stderr.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	})
	scrape := func() string {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	value := func(metrics, series string) float64 {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(metrics)
		if m == nil {
			return -1
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	expect := func(what string, want map[string]float64) string {
		var last string
		waitFor(t, 10*time.Second, what, func() bool {
			last = scrape()
			for s, v := range want {
				if value(last, s) != v {
					return false
				}
			}
			return true
		})
		return last
	}
	clean := expect("clean metrics", map[string]float64{`mcp_drift_nodes{pool="worker"}`: 0, `mcp_drift_nodes{pool="infra"}`: 0,
		`mcp_drift_paths{pool="worker"}`: 0, `mcp_drift_errors_total`: 0})
	if value(clean, "mcp_drift_last_run_timestamp_seconds") < float64(time.Now().Add(-time.Minute).Unix()) ||
		value(clean, "mcp_drift_last_run_duration_seconds") < 0 {
		t.Errorf("last run time or duration missing:\n%s", clean)
	}

	chrony := filepath.Join(dir, "fleet/nodes/worker-1/root/etc/chrony.conf")
	good, _ := os.ReadFile(chrony)
	introduceDrift(t, dir)
	expect("drift in the metrics", map[string]float64{`mcp_drift_nodes{pool="worker"}`: 2, `mcp_drift_paths{pool="worker"}`: 2,
		`mcp_drift_nodes{pool="infra"}`: 1, `mcp_drift_paths{pool="infra"}`: 1})

	// Taken back by hand, as it was made.
	os.WriteFile(chrony, good, 0o644)
	for _, set := range [][]string{{"infra-0", "kernel_args=nosmt,mitigations=auto"}, {"worker-2", "os_image=quay.io/fedora/fedora-coreos:41"}} {
		if code, _, errOut := mcp(t, dir, append([]string{"fleet", "set"}, set...)...); code != 0 {
			t.Fatal(errOut)
		}
	}
	expect("drift gone from the metrics", map[string]float64{`mcp_drift_nodes{pool="worker"}`: 0, `mcp_drift_nodes{pool="infra"}`: 0,
		`mcp_drift_paths{pool="worker"}`: 0})

	// An enabled unit whose link is gone is a difference like any other.
	wants := filepath.Join(dir, "fleet/nodes/worker-3/root/etc/systemd/system/multi-user.target.wants/node-exporter.service")
	if err := os.Remove(wants); err != nil {
		t.Fatal(err)
	}
	expect("a unit's enablement in the metrics", map[string]float64{`mcp_drift_nodes{pool="worker"}`: 1, `mcp_drift_paths{pool="worker"}`: 1})
	if err := os.Symlink("/etc/systemd/system/node-exporter.service", wants); err != nil {
		t.Fatal(err)
	}
	expect("enablement drift gone from the metrics", map[string]float64{`mcp_drift_nodes{pool="worker"}`: 0, `mcp_drift_paths{pool="worker"}`: 0})

	// A failed run is counted; the gauges keep the last good run's values.
	node := filepath.Join(dir, "fleet/nodes/worker-3/node.json")
	nodeJSON, _ := os.ReadFile(node)
	os.WriteFile(node, []byte("{"), 0o644)
	got := expect("an error counted", map[string]float64{`mcp_drift_nodes{pool="worker"}`: 0})
	waitFor(t, 10*time.Second, "an error counted", func() bool { got = scrape(); return value(got, "mcp_drift_errors_total") >= 1 })
	os.WriteFile(node, nodeJSON, 0o644)

	cancel()
	if code := <-done; code != 0 {
		t.Errorf("drift -every: exit %d after interrupt\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "worker-3/node.json") {
		t.Errorf("the failed run's error is not printed:\n%s", stderr.String())
	}
	if lines := strings.Count(stdout.String(), `"format_version":"1.0"`); lines < 3 {
		t.Errorf("-every -json printed %d reports, want one per run", lines)
	}
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader in two goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A node an update was interrupted on carries that update's writes, which differ from the
// config it still runs: the plan shows them as drift (its steps restore what the
// configuration says), but does not say they were changed outside of mcp — it names the
// update under way (text and JSON). Judged on a node set up as such an interruption leaves
// it: its agent Working towards another config, whose file is on its root.
func TestDriftOfAnUnfinishedUpdateIsNotCalledOutside(t *testing.T) {
	dir := smallFleet(t, "worker=2", "")
	setContent(t, dir, "a")
	if code, out := applyAudited(t, dir); code != 0 {
		t.Fatalf("apply a: exit %d\n%s", code, out)
	}
	a := readNode(t, dir, "worker-1").CurrentConfig
	setContent(t, dir, "b")
	if code, out := applyAudited(t, dir); code != 0 {
		t.Fatalf("apply b: exit %d\n%s", code, out)
	}
	mcp(t, dir, "fleet", "set", "worker-1", "desired_config="+a, "state=Working", "unschedulable=true")
	if err := os.WriteFile(filepath.Join(dir, "fleet", "nodes", "worker-1", "root", "etc", "x.conf"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, plan, _ := mcp(t, dir, "plan", "-no-color")
	if strings.Contains(plan, "changed outside of mcp") || !strings.Contains(plan, "an update to "+a+" is under way on it") {
		t.Errorf("the plan blames the interrupted update's writes on something outside mcp:\n%s", plan)
	}
	_, js, _ := mcp(t, dir, "plan", "-json")
	if !strings.Contains(js, `"drift_under_way":"`+a+`"`) {
		t.Errorf("plan JSON does not name the update under way:\n%s", js)
	}
	// A node drifted by hand, with no update under way, is still said to be.
	if err := os.WriteFile(filepath.Join(dir, "fleet", "nodes", "worker-0", "root", "etc", "x.conf"), []byte("hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, plan, _ = mcp(t, dir, "plan", "-no-color"); !strings.Contains(plan, "changed outside of mcp, or by an unfinished update") {
		t.Errorf("with one node drifted by hand and one by an unfinished update:\n%s", plan)
	}
}
