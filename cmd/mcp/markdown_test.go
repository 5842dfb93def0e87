package main

import (
	"flag"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/testkit/golden"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/*.golden from what mcp prints")

// maxQuickstartMarkdownLines bounds the pull-request summary of the quickstart's first plan
// (six nodes, two pools) as a reviewer first sees it, its folded diffs aside: a summary
// that grows past it is no longer a summary.
const maxQuickstartMarkdownLines = 40

// mcp plan -out, then mcp show -markdown of that file: the quickstart's summary is short
// and exactly testdata/quickstart.markdown.golden, its time aside.
func TestShowMarkdownOfTheQuickstart(t *testing.T) {
	dir := quickstart(t)
	if code, out, errOut := mcp(t, dir, "plan", "-out=first.plan", "-no-color"); code != 0 {
		t.Fatalf("plan -out exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := mcp(t, dir, "show", "-markdown", "first.plan")
	if code != 0 || errOut != "" {
		t.Fatalf("show -markdown exit %d: %s", code, errOut)
	}
	folded := regexp.MustCompile(`(?s)<details>.*?</details>`)
	if n := strings.Count(folded.ReplaceAllString(out, "<details>…</details>"), "\n"); n > maxQuickstartMarkdownLines {
		t.Errorf("the quickstart's markdown summary has %d lines, more than %d:\n%s", n, maxQuickstartMarkdownLines, out)
	}
	got := regexp.MustCompile(`Made \d{4}-\d\d-\d\d \d\d:\d\d UTC`).ReplaceAllString(out, "Made TIME")
	if !strings.Contains(got, "Made TIME") {
		t.Errorf("no creation time in the summary:\n%s", out)
	}
	golden.Check(t, filepath.Join("testdata", "quickstart.markdown.golden"), got, *updateGolden)
	for _, want := range []string{"<details><summary>Changes from nothing (no config of mcp's yet), on 2 nodes (infra-0, infra-1)",
		"+server time.example.com iburst\n", "`+ kernel_args`"} {
		if !strings.Contains(got, want) {
			t.Errorf("the summary lacks %q", want)
		}
	}
}

// As terraform show needs a plan file to show a plan, -markdown needs a saved plan; it
// does not mix with -json or -rendered.
func TestShowMarkdownNeedsASavedPlan(t *testing.T) {
	dir := quickstart(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"show", "-markdown"}, "Usage: mcp show -markdown PLANFILE"},
		{[]string{"show", "-markdown", "-json", "p"}, "-markdown shows a saved plan; it does not go with -json or -rendered"},
		{[]string{"show", "-markdown", "-rendered", "worker"}, "it does not go with -json or -rendered"},
		{[]string{"show", "-markdown", "nope.plan"}, `Loading plan "` + filepath.Join(dir, "nope.plan")},
	} {
		code, out, errOut := mcp(t, dir, c.args...)
		if code != 1 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("mcp %s: exit %d, stdout %q, stderr %q; want exit 1 and %q", strings.Join(c.args, " "), code, out, errOut, c.want)
		}
	}
}
