package acceptance

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/providers/local"
)

// promServer is a real Prometheus (Debian's /usr/bin/prometheus) on loopback, scraping
// every second gauges the test sets, with alert rules evaluated every second, each firing
// while its gauge is 1: NodeTrouble (mcp_test_trouble), Watchdog (mcp_test_watchdog), both
// severity critical, and Minor (mcp_test_minor), severity warning.
type promServer struct {
	URL    string
	mu     sync.Mutex
	gauges map[string]int
}

const promRules = `groups:
- name: mcp-test
  interval: 1s
  rules:
  - alert: NodeTrouble
    expr: mcp_test_trouble == 1
    for: 0s
    labels: {severity: critical}
  - alert: Watchdog
    expr: mcp_test_watchdog == 1
    for: 0s
    labels: {severity: critical}
  - alert: Minor
    expr: mcp_test_minor == 1
    for: 0s
    labels: {severity: warning}
`

// startPrometheus starts it, or skips when it is not installed — unless MCP_REQUIRE_K8S
// or CI says every real part must be there (make test installs it: make prometheus).
func startPrometheus(t *testing.T) *promServer {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("MCP_REQUIRE_K8S") != "" || os.Getenv("CI") != "" {
			t.Fatal("prometheus is not installed: run make prometheus (make test does)")
		}
		t.Skip("prometheus is not installed (make prometheus installs it)")
	}
	p := &promServer{gauges: map[string]int{"mcp_test_trouble": 0, "mcp_test_watchdog": 0, "mcp_test_minor": 0}}
	metrics := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		for name, v := range p.gauges {
			fmt.Fprintf(w, "# TYPE %s gauge\n%s %d\n", name, name, v)
		}
	})}
	ml, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go metrics.Serve(ml)
	t.Cleanup(func() { metrics.Close() })

	dir := t.TempDir()
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
- job_name: mcp-test
  static_configs:
  - targets: [%q]
