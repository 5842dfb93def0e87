package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// mcp show PLANFILE prints what mcp plan printed when it saved the plan (issue 33), as
// terraform show does: one rendering, not a longer one with every node's reasons.
func TestShowPrintsWhatPlanPrinted(t *testing.T) {
	dir := quickstart(t)
	code, planned, errOut := mcp(t, dir, "plan", "-no-color", "-out=p")
	if code != 0 {
		t.Fatalf("plan -out: exit %d\n%s", code, errOut)
	}
	planned, saved, ok := strings.Cut(planned, "\nSaved the plan to: p\n")
	if !ok || !strings.Contains(saved, `mcp apply "p"`) {
		t.Fatalf("plan -out does not say where it saved the plan:\n%s", planned)
	}
	code, shown, errOut := mcp(t, dir, "show", "-no-color", "p")
	if code != 0 {
		t.Fatalf("show: exit %d\n%s", code, errOut)
	}
	if diff := cmp.Diff(planned, shown); diff != "" {
		t.Errorf("show differs from plan (-plan +show):\n%s", diff)
	}
	// The quickstart's infra nodes take six steps for one added kernel argument.
	if want := "    cordon, drain, kargs, reboot, verify, uncordon: kernel arguments +nosmt +mitigations=auto\n"; strings.Count(shown, want) != 1 {
		t.Errorf("the infra pool's Why does not group the kernel arguments' steps once (%q):\n%s", want, shown)
	}
}
