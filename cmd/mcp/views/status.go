package views

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// StatusFormatVersion is the version of `mcp status -json` (docs/status.md). A new field
// is a minor change; a changed or removed one a major change.
const StatusFormatVersion = "1.2"

// Status is what mcp status shows, once or at each refresh of -watch.
type Status interface {
	Status(s *planner.Status, at time.Time) error
}

// StatusOptions choose mcp status's view.
type StatusOptions struct {
	JSON  bool
	Nodes bool // the node table instead of the pools table (JSON has both)
	// Watch: one view per refresh. On a terminal (Redraw) each replaces the last in place,
	// cut to the terminal's height (Height, 0: unknown); elsewhere they follow each other,
	// separated by a blank line (JSON: one document per line).
	Watch    bool
	Redraw   bool
	Height   func() int
	Interval time.Duration // for the heading of a redrawn view
}

// NewStatus returns mcp status's view.
func NewStatus(o StatusOptions, w io.Writer) Status {
	if o.JSON {
		return &statusJSON{w: w}
	}
	return &statusHuman{w: w, o: o}
}

type statusHuman struct {
	w     io.Writer
	o     StatusOptions
	shown int
}

func (v *statusHuman) Status(s *planner.Status, at time.Time) error {
	var b bytes.Buffer
	if v.o.Nodes {
		nodeTable(&b, s)
	} else {
		poolTable(&b, s)
		if len(s.Templates) > 0 {
			b.WriteString("\n")
			templateTable(&b, s)
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

// poolTable is `oc get mcp`'s table with mcp's counts.
func poolTable(w io.Writer, s *planner.Status) {
	t := tablewriter.NewWriter(w)
	t.Header("NAME", "CONFIG", "MACHINES", "UPDATED", "UPDATING", "DEGRADED", "DRIFTED", "HELD", "READY", "PAUSED")
	for _, p := range s.Pools {
		t.Append(p.Name, dash(p.Config), fmt.Sprint(p.Machines), fmt.Sprint(p.Updated), fmt.Sprint(p.Updating),
			fmt.Sprint(p.Degraded), fmt.Sprint(p.Drifted), fmt.Sprint(p.Held), fmt.Sprint(p.Ready), fmt.Sprint(p.Paused))
	}
	t.Render()
}

// templateTable lists the machine templates: their image and whether it is their pool's
// boot image.
func templateTable(w io.Writer, s *planner.Status) {
	t := tablewriter.NewWriter(w)
	t.Header("TEMPLATE", "POOL", "PLATFORM", "IMAGE", "STATUS", "REASON")
	for _, ts := range s.Templates {
		t.Append(ts.Template.ID(), dash(ts.Pool), dash(ts.Template.Platform), dash(ts.Template.Image), string(ts.State), ts.Reason)
	}
	t.Render()
}

// nodeTable lists each node with the config it runs → the one it was told to move to.
func nodeTable(w io.Writer, s *planner.Status) {
	t := tablewriter.NewWriter(w)
	t.Header("NAME", "POOL", "CONFIG", "STATE", "REASON", "HELD", "CONDITION")
	for _, n := range s.Nodes {
		config := dash(n.Current)
		if n.Desired != n.Current {
			config += " → " + n.Desired
		}
		held := ""
		if n.Held {
			held = "yes"
			if n.HoldReason != "" {
				held += ": " + n.HoldReason
			}
		}
		t.Append(n.Name, dash(n.Pool), config, dash(n.State), nodeReason(n), held, n.Condition)
	}
	t.Render()
}

// nodeReason is the agent's reason, and how the node differs from its config.
func nodeReason(n planner.NodeStatus) string {
	why := n.Reason
	if k := len(n.Drift) + n.DriftUnlisted; k > 0 {
		d := fmt.Sprintf("drift: %d differences", k)
		if k == 1 && len(n.Drift) == 1 {
			d = "drift: " + n.Drift[0].String()
		}
		why = strings.TrimPrefix(why+"; "+d, "; ")
	}
	return why
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

type statusJSON struct{ w io.Writer }

// jsonStatus is `mcp status -json` (docs/status.md).
type jsonStatus struct {
	FormatVersion string           `json:"format_version"`
	ObservedAt    time.Time        `json:"observed_at"`
	Pools         []jsonPoolStatus `json:"pools"`
	Nodes         []jsonNodeStatus `json:"nodes"`
	// Templates came in 1.1.
	Templates []jsonTemplateStatus `json:"templates"`
}

type jsonTemplateStatus struct {
	ID          string `json:"id"`
	Kind        string `json:"kind"`
	APIVersion  string `json:"api_version"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	Owner       string `json:"owner"`
	Pool        string `json:"pool"`
	Platform    string `json:"platform"`
	Field       string `json:"field"`
	Image       string `json:"image"`
	BootImage   string `json:"boot_image"`
	WantedImage string `json:"wanted_image"`
	Status      string `json:"status"`
	Reason      string `json:"reason"`
}

type jsonPoolStatus struct {
	Name     string `json:"name"`
	Config   string `json:"config"`
	Machines int    `json:"machines"`
	Updated  int    `json:"updated"`
	Updating int    `json:"updating"`
	Degraded int    `json:"degraded"`
	Drifted  int    `json:"drifted"` // 1.2
	Held     int    `json:"held"`
	Ready    int    `json:"ready"`
	Paused   bool   `json:"paused"`
}

type jsonNodeStatus struct {
	Name          string `json:"name"`
	Pool          string `json:"pool"`
	CurrentConfig string `json:"current_config"`
	DesiredConfig string `json:"desired_config"`
	State         string `json:"state"`
	Reason        string `json:"reason"`
	Held          bool   `json:"held"`
	HoldReason    string `json:"hold_reason"`
	Condition     string `json:"condition"`
	// Drift came in 1.2: how the node differs from the config it runs.
	Drift         []model.Drift `json:"drift"`
	DriftUnlisted int           `json:"drift_unlisted"`
}

// Status writes one document on one line, so that -watch gives a stream a tool can read
// line by line.
func (v *statusJSON) Status(s *planner.Status, at time.Time) error {
	js := jsonStatus{FormatVersion: StatusFormatVersion, ObservedAt: at.UTC(),
		Pools: []jsonPoolStatus{}, Nodes: []jsonNodeStatus{}, Templates: []jsonTemplateStatus{}}
	for _, p := range s.Pools {
		js.Pools = append(js.Pools, jsonPoolStatus{Name: p.Name, Config: p.Config, Machines: p.Machines,
			Updated: p.Updated, Updating: p.Updating, Degraded: p.Degraded, Drifted: p.Drifted, Held: p.Held, Ready: p.Ready, Paused: p.Paused})
	}
	for _, n := range s.Nodes {
		js.Nodes = append(js.Nodes, jsonNodeStatus{Name: n.Name, Pool: n.Pool, CurrentConfig: n.Current,
			DesiredConfig: n.Desired, State: n.State, Reason: n.Reason, Held: n.Held, HoldReason: n.HoldReason,
			Condition: n.Condition, Drift: append([]model.Drift{}, n.Drift...), DriftUnlisted: n.DriftUnlisted})
	}
	for _, ts := range s.Templates {
		t := ts.Template
		js.Templates = append(js.Templates, jsonTemplateStatus{ID: t.ID(), Kind: t.Kind, APIVersion: t.APIVersion,
			Namespace: t.Namespace, Name: t.Name, Owner: t.Owner, Pool: ts.Pool, Platform: t.Platform, Field: t.Field,
			Image: t.Image, BootImage: ts.BootImage, WantedImage: ts.Wanted, Status: string(ts.State), Reason: ts.Reason})
	}
	b, err := json.Marshal(js)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(v.w, string(b))
	return err
}