`, filepath.Join(dir, "rules.yml"), ml.Addr().String())
	for name, text := range map[string]string{"rules.yml": promRules, "prometheus.yml": config} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	addr := freeAddr(t)
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		logf.Close()
	})
	p.URL = "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(p.URL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Fatalf("prometheus not ready within 30s: %v\n%s", err, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return p
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func (p *promServer) set(gauge string, v int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gauges[gauge] = v
}

// waitAlert waits until Prometheus reports the alert firing (or, with firing false, not
// firing), and returns when it saw it.
func (p *promServer) waitAlert(t *testing.T, name string, firing bool) time.Time {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(p.URL + "/api/v1/alerts")
		if err == nil {
			var doc struct {
				Data struct {
					Alerts []struct {
						Labels map[string]string `json:"labels"`
						State  string            `json:"state"`
					} `json:"alerts"`
				} `json:"data"`
			}
			err = json.NewDecoder(resp.Body).Decode(&doc)
			resp.Body.Close()
			is := false
			for _, a := range doc.Data.Alerts {
				if a.Labels["alertname"] == name && a.State == "firing" {
					is = true
				}
			}
			if err == nil && is == firing {
				return time.Now()
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus did not report %s firing=%v within 30s (%v)", name, firing, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// gatedFleet is a local fleet of worker=n whose pool has an alert gate on p with the
// given timeout, ignoring Watchdog and counting only critical alerts.
func gatedFleet(t *testing.T, p *promServer, n, timeout string, reboot ...string) (dir, mcp string) {
	return pacedFleet(t, n, fmt.Sprintf(`  alert_gate {
    prometheus_url = %q
    ignore         = ["^Watchdog$"]
    match_labels   = { severity = "critical" }
    timeout        = %q
  }`, p.URL, timeout), reboot...)
}

// gatedRun is mcp apply -json running in the background, its output lines collected.
type gatedRun struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	done  chan error
}

func startGatedApply(t *testing.T, mcp, dir string) *gatedRun {
	t.Helper()
	r := &gatedRun{cmd: exec.Command(mcp, "-chdir="+dir, "apply", "-auto-approve", "-json"), done: make(chan error, 1)}
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r.cmd.Stderr = r.cmd.Stdout
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.cmd.Process.Kill() })
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			r.mu.Lock()
			r.lines = append(r.lines, sc.Text())
			r.mu.Unlock()
		}
		r.done <- r.cmd.Wait()
	}()
	return r
}

// waitLine waits until a line of the output contains s, and returns it.
func (r *gatedRun) waitLine(t *testing.T, s string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		for _, l := range r.lines {
			if strings.Contains(l, s) {
				r.mu.Unlock()
				return l
			}
		}
		r.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no output line with %q within 30s:\n%s", s, r.output())
	return ""
}

func (r *gatedRun) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.lines, "\n")
}

// exit waits for the apply to end and returns its exit code.
func (r *gatedRun) exit(t *testing.T) int {
	t.Helper()
	select {
	case err := <-r.done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(60 * time.Second):
		t.Fatalf("apply did not end within 60s:\n%s", r.output())
		return -1
	}
}

// worked returns, per node, its events that say it was started (cordoned, drained,
// worked on, rebooted): claims alone are not a start.
func worked(t *testing.T, dir string) map[string][]local.Event {
	t.Helper()
	logs, err := local.ReadEvents(filepath.Join(dir, "fleet"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]local.Event{}
	for n, evs := range logs {
		for _, e := range evs {
			if e.Kind != local.EventClaim && e.Kind != local.EventRelease {
				out[n] = append(out[n], e)
			}
		}
	}
	return out
}

// The alert gate against a real Prometheus evaluating a rule that fires and then stops:
// the node is held while the alert fires, judged from the fleet's own event log; the
// rollout goes on once the alert resolves, and completes (exit 0). Alerts the gate does
// not count (ignored by name, or without its labels) hold nothing. An alert that fires while the first node runs stops the pool after it (exit 2,
// the nodes left named, none of them touched).
func TestAlertGateWithRealPrometheus(t *testing.T) {
	waiting(t)
	p := startPrometheus(t)
	mcpBinary(t)

	t.Run("held while firing, then complete", func(t *testing.T) {
		p.set("mcp_test_trouble", 1)
		p.set("mcp_test_watchdog", 1) // ignored throughout
		p.waitAlert(t, "NodeTrouble", true)
		p.waitAlert(t, "Watchdog", true)
		dir, mcp := gatedFleet(t, p, "2", "2m")
		if plan := runMCP(t, mcp, "-chdir="+dir, "plan", "-no-color"); !strings.Contains(plan,
			"gate: no firing alerts at "+p.URL+" (ignoring ^Watchdog$; only severity=critical), before each node starts (apply waits up to 2m") {
			t.Errorf("the plan does not show the gate:\n%s", plan)
		}
		run := startGatedApply(t, mcp, dir)
		wait := run.waitLine(t, `"event":"waiting"`)
		if !strings.Contains(wait, `alert gate: 1 alert firing at `+p.URL+`: NodeTrouble{instance=`) || !strings.Contains(wait, `job=\"mcp-test\", severity=\"critical\"}`) ||
			!strings.Contains(wait, `"alerts":[{"labels":{"alertname":"NodeTrouble",`) || strings.Contains(wait, "Watchdog") {
			t.Errorf("the waiting event does not name the firing alert alone:\n%s", wait)
		}
		time.Sleep(3 * time.Second) // a held node stays held
		if w := worked(t, dir); len(w) > 0 {
			t.Fatalf("nodes were started while NodeTrouble fired: %v", w)
		}
		p.set("mcp_test_trouble", 0)
		resolved := p.waitAlert(t, "NodeTrouble", false)
		if code := run.exit(t); code != 0 {
			t.Fatalf("apply exited %d, want 0 once the alert resolved:\n%s", code, run.output())
		}
		w := worked(t, dir)
		for _, n := range []string{"worker-0", "worker-1"} {
			c := first(w[n], local.EventCordon)
			if c.IsZero() || last(w[n], local.EventDone).IsZero() {
				t.Errorf("%s was not updated: %v", n, w[n])
			}
			if c.Before(resolved.Add(-2 * time.Second)) {
				t.Errorf("%s cordoned at %s, before NodeTrouble resolved (seen %s)", n, c.Format(time.StampMilli), resolved.Format(time.StampMilli))
			}
		}
	})

	t.Run("alerts the gate does not count hold nothing", func(t *testing.T) {
		p.set("mcp_test_trouble", 0)
		p.waitAlert(t, "NodeTrouble", false)
		for _, alert := range []string{"Watchdog", "Minor"} { // ignored by name; not severity critical
			p.set("mcp_test_watchdog", 0)
			p.set("mcp_test_minor", 0)
			p.set("mcp_test_"+strings.ToLower(alert), 1)
			p.waitAlert(t, alert, true)
			dir, mcp := gatedFleet(t, p, "1", "0s")
			out, err := run(t, mcp, "-chdir="+dir, "apply", "-auto-approve", "-no-color")
			if err != nil || len(worked(t, dir)["worker-0"]) == 0 {
				t.Errorf("apply with only %s firing: %v\n%s", alert, err, out)
			}
		}
		p.set("mcp_test_minor", 0)
	})

	t.Run("firing after the first node stops the pool", func(t *testing.T) {
		p.set("mcp_test_trouble", 0)
		p.waitAlert(t, "NodeTrouble", false)
		dir, mcp := gatedFleet(t, p, "3", "0s", "6s")
		run := startGatedApply(t, mcp, dir)
		deadline := time.Now().Add(30 * time.Second)
		for first(worked(t, dir)["worker-0"], local.EventCordon).IsZero() {
			if time.Now().After(deadline) {
				t.Fatalf("worker-0 never started:\n%s", run.output())
			}
			time.Sleep(50 * time.Millisecond)
		}
		p.set("mcp_test_trouble", 1)
		p.waitAlert(t, "NodeTrouble", true)
		if !last(worked(t, dir)["worker-0"], local.EventDone).IsZero() {
			t.Fatal("worker-0 finished before NodeTrouble fired: the test's reboot is too short to prove anything")
		}
		code := run.exit(t)
		out := run.output()
		if code != 2 || !strings.Contains(out, "pool worker: 2 nodes not started (worker-1, worker-2): alert gate: 1 alert firing at "+p.URL) ||
			!strings.Contains(out, "after node worker-0 finished") {
			t.Fatalf("apply exited %d, want 2 naming the nodes left and the alert after worker-0:\n%s", code, out)
		}
		w := worked(t, dir)
		if last(w["worker-0"], local.EventDone).IsZero() {
			t.Errorf("worker-0 was not updated: %v", w["worker-0"])
		}
		if len(w["worker-1"])+len(w["worker-2"]) > 0 {
			t.Errorf("nodes after the alert were started: worker-1 %v, worker-2 %v", w["worker-1"], w["worker-2"])
		}
	})
}
