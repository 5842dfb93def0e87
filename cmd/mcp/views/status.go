package views

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// StatusFormatVersion is the version of `mcp status -o json` (docs/status.md). A new field
// is a minor change; a changed or removed one a major change.
const StatusFormatVersion = "1.5"

// Status is what mcp status shows, once or at each refresh of -watch.
type Status interface {
	Status(s *planner.Status, at time.Time) error
}

// The output kinds of mcp status -o, as kubectl get's.
const (
	OutputTable = ""
	OutputWide  = "wide"
	OutputJSON  = "json"
	OutputYAML  = "yaml"
	OutputName  = "name"
	// OutputJSONPath is -o jsonpath=TEMPLATE: kubectl's JSONPath over -o json's document.
	OutputJSONPath = "jsonpath"
)

// StatusOutputs are the kinds -o takes (jsonpath with its template: jsonpath=TEMPLATE).
var StatusOutputs = []string{OutputWide, OutputJSON, OutputYAML, OutputName, OutputJSONPath}

// StatusOptions choose mcp status's view.
type StatusOptions struct {
	// Ran: show where each rendered config ran (ranTable), for a cluster of a configuration
	// of clusters; a configuration of one keeps the one table scripts read.
	Ran bool
	// Output is -o: a table (""), a wide one, json, yaml or name.
	Output string
	Nodes  bool // the node table instead of the pools table (JSON and YAML have both)
	// Watch: one view per refresh. On a terminal (Redraw) each replaces the last in place,
	// cut to the terminal's height (Height, 0: unknown); elsewhere they follow each other,
	// separated by a blank line (JSON: one document per line; YAML: "---").
	Watch    bool
	Redraw   bool
	Height   func() int
	Interval time.Duration // for the heading of a redrawn view
	// NoHeaders leaves the tables' header lines out (kubectl's --no-headers).
	NoHeaders bool
	// JSONPath is the template of -o jsonpath=TEMPLATE (CheckJSONPath checks it).
	JSONPath string
}

// NewStatus returns mcp status's view.
func NewStatus(o StatusOptions, w io.Writer) Status {
	switch o.Output {
	case OutputJSON, OutputYAML:
		return &statusJSON{w: w, yaml: o.Output == OutputYAML}
	case OutputName:
		return &statusName{w: w, nodes: o.Nodes}
	case OutputJSONPath:
		return &statusJSONPath{w: w, template: o.JSONPath}
	}
	return &statusHuman{w: w, o: o}
}

type statusHuman struct {
	w     io.Writer
	o     StatusOptions
	shown int
}

func (v *statusHuman) Status(s *planner.Status, at time.Time) error {
	s = Shown(s) // a node's reason, hold or image may hold anything: a tab would break the columns too
	var b bytes.Buffer
	wide := v.o.Output == OutputWide
	if v.o.Nodes {
		nodeTable(&b, s, at, wide, v.o.NoHeaders)
	} else {
		poolTable(&b, s, at, wide, v.o.NoHeaders)
		pauseLines(&b, s, at)
		if len(s.Templates) > 0 {
			b.WriteString("\n")
			templateTable(&b, s, v.o.NoHeaders)
		}
		if v.o.Ran && len(s.Ran) > 0 {
			b.WriteString("\n")
			ranTable(&b, s, at, v.o.NoHeaders)
		}
	}
	defer func() { v.shown++ }()
	switch {
	case v.o.Watch && v.o.Redraw:
		return v.redraw(b.String(), at)
	case v.o.Watch && v.shown > 0:
		if _, err := io.WriteString(v.w, "\n"); err != nil {
			return err
		}
	}
	_, err := v.w.Write(b.Bytes())
	return err
}

// redraw replaces the screen with a heading (as watch(1) prints it) and the table, each
// line cleared to its end so that nothing of the last one shows through, and no more lines
// than the terminal has: more would scroll, and the next redraw could not reach them.
func (v *statusHuman) redraw(table string, at time.Time) error {
	lines := append([]string{fmt.Sprintf("Every %s: mcp status   %s", v.o.Interval, at.Format(time.DateTime)), ""},
		strings.Split(strings.TrimSuffix(table, "\n"), "\n")...)
	if h := v.height(); h > 1 && len(lines) > h-1 {
		more := len(lines) - (h - 2)
		lines = append(lines[:h-2], fmt.Sprintf("… %d more lines; a taller terminal shows them", more))
	}
	var b strings.Builder
	b.WriteString("\x1b[H") // cursor home
	for _, l := range lines {
		b.WriteString(l)
		b.WriteString("\x1b[K\n") // clear the rest of the line
	}
	b.WriteString("\x1b[J") // clear below
	_, err := io.WriteString(v.w, b.String())
	return err
}

func (v *statusHuman) height() int {
	if v.o.Height == nil {
		return 0
	}
	return v.o.Height()
}

// table lays rows out in plain columns as kubectl get does (text/tabwriter, three spaces
// between columns, no padding after the last): what awk and cut read.
type table struct {
	b  bytes.Buffer
	tw *tabwriter.Writer
}

// newTable starts a table with its header line, unless noHeaders.
func newTable(noHeaders bool, header ...string) *table {
	t := &table{}
	t.tw = tabwriter.NewWriter(&t.b, 0, 8, 3, ' ', 0)
	if !noHeaders {
		t.row(header...)
	}
	return t
}

func (t *table) row(cells ...string) {
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) writeTo(w io.Writer) {
	t.tw.Flush()
	for _, l := range strings.SplitAfter(t.b.String(), "\n") {
		io.WriteString(w, strings.TrimRight(strings.TrimSuffix(l, "\n"), " "))
		if strings.HasSuffix(l, "\n") {
			io.WriteString(w, "\n")
		}
	}
}

