package views

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// statusJSON writes -o json: one indented document, as kubectl's (-watch: one after the
// other, a stream jq reads); or -o yaml: the same document in YAML, "---" between documents.
type statusJSON struct {
	w     io.Writer
	yaml  bool
	shown int
}

// jsonStatus is `mcp status -o json` (docs/status.md).
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
	// Conditions and Created came in 1.3.
	Conditions jsonConditions `json:"conditions"`
	Created    *time.Time     `json:"created"`
	// Pause came in 1.4: what the pool's pause holds, since when (null: not paused).
	Pause *planner.PauseStatus `json:"pause"`
	// RolledBack: a rollback left the pool off what the configuration renders.
	RolledBack *model.RolledBack `json:"rolled_back,omitempty"`
}

// jsonConditions are a pool's conditions, as oc get mcp shows them.
type jsonConditions struct {
	Updated  bool `json:"updated"`
	Updating bool `json:"updating"`
	Degraded bool `json:"degraded"`
}

type jsonNodeStatus struct {
	Name          string `json:"name"`
	Pool          string `json:"pool"`
	CurrentConfig string `json:"current_config"`
	DesiredConfig string `json:"desired_config"`
	// TargetConfig is the config the state's pointers give the node: its pool's, or its
	// variant for chosen nodes (absent before the first apply).
	TargetConfig string `json:"target_config,omitempty"`
	State        string `json:"state"`
	Reason       string `json:"reason"`
	Held         bool   `json:"held"`
	HoldReason   string `json:"hold_reason"`
	Condition    string `json:"condition"`
	// Drift came in 1.2: how the node differs from the config it runs.
	Drift         []model.Drift `json:"drift"`
	DriftUnlisted int           `json:"drift_unlisted"`
	// LastFailure and Created came in 1.3.
	LastFailure string     `json:"last_failure"`
	Created     *time.Time `json:"created"`
	// Staged came in 1.5: an update staged ahead of the node's slot, for desired_config.
	Staged bool `json:"staged,omitempty"`
}

func (v *statusJSON) Status(s *planner.Status, at time.Time) error {
	defer func() { v.shown++ }()
	if !v.yaml {
		// Indented as kubectl's -o json: for people as much as for jq (which reads one
		// document after another, as -watch prints them).
		b, err := json.MarshalIndent(statusDocument(s, at), "", "    ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(v.w, string(b))
		return err
	}
	b, err := json.Marshal(statusDocument(s, at))
	if err != nil {
		return err
	}
	y, err := yaml.JSONToYAML(b)
	if err != nil {
		return err
	}
	if v.shown > 0 {
		io.WriteString(v.w, "---\n")
	}
	_, err = v.w.Write(y)
	return err
}

// statusDocument is -o json's document (docs/status.md).
func statusDocument(s *planner.Status, at time.Time) jsonStatus {
	js := jsonStatus{FormatVersion: StatusFormatVersion, ObservedAt: at.UTC(),
		Pools: []jsonPoolStatus{}, Nodes: []jsonNodeStatus{}, Templates: []jsonTemplateStatus{}}
	for _, p := range s.Pools {
		updated, updating, degraded := p.Conditions()
		js.Pools = append(js.Pools, jsonPoolStatus{Name: p.Name, Config: p.Config, Machines: p.Machines,
			Updated: p.Updated, Updating: p.Updating, Degraded: p.Degraded, Drifted: p.Drifted, Held: p.Held, Ready: p.Ready, Paused: p.Paused,
			Conditions: jsonConditions{updated, updating, degraded}, Created: timeOrNil(p.Created), Pause: p.Pause,
			RolledBack: p.RolledBack})
	}
	for _, n := range s.Nodes {
		js.Nodes = append(js.Nodes, jsonNodeStatus{Name: n.Name, Pool: n.Pool, CurrentConfig: n.Current,
			DesiredConfig: n.Desired, TargetConfig: n.Target, State: n.State, Reason: n.Reason, Held: n.Held, HoldReason: n.HoldReason,
			Condition: n.Condition, Drift: append([]model.Drift{}, n.Drift...), DriftUnlisted: n.DriftUnlisted,
			LastFailure: n.LastFailure, Created: timeOrNil(n.Created), Staged: n.Staged})
	}
	for _, ts := range s.Templates {
		t := ts.Template
		js.Templates = append(js.Templates, jsonTemplateStatus{ID: t.ID(), Kind: t.Kind, APIVersion: t.APIVersion,
			Namespace: t.Namespace, Name: t.Name, Owner: t.Owner, Pool: ts.Pool, Platform: t.Platform, Field: t.Field,
			Image: t.Image, BootImage: ts.BootImage, WantedImage: ts.Wanted, Status: string(ts.State), Reason: ts.Reason})
	}
	return js
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// statusName writes -o name: "pool/NAME" a line, or with -nodes "node/NAME", as kubectl
// get -o name: what xargs reads.
type statusName struct {
	w     io.Writer
	nodes bool
}

func (v *statusName) Status(s *planner.Status, _ time.Time) error {
	var b strings.Builder
	if v.nodes {
		for _, n := range s.Nodes {
			fmt.Fprintf(&b, "node/%s\n", n.Name)
		}
	} else {
		for _, p := range s.Pools {
			fmt.Fprintf(&b, "pool/%s\n", p.Name)
		}
	}
	_, err := io.WriteString(v.w, b.String())
	return err
}

// statusJSONPath writes -o jsonpath=TEMPLATE: the template run over -o json's document
// with kubectl's JSONPath ("{.pools[*].name}"; a template without braces gets them, as
// kubectl gives them).
type statusJSONPath struct {
	w        io.Writer
	template string
}

// CheckJSONPath reports what is wrong with a JSONPath template, before anything is read.
func CheckJSONPath(template string) error {
	_, err := parseJSONPath(template)
	return err
}

func parseJSONPath(template string) (*jsonpath.JSONPath, error) {
	if t := strings.TrimSpace(template); t != "" && !strings.HasPrefix(t, "{") {
		template = "{" + t + "}" // kubectl's relaxed form: .pools[*].name
	}
	jp := jsonpath.New("status")
	if err := jp.Parse(template); err != nil {
		return nil, err
	}
	return jp, nil
}

func (v *statusJSONPath) Status(s *planner.Status, at time.Time) error {
	jp, err := parseJSONPath(v.template)
	if err != nil {
		return err
	}
	// Through JSON, so that the template names -o json's fields.
	b, err := json.Marshal(statusDocument(s, at))
	if err != nil {
		return err
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return err
	}
	var out bytes.Buffer
	if err := jp.Execute(&out, doc); err != nil {
		return fmt.Errorf("-o jsonpath: %w", err)
	}
	_, err = v.w.Write(out.Bytes())
	return err
}
