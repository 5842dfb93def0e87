package views

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// On a terminal -watch redraws in place: from the top left, each line cleared to its end,
// the rest of the screen cleared, and never more lines than the terminal has (they would
// scroll out of the next redraw's reach).
func TestStatusRedrawFitsTheTerminal(t *testing.T) {
	s := &planner.Status{}
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		s.Nodes = append(s.Nodes, planner.NodeStatus{Name: "node-" + n, Pool: "worker", Current: "r1", Desired: "r1", State: "Done"})
	}
	var b bytes.Buffer
	v := NewStatus(StatusOptions{Nodes: true, Watch: true, Redraw: true, Height: func() int { return 10 },
		Interval: 2 * time.Second}, &b)
	at := time.Date(2026, 11, 23, 17, 0, 0, 0, time.UTC)
	if err := v.Status(s, at); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.HasPrefix(out, "\x1b[H") || !strings.HasSuffix(out, "\x1b[J") {
		t.Errorf("a redraw does not start at home and clear below:\n%q", out)
	}
	lines := strings.Split(strings.TrimSuffix(strings.TrimSuffix(out, "\x1b[J"), "\n"), "\n")
	if len(lines) != 9 || !strings.Contains(lines[0], "Every 2s: mcp status") || !strings.Contains(lines[8], "more lines") {
		t.Errorf("a redraw on a terminal of 10 lines has %d lines:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for _, l := range lines {
		if !strings.HasSuffix(l, "\x1b[K") {
			t.Errorf("line %q is not cleared to its end", l)
		}
	}
	// A second redraw replaces the first: it starts at home again, no blank line between.
	b.Reset()
	v.Status(s, at)
	if !strings.HasPrefix(b.String(), "\x1b[H") {
		t.Errorf("the second redraw: %q", b.String())
	}
}

// Machine templates get a table after the pools' when there are any, and always a list in
// -json (format 1.1).
func TestStatusTemplates(t *testing.T) {
	tm := model.MachineTemplate{Kind: "MachineSet", APIVersion: "machine.openshift.io/v1beta1", Namespace: "openshift-machine-api",
		Name: "w-a", Platform: "aws", Field: "spec.template.spec.providerSpec.value.ami.id", Image: "ami-1"}
	s := &planner.Status{Pools: []planner.PoolStatus{{Name: "worker", Machines: 1}},
		Templates: []planner.TemplateStatus{{Template: tm, Pool: "worker", BootImage: "rhcos-9", Wanted: "ami-2",
			State: planner.TemplateStateLagging, Reason: "boot_image.rhcos-9's aws image is ami-2"}}}
	var b bytes.Buffer
	if err := NewStatus(StatusOptions{}, &b).Status(s, time.Now()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"TEMPLATE", "REASON", "MachineSet/openshift-machine-api/w-a", "ami-1", "lagging", "boot_image.rhcos-9's aws image is ami-2"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "MACHINECOUNT") > strings.Index(out, "TEMPLATE") {
		t.Errorf("the templates table comes before the pools':\n%s", out)
	}
	b.Reset()
	NewStatus(StatusOptions{}, &b).Status(&planner.Status{Pools: s.Pools}, time.Now())
	if strings.Contains(b.String(), "TEMPLATE") {
		t.Errorf("a templates table with no templates:\n%s", b.String())
	}

	b.Reset()
	if err := NewStatus(StatusOptions{Output: OutputJSON}, &b).Status(s, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		FormatVersion string           `json:"format_version"`
		Templates     []map[string]any `json:"templates"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{{"id": "MachineSet/openshift-machine-api/w-a", "kind": "MachineSet", "api_version": "machine.openshift.io/v1beta1",
		"namespace": "openshift-machine-api", "name": "w-a", "owner": "", "pool": "worker", "platform": "aws",
		"field": "spec.template.spec.providerSpec.value.ami.id", "image": "ami-1", "boot_image": "rhcos-9", "wanted_image": "ami-2",
		"status": "lagging", "reason": "boot_image.rhcos-9's aws image is ami-2"}}
	if doc.FormatVersion != StatusFormatVersion || !cmp.Equal(want, doc.Templates) {
		t.Errorf("-json: version %s, templates %s", doc.FormatVersion, cmp.Diff(want, doc.Templates))
	}
}

// Counts agree with their nouns: one difference, not "1 differences".
func TestNodeReasonCountsAgree(t *testing.T) {
	for _, c := range []struct {
		n    planner.NodeStatus
		want string
	}{
		{planner.NodeStatus{DriftUnlisted: 1}, "drift: 1 difference"},
		{planner.NodeStatus{DriftUnlisted: 3}, "drift: 3 differences"},
	} {
		if got := nodeReason(c.n); got != c.want {
			t.Errorf("nodeReason(%+v) = %q, want %q", c.n, got, c.want)
		}
	}
}