// poolTable is `oc get mcp`'s table: the pool's config, its conditions as True/False, its
// machine counts and its age; wide adds mcp's other counts and paused.
func poolTable(w io.Writer, s *planner.Status, now time.Time, wide, noHeaders bool) {
	head := []string{"NAME", "CONFIG", "UPDATED", "UPDATING", "DEGRADED", "MACHINECOUNT", "READYMACHINECOUNT",
		"UPDATEDMACHINECOUNT", "DEGRADEDMACHINECOUNT", "AGE"}
	if wide {
		head = append(head, "UPDATINGMACHINECOUNT", "DRIFTEDMACHINECOUNT", "HELDMACHINECOUNT", "PAUSED")
	}
	t := newTable(noHeaders, head...)
	for _, p := range s.Pools {
		updated, updating, degraded := p.Conditions()
		row := []string{p.Name, none(p.Config), condition(updated), condition(updating), condition(degraded),
			fmt.Sprint(p.Machines), fmt.Sprint(p.Ready), fmt.Sprint(p.Updated), fmt.Sprint(p.Degraded), age(p.Created, now)}
		if wide {
			row = append(row, fmt.Sprint(p.Updating), fmt.Sprint(p.Drifted), fmt.Sprint(p.Held), condition(p.Paused))
		}
		t.row(row...)
	}
	t.writeTo(w)
}

// pauseLines says, under the pools' table, what each paused pool's pause holds and since
// when (PauseWords).
func pauseLines(w io.Writer, s *planner.Status, now time.Time) {
	first := true
	for _, p := range s.Pools {
		if p.Pause == nil {
			continue
		}
		if first {
			io.WriteString(w, "\n")
			first = false
		}
		fmt.Fprintf(w, "pool %s: %s\n", p.Name, PauseWords(p.Pause, now))
	}
}

// templateTable lists the machine templates: their image and whether it is their pool's
// boot image.
func templateTable(w io.Writer, s *planner.Status, noHeaders bool) {
	t := newTable(noHeaders, "TEMPLATE", "POOL", "PLATFORM", "IMAGE", "STATUS", "REASON")
	for _, ts := range s.Templates {
		t.row(ts.Template.ID(), none(ts.Pool), none(ts.Template.Platform), none(ts.Template.Image), string(ts.State), ts.Reason)
	}
	t.writeTo(w)
}

// ranTable says where each rendered config ran in this cluster (its state's records, with
// the nodes seen now): on how many nodes, since when, the longest a node ran it healthy,
// and how a node failed on it — what a later stage's soak gate reads (docs/fleets.md).
func ranTable(w io.Writer, s *planner.Status, now time.Time, noHeaders bool) {
	t := newTable(noHeaders, "RENDERED", "POOL", "NODES", "SINCE", "RAN", "HEALTH")
	for _, r := range s.Ran {
		health := "healthy"
		if r.Unhealthy != "" {
			health = "failed: " + r.Unhealthy
		}
		t.row(r.Rendered, r.Pool, strconv.Itoa(r.Nodes), r.Since.UTC().Format("2006-01-02 15:04 MST"),
			model.ShortDuration(r.Longest.Truncate(time.Second)), health)
	}
	t.writeTo(w)
}

// nodeTable lists each node: the config it runs, its agent's state, how it is out of
// service, held or not, its age, and why (its agent's reason, its drift, or the failure
// its last apply left); wide adds the config it was told to move to and its drift count.
func nodeTable(w io.Writer, s *planner.Status, now time.Time, wide, noHeaders bool) {
	head := []string{"NAME", "POOL", "CONFIG", "STATE", "CONDITION", "HELD", "AGE"}
	if wide {
		head = append(head, "DESIRED", "DRIFTED")
	}
	t := newTable(noHeaders, append(head, "REASON")...)
	for _, n := range s.Nodes {
		row := []string{n.Name, none(n.Pool), none(n.Current), none(n.State), none(shortCondition(n.Condition)),
			condition(n.Held), age(n.Created, now)}
		if wide {
			row = append(row, none(n.Desired), fmt.Sprint(len(n.Drift)+n.DriftUnlisted))
		}
		t.row(append(row, nodeReason(n))...)
	}
	t.writeTo(w)
}

// shortCondition is a node's condition as one word, as kubectl get nodes writes its
// STATUS ("NotReady,cordoned,Degraded"): without the Degraded reason, which REASON has.
func shortCondition(c string) string {
	if i := strings.Index(c, "Degraded: "); i >= 0 {
		c = c[:i] + "Degraded"
	}
	return strings.ReplaceAll(c, ", ", ",")
}

// nodeReason is the agent's reason, then how the node differs from its config, then the
// failure its last apply left on it, and its hold's reason.
func nodeReason(n planner.NodeStatus) string {
	var why []string
	if n.Reason != "" {
		why = append(why, n.Reason)
	}
	if k := len(n.Drift) + n.DriftUnlisted; k > 0 {
		d := "drift: " + plural(k, "%d difference", "%d differences")
		if k == 1 && len(n.Drift) == 1 {
			d = "drift: " + n.Drift[0].String()
		}
		why = append(why, d)
	}
	if n.Staged {
		why = append(why, "staged ahead: "+n.Desired+", not yet switched to")
	}
	if n.LastFailure != "" && n.State != "Degraded" {
		why = append(why, "last apply failed: "+n.LastFailure)
	}
	if n.Held && n.HoldReason != "" {
		why = append(why, "held: "+n.HoldReason)
	}
	return strings.Join(why, "; ")
}

// condition is a condition's status as Kubernetes writes it.
func condition(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// none is s, or kubectl's <none>.
func none(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// age is how long ago t was, as kubectl prints an AGE ("5m", "3h12m", "12d"); <unknown>
// for a zero time.
func age(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}
