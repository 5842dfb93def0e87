package acceptance

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// notRunnable marks the README's command block that follows it as one its test does not
// run, with the reason: <!-- readme-not-runnable: REASON -->. Keep such blocks rare.
var notRunnable = regexp.MustCompile(`^<!-- readme-not-runnable: (.+) -->$`)

// suiteTarget matches a make target that runs test suites or benchmarks: never run from
// a test (make test would run this test again).
var suiteTarget = regexp.MustCompile(`(?m)^\s*make\s+(test|test-vm|chaos|chaos-vm|fuzz|fuzz-short|bench[-\w]*)(\s|$)`)

// readmeBlock is one command block of the README: its first line's number, its text, and
// the reason it is not run ("" when it is).
type readmeBlock struct {
	line      int
	text      string
	notReason string
}

// readmeBlocks are the command blocks (```sh, ```bash, ```shell) of readme, the file name,
// in order.
func readmeBlocks(t *testing.T, name string, readme []byte) []readmeBlock {
	t.Helper()
	var blocks []readmeBlock
	var cur *readmeBlock
	reason := ""
	sc := bufio.NewScanner(bytes.NewReader(readme))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		case line == "```sh" || line == "```bash" || line == "```shell":
			cur = &readmeBlock{line: n + 1, notReason: reason}
			reason = ""
		case notRunnable.MatchString(line):
			reason = notRunnable.FindStringSubmatch(line)[1]
		case strings.TrimSpace(line) != "":
			if reason != "" {
				t.Fatalf("%s:%d: a readme-not-runnable marker is not followed by a command block", name, n-1)
			}
		}
	}
	if cur != nil {
		t.Fatalf("%s:%d: the command block is not closed", name, cur.line)
	}
	return blocks
}

// TestReadmeRuns runs every command block of the README, verbatim and in order, in one
// bash shell (set -euo pipefail), as a reader pastes them into one terminal: in a scratch
// copy of the repository (so make build writes its own bin/), with a scratch TMPDIR. A
// block marked readme-not-runnable is left out and its reason logged. A command that
// fails fails the test, naming the block's line.
func TestReadmeRuns(t *testing.T) {
	exclusive(t)
	if testing.Short() {
		t.Skip("builds mcp and runs the demo and the walk-through")
	}
	runReadme(t, "README.md")
}

// TestFleetReadmeRuns runs examples/fleet's README as TestReadmeRuns runs the README, from
// the repository's root, with mcp on the PATH as its first line asks.
func TestFleetReadmeRuns(t *testing.T) {
	exclusive(t)
	runReadme(t, "examples/fleet/README.md", "PATH="+filepath.Dir(mcpBinary(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// runReadme runs the command blocks of the repository's file name as TestReadmeRuns says,
// with env added to the shell's environment.
func runReadme(t *testing.T, name string, env ...string) {
	t.Helper()
	repo, _ := filepath.Abs("..")
	readme, err := os.ReadFile(filepath.Join(repo, name))
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeBlocks(t, name, readme)
	work := t.TempDir()
	copyRepo(t, repo, filepath.Join(work, "repo"))
	tmp := filepath.Join(work, "tmp")
	os.Mkdir(tmp, 0o755)

	var script strings.Builder
	run, skipped := 0, 0
	for _, b := range blocks {
		if b.notReason != "" {
			skipped++
			t.Logf("%s:%d not run: %s", name, b.line, b.notReason)
			continue
		}
		if m := suiteTarget.FindString(b.text); m != "" {
			t.Fatalf("%s:%d: the block runs %q, which runs the tests (this one among them) for up to hours: "+
				"give it a block of its own marked <!-- readme-not-runnable: REASON -->", name, b.line, strings.TrimSpace(m))
		}
		run++
		fmt.Fprintf(&script, "echo '### %s:%d' >&2\n%s", name, b.line, b.text)
	}
	script.WriteString("echo '### the end' >&2\n")
	if run == 0 || skipped > 1 {
		t.Fatalf("%d blocks to run, %d marked not runnable: %s's commands are to be run", run, skipped, name)
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script.String())
	cmd.Dir = filepath.Join(work, "repo")
	cmd.Env = append(append(os.Environ(), env...), "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	marks := regexp.MustCompile(`(?m)^### (.+)$`).FindAllStringSubmatch(string(out), -1)
	if err != nil || len(marks) == 0 || marks[len(marks)-1][1] != "the end" {
		last := "before the first block"
		if len(marks) > 0 {
			last = marks[len(marks)-1][1]
		}
		t.Fatalf("%s's commands failed in the block at %s: %v\n%s", name, last, err, lastLines(string(out), 60))
	}
	t.Logf("%d command blocks of %s run", run, name)
}

// copyRepo copies the repository's files (those git tracks, and new ones it does not
// ignore) to dst: make build there writes dst's bin/, not the checkout's.
func copyRepo(t *testing.T, repo, dst string) {
	t.Helper()
	ls := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	ls.Dir = repo
	names, err := ls.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(names), "\x00"), "\x00") {
		src := filepath.Join(repo, name)
		st, err := os.Lstat(src)
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the work tree, or a link (bin/)
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(dst, name)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, st.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}
