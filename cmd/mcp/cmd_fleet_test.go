package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// An apply leaves each node's story in its event log (infra-0's kernel arguments take a
// reboot), and mcp fleet events prints it.
func TestFleetEvents(t *testing.T) {
	dir := quickstart(t)
	if code, out, errOut := mcp(t, dir, "apply", "-auto-approve", "-no-color"); code != 0 {
		t.Fatalf("apply exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := mcp(t, dir, "fleet", "events", "infra-0")
	if code != 0 {
		t.Fatalf("fleet events exit %d: %s", code, errOut)
	}
	var kinds []string
	line := regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}  infra-0  (\S+)`)
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("line %q", l)
		}
		kinds = append(kinds, m[1])
	}
	if got := strings.Join(kinds, " "); got != "cordon working reboot not-ready ready done uncordon" {
		t.Errorf("infra-0's events: %s\n%s", got, out)
	}
	if code, out, _ := mcp(t, dir, "fleet", "events"); code != 0 || !strings.Contains(out, "infra-1") {
		t.Errorf("all events: exit %d\n%s", code, out)
	}
	if code, _, errOut := mcp(t, dir, "fleet", "events", "nope"); code != 1 || !strings.Contains(errOut, `no node "nope"`) {
		t.Errorf("unknown node: exit %d %s", code, errOut)
	}
	// A set is an event too; faults are set like labels.
	if code, _, errOut := mcp(t, dir, "fleet", "set", "worker-1", "unschedulable=true", "fault.drain=pdb"); code != 0 {
		t.Fatal(errOut)
	}
	_, out, _ = mcp(t, dir, "fleet", "events", "-fleet", filepath.Join(dir, "fleet"), "worker-1")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); !strings.Contains(lines[len(lines)-1], "worker-1  cordon") {
		t.Errorf("the set's cordon is not the last event:\n%s", out)
	}
}
