package acceptance

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// mcp apply on a terminal draws one line per pool and one per node in progress, redrawn in
// place: read back from a real terminal (tmux) as a person would see it, while it runs.
func TestLiveProgressOnATerminal(t *testing.T) {
	exclusive(t)
	mcp, dir := liveFleet(t, "worker=6,infra=2", `provider "local" {
  fleet           = "./fleet"
  drain_duration  = "200ms"
  reboot_duration = "700ms"
}

pool "worker" {
  max_unavailable = 2
}

pool "infra" {}

config "50-x" {
  pools = ["worker", "infra"]
  file "/etc/x.conf" { content = "x\n" }
}
`)
	// A saved plan: apply then prints only its progress and summary.
	if out, err := exec.Command(mcp, "-chdir="+dir, "plan", "-out=p.plan").CombinedOutput(); err != nil {
		t.Fatalf("plan: %v\n%s", err, out)
	}

	tmux := tmuxServer(t, dir, "mcp-live")
	screens := applyScreens(t, tmux, mcp, dir)
	final := screens[len(screens)-1]
	history := tmux("capture-pane", "-p", "-S", "-", "-E", "-", "-t", "apply")

	// While it ran: the pools' lines, and a node's line with the step it is on.
	poolLine := regexp.MustCompile(`(?m)^pool\.worker .*\d/6 done`)
	nodeLine := regexp.MustCompile(`(?m)^  node\.worker-\d: (cordon|drain|write|reboot|verify|uncordon|health gates)`)
	var sawPool, sawNode, sawUpdating bool
	for _, s := range screens {
		sawPool = sawPool || poolLine.MatchString(s) && strings.Contains(s, "pool.infra")
		sawNode = sawNode || nodeLine.MatchString(s)
		sawUpdating = sawUpdating || strings.Contains(s, "2 updating")
	}
	if !sawPool || !sawNode || !sawUpdating {
		t.Errorf("no screen showed pool lines (%v), a node's line with its step (%v) and 2 workers updating (%v); the last screens:\n%s",
			sawPool, sawNode, sawUpdating, strings.Join(screens[max(0, len(screens)-3):], "\n----\n"))
	}
	// The time left: at first the plan's estimate, from defaults (minutes a node); once
	// workers finished, from what they took here (about a second each).
	fromPlan := regexp.MustCompile(`(?m)^pool\.worker .*~\d+m[0-9s]* left`)
	fromRun := regexp.MustCompile(`(?m)^pool\.worker .*[1-5]/6 done.*~[0-9.]+m?s left`)
	planned, measured := -1, -1
	for i, s := range screens {
		if planned < 0 && fromPlan.MatchString(s) {
			planned = i
		}
		if measured < 0 && fromRun.MatchString(s) && !fromPlan.MatchString(s) {
			measured = i
		}
	}
	if planned < 0 || measured < planned {
		t.Errorf("no screen showed the worker pool's time left from the plan's estimate (%d), then one from the nodes finished (%d); the screens:\n%s",
			planned, measured, strings.Join(screens, "\n----\n"))
	}
	// Redrawn in place: the whole terminal, scrollback included, holds a few lines before
	// the summary's list of nodes, where the line-per-event output has two per step of
	// each of the 8 nodes (over 80).
	lines := 0
	for _, l := range strings.Split(history, "\n") {
		if l == "Nodes:" {
			break
		}
		if strings.TrimSpace(l) != "" {
			lines++
		}
	}
	if lines > 12 {
		t.Errorf("the terminal holds %d lines after apply, want the progress redrawn in place (at most 12):\n%s", lines, history)
	}
	for _, want := range []string{"Apply complete! Nodes: 8 updated, 0 failed, 0 not started.", "EXIT=0",
		"\nNodes:\n  node.infra-0   updated, rebooted: boot id ", "\n  node.worker-5  updated, rebooted: boot id "} {
		if !strings.Contains(final, want) {
			t.Errorf("the final screen lacks %q:\n%s", want, final)
		}
	}
	if !regexp.MustCompile(`(?m)^pool\.worker .*6/6 done`).MatchString(final) {
		t.Errorf("the final screen lacks the worker pool's line with 6/6 done:\n%s", final)
	}
	if nodeLine.MatchString(final) {
		t.Errorf("the final screen still shows a node in progress:\n%s", final)
	}
}

