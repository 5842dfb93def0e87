package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readme is the repository's README.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The README's example output is what mcp prints: the quickstart's plan of a new NTP
// server after its first apply, from the worker pool's line to the summary.
func TestReadmeOutput(t *testing.T) {
	m := regexp.MustCompile("(?s)<!-- readme-output: mcp plan -var ntp_server=ntp.internal [^>]*-->\n```\n(.*?)```").FindStringSubmatch(readme(t))
	if m == nil {
		t.Fatal("the README has no readme-output block for mcp plan -var ntp_server=ntp.internal")
	}
	dir := quickstart(t)
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := mcp(t, dir, "plan", "-no-color", "-var", "ntp_server=ntp.internal")
	if code != 0 {
		t.Fatalf("plan: %d\n%s%s", code, out, errOut)
	}
	got := out[strings.Index(out, "pool.worker "):]
	if d := cmp.Diff(unTimed(m[1]), unTimed(got)); d != "" {
		t.Errorf("the README's example output is not what mcp prints (-readme +mcp):\n%s", d)
	}
}

// estimateTimes are the durations of a plan's estimate lines, which are measured times:
// the README shows one run's.
var estimateTimes = regexp.MustCompile(`(?m)^(  estimate: .*?)(?:[0-9.]+(?:ms|µs|ns|s|m|h))+`)

// unTimed is s with the durations of its estimate lines replaced by "D".
func unTimed(s string) string {
	for {
		t := estimateTimes.ReplaceAllString(s, "${1}D")
		if t == s {
			return s
		}
		s = t
	}
}

// The README's command blocks run as written in acceptance/readme_test.go (TestReadmeRuns).