// An OS image update staged ahead of the slots, as a person sees it on a terminal: the
// pool's line counts the nodes staging beside the one in its slot — staging outside the
// budget — and the plan says the phase.
func TestLiveStagingOnATerminal(t *testing.T) {
	exclusive(t)
	const pools = `provider "local" {
  fleet           = "./fleet"
  stage_duration  = "1500ms"
  reboot_duration = "1s"
}

pool "worker" {
  max_unavailable = 1
  max_staging     = 1
  %s
}
`
	mcp, dir := liveFleet(t, "worker=4", fmt.Sprintf(pools, ""))
	runMCP(t, mcp, "-chdir="+dir, "apply", "-auto-approve") // on a config mcp knows: they stage ahead
	image := `os_image = "quay.io/example/os@sha256:` + strings.Repeat("4", 64) + `"`
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(fmt.Sprintf(pools, image)), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := exec.Command(mcp, "-chdir="+dir, "plan", "-no-color", "-out=p.plan").CombinedOutput()
	if err != nil || !strings.Contains(string(plan), "staging: 4 nodes stage the update ahead of their slots, outside max_unavailable, at most 1 at once") {
		t.Fatalf("plan: %v, want the staging phase\n%s", err, plan)
	}
	screens := applyScreens(t, tmuxServer(t, dir, "mcp-stage"), mcp, dir)
	beside := regexp.MustCompile(`(?m)^pool\.worker .*\d/4 done, 1 updating, 1 staging ahead`)
	saw := false
	for _, s := range screens {
		saw = saw || beside.MatchString(s)
	}
	if !saw {
		t.Errorf("no screen showed a node staging ahead beside the one in its slot; the screens:\n%s",
			strings.Join(screens, "\n----\n"))
	}
	if final := screens[len(screens)-1]; !strings.Contains(final, "Apply complete! Nodes: 4 updated, 0 failed, 0 not started.") {
		t.Errorf("the final screen:\n%s", final)
	}
}

// applyScreens runs `mcp apply p.plan` in dir in a tmux session "apply" of 120×30 and
// returns the screen read every 100 ms until apply has exited (the last one says EXIT=);
// it fails the test after 60 s.
func applyScreens(t *testing.T, tmux func(args ...string) string, mcp, dir string) []string {
	t.Helper()
	script := fmt.Sprintf("%s -chdir=%s apply p.plan; echo EXIT=$?; sleep 600", mcp, dir)
	tmux("new-session", "-d", "-s", "apply", "-x", "120", "-y", "30", "sh", "-c", script)
	var screens []string
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		s := tmux("capture-pane", "-p", "-t", "apply")
		screens = append(screens, s)
		if strings.Contains(s, "EXIT=") {
			return screens
		}
		if time.Now().After(deadline) {
			t.Fatalf("apply did not end within 60s; the screen:\n%s", s)
		}
	}
}

// The live view fits the terminal it is drawn on, as a person sees it in tmux at 160 and
// then 80 columns (resized mid-apply): each pool's bar keeps its width however long its
// wait message (which goes on the lines below, wrapped at spaces), no line wraps, none is
// cut mid-word (issue 33: "waiting 0s before n…"), and the final frame is exact — every
// node done, no wait left over — and ends with each node rebooted and its boot ids,
// wrapped to 80 columns. The plan printed before the apply does not wrap at 160 columns
// either.
func TestLiveProgressFitsTheTerminal(t *testing.T) {
	exclusive(t)
	// One node at a time, each drained and rebooted: the others wait, with a long reason.
	mcp, dir := liveFleet(t, "worker=6", `provider "local" {
  fleet           = "./fleet"
  drain_duration  = "300ms"
  reboot_duration = "900ms"
}

pool "worker" {
  max_unavailable = 1
}

config "50-x" {
  pools       = ["worker"]
  file "/etc/x.conf" { content = "x\n" }
  kernel_args = ["nosmt"]
}
`)
	tmux := tmuxServer(t, dir, "mcp-fit")
	script := fmt.Sprintf("%s -chdir=%s plan -out=p.plan; echo PLANNED; sleep 1; %s -chdir=%s apply p.plan; echo EXIT=$?; sleep 600", mcp, dir, mcp, dir)
	tmux("new-session", "-d", "-s", "fit", "-x", "160", "-y", "40", "sh", "-c", script)

	type frame struct {
		width int
		text  string // wrapped lines joined (-J): a wrapped line shows as one longer than width
		// settling: taken within 600ms of the resize, before the view's next redraw (every
		// 200ms) replaced the frame the terminal rewrapped
		settling bool
	}
	var frames []frame
	resized := false
	var resizedAt time.Time
	start := time.Now()
	for {
		w := 0
		fmt.Sscan(strings.TrimSpace(tmux("display-message", "-p", "-t", "fit", "#{pane_width}")), &w)
		s := tmux("capture-pane", "-p", "-J", "-t", "fit")
		frames = append(frames, frame{w, s, resized && time.Since(resizedAt) < 600*time.Millisecond})
		if strings.Contains(s, "EXIT=") {
			break
		}
		if !resized && strings.Contains(s, "pool.worker") && strings.Contains(s, "1/6 done") {
			tmux("resize-window", "-t", "fit", "-x", "80", "-y", "40")
			resized, resizedAt = true, time.Now()
		}
		if time.Since(start) > 90*time.Second {
			t.Fatalf("apply did not end within 90s; the screen:\n%s", s)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !resized {
		t.Fatal("the apply ended before the terminal could be resized")
	}
	bar := regexp.MustCompile(`^pool\.worker +\[[^\]]{22}\] `)
	midWord := regexp.MustCompile(`\S…`) // mpb's cut, and the view's before: "before n…"
	var sawWait80, sawWait160 bool
	for _, f := range frames {
		if f.settling {
			continue
		}
		plan, live, _ := strings.Cut(f.text, "PLANNED\n")
		if f.width == 160 { // printed at 160 columns; rewrapped by the terminal when it shrinks
			for _, l := range strings.Split(plan, "\n") {
				if n := utf8.RuneCountInString(l); n > f.width {
					t.Errorf("a line of the plan of %d columns on a terminal of %d wraps:\n%s", n, f.width, l)
				}
			}
		}
		for _, l := range strings.Split(strings.TrimRight(live, "\n"), "\n") {
			if n := utf8.RuneCountInString(l); n > f.width {
				t.Errorf("a line of %d columns on a terminal of %d wraps:\n%s", n, f.width, l)
			}
			if midWord.MatchString(l) {
				t.Errorf("a line cut mid-word on a terminal of %d:\n%s", f.width, l)
			}
			if strings.Contains(l, "waiting") {
				sawWait80 = sawWait80 || f.width == 80
				sawWait160 = sawWait160 || f.width == 160
			}
			if strings.HasPrefix(l, "pool.worker") && !bar.MatchString(l) {
				t.Errorf("the pool's bar lost its width on a terminal of %d:\n%q", f.width, l)
			}
		}
	}
	if !sawWait80 || !sawWait160 {
		t.Errorf("no frame showed a wait at 160 (%v) and at 80 columns (%v)", sawWait160, sawWait80)
	}
	_, final, _ := strings.Cut(frames[len(frames)-1].text, "PLANNED\n")
	if strings.Count(final, "pool.worker") != 1 || !regexp.MustCompile(`(?m)^pool\.worker +\[={22}\] 6/6 done$`).MatchString(final) || strings.Contains(final, "waiting") ||
		!strings.Contains(final, "Apply complete! Nodes: 6 updated, 0 failed, 0 not started.") || !strings.Contains(final, "EXIT=0") {
		t.Errorf("the final frame:\n%s", final)
	}
	rebooted := regexp.MustCompile(`(?m)^  node\.worker-\d  updated, rebooted: boot id [0-9a-f]{32} →\n {17}[0-9a-f]{32}$`)
	if got := len(rebooted.FindAllString(final, -1)); got != 6 {
		t.Errorf("the final frame names %d nodes rebooted with their boot ids on two lines of 80 columns, want 6:\n%s", got, final)
	}
}

// liveFleet needs tmux (skipping without it, unless CI or MCP_REQUIRE_K8S asks for it),
// and makes a local fleet of nodes (fleet init -nodes) with the configuration hcl in a
// temporary directory; it returns the mcp binary and the directory.
func liveFleet(t *testing.T, nodes, hcl string) (mcp, dir string) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("MCP_REQUIRE_K8S") != "" || os.Getenv("CI") != "" {
			t.Fatal("tmux is not installed: run make tmux")
		}
		t.Skip("tmux is not installed (make tmux installs it)")
	}
	dir = t.TempDir()
	mcp = mcpBinary(t)
	runMCP(t, mcp, "-chdir="+dir, "fleet", "init", "fleet", "-nodes", nodes, "-zones", "a")
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	return mcp, dir
}

// tmuxServer returns a function that runs a tmux command on a server of the test's own
// (socket NAME-PID), killed when the test ends.
func tmuxServer(t *testing.T, dir, name string) func(args ...string) string {
	t.Helper()
	// tmux (3.3 on) moves what a clear of the whole screen erases into its history; a
	// terminal emulator does not, and the redraw clears from the top of the screen here.
	conf := filepath.Join(dir, "tmux.conf")
	if err := os.WriteFile(conf, []byte("set -g scroll-on-clear off\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := fmt.Sprintf("%s-%d", name, os.Getpid())
	t.Cleanup(func() { exec.Command("tmux", "-L", sock, "kill-server").Run() })
	return func(args ...string) string {
		out, err := exec.Command("tmux", append([]string{"-L", sock, "-f", conf}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
}
