package views

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
)

// Meta is what a plan was made from, as its plan file records it.
type Meta struct {
	Lineage          string
	Serial           int64
	FleetFingerprint string
	ConfigDir        string
	Version          string
	Created          time.Time // when the plan was made; zero: not known
	// Variables are the configuration's variables' values (JSON), by name; a sensitive
	// one's is nil (not shown).
	Variables        map[string]json.RawMessage
	Refresh          *model.RefreshStats
	Targets, Exclude []string
	// Soak is the soak gate's word on the plan's pools (planfile.File.Soak).
	Soak []planfile.SoakNote
}

// JSONFormatVersion is the version of mcp's plan JSON; its top level follows Terraform's
// plan JSON (format 1.2), so plan-review tools that read resource_changes work on it.
const JSONFormatVersion = "1.2"

type jsonPlan struct {
	FormatVersion string `json:"format_version"`
	MCPVersion    string `json:"mcp_version"`
	Applyable     bool   `json:"applyable"`
	Complete      bool   `json:"complete"`
	Errored       bool   `json:"errored"`
	// Timestamp is when the plan was made (RFC 3339, UTC), as Terraform's.
	Timestamp string `json:"timestamp,omitempty"`
	// Variables are the values the plan was made with, as Terraform's: {"NAME": {"value": …}}.
	Variables       map[string]jsonVariable `json:"variables,omitempty"`
	ResourceChanges []resourceChange        `json:"resource_changes"`
	ResourceDrift   []resourceChange        `json:"resource_drift"`
	MCP             jsonMeta                `json:"mcp"`
}

// jsonVariable is a variable's value, or for a sensitive one only that it is sensitive.
type jsonVariable struct {
	Value     json.RawMessage `json:"value,omitempty"`
	Sensitive bool            `json:"sensitive,omitempty"`
}

type resourceChange struct {
	Address string `json:"address"`
	Mode    string `json:"mode"`
	Type    string `json:"type"`
	Name    string `json:"name"`
	// Index is the key of a resource of a map (a machine template's "Kind/namespace/name").
	Index  any    `json:"index,omitempty"`
	Change change `json:"change"`
	MCP    any    `json:"mcp,omitempty"` // *nodeMeta in resource_changes, *driftMeta in resource_drift
}

// driftMeta is mcp's detail of a resource_drift entry: whether the plan restores it.
type driftMeta struct {
	Pool    string `json:"pool"`
	OnDrift string `json:"on_drift"` // the pool's: restore or report
	// Restored is true when the plan's steps for the node put the drift back.
	Restored bool `json:"restored"`
}

type change struct {
	Actions []string `json:"actions"`
	Before  any      `json:"before"`
	After   any      `json:"after"`
	// BeforeSensitive and AfterSensitive mark the sensitive attributes of before and after,
	// as Terraform's do (set on file, unit, kernel-argument and OS-image changes).
	BeforeSensitive any `json:"before_sensitive,omitempty"`
	AfterSensitive  any `json:"after_sensitive,omitempty"`
	// Importing, as Terraform's for a resource it imports: set on a node to adopt, which
	// is recorded on its target with no change (actions ["no-op"]).
	Importing *importing `json:"importing,omitempty"`
}

// importing is Terraform's change.importing: the id of what is imported (the node's name).
type importing struct {
	ID string `json:"id"`
}

type poolValue struct {
	RenderedConfig string `json:"rendered_config"`
	MaxUnavailable int    `json:"max_unavailable,omitempty"`
	Paused         bool   `json:"paused,omitempty"`
}

type nodeValue struct {
	RenderedConfig string        `json:"rendered_config"`
	Drift          []model.Drift `json:"drift,omitempty"`
	DriftUnlisted  int           `json:"drift_unlisted,omitempty"` // drifted paths the node did not list
	// DriftUnderWay: an unfinished update to this config may have written the drift.
	DriftUnderWay string `json:"drift_under_way,omitempty"`
}

type nodeMeta struct {
	Pool     string     `json:"pool"`
	Zone     string     `json:"zone,omitempty"`
	Action   string     `json:"action"`
	Steps    []jsonStep `json:"steps"`
	Reboot   bool       `json:"reboot"`
	Wave     int        `json:"wave"`
	Deferred bool       `json:"deferred"`
	// Condition says how the node was out of service ("" when Ready, schedulable, settled).
	Condition string            `json:"condition,omitempty"`
	Blockers  []planner.Blocker `json:"blockers"`
	Warnings  []string          `json:"warnings"`
	// Held says why the node is kept out of the rollout; Untargeted: outside -target.
	Held       string `json:"held,omitempty"`
	Untargeted bool   `json:"untargeted,omitempty"`
	// Canary: one of its pool's canary nodes, updated alone and first.
	Canary bool `json:"canary,omitempty"`
	// DriftOnly: the steps only restore drift (no configuration change for the node).
	DriftOnly bool `json:"drift_only,omitempty"`
	// Happened says what the node shows of its update already done (steps not in steps).
	Happened string `json:"happened,omitempty"`
	// Observation is what the node carries against its target, for a node whose current
	// config is absent or unknown to the state: its steps come from it.
	Observation *model.Observation `json:"observation,omitempty"`
	// Interim: the node's pool is paused for disruptive changes and its after is an interim
	// config (what disrupts nothing of its move); the rest of the move waits.
	Interim *jsonInterim `json:"interim,omitempty"`
}

// jsonInterim is planner.Interim with its waiting steps as the plan's steps are shown.
type jsonInterim struct {
	Target  string     `json:"target"`
	Waiting []jsonStep `json:"waiting"`
}

type jsonMeta struct {
	Lineage          string             `json:"lineage"`
	Serial           int64              `json:"serial"`
	FleetFingerprint string             `json:"fleet_fingerprint"`
	ConfigDir        string             `json:"config_dir,omitempty"`
	Summary          string             `json:"summary"`
	Pools            []planner.PoolPlan `json:"pools"`
	Unmanaged        []string           `json:"unmanaged"`
	// BootImages are the pools' boot images (planner.BootImagePlan), when any pool manages one.
	BootImages []planner.BootImagePlan `json:"boot_images,omitempty"`
	// Refresh is what the refresh observed and cost; absent in a plan saved without it.
	Refresh *model.RefreshStats `json:"refresh,omitempty"`
	// Targets and Exclude are the plan's -target and -exclude.
	Targets []string `json:"targets,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
	// Soak is the soak gate's word on each pool the plan changes, in a cluster of a
	// stage after others; a refusal not overridden makes the plan not applyable.
	Soak []planfile.SoakNote `json:"soak,omitempty"`
}

// JSONPlan renders the plan as JSON: pools first (by name), then nodes in plan order.
func JSONPlan(p *planner.Rollout, meta Meta) ([]byte, error) {
	out := jsonPlan{FormatVersion: JSONFormatVersion, MCPVersion: meta.Version, Applyable: p.HasChanges() && !soakRefused(meta.Soak),
		Complete: complete(p, meta.Targets), ResourceChanges: []resourceChange{}, ResourceDrift: []resourceChange{},
		MCP: jsonMeta{Lineage: meta.Lineage, Serial: meta.Serial, FleetFingerprint: meta.FleetFingerprint,
			ConfigDir: meta.ConfigDir, Summary: PlanSummary(p), Pools: poolsWithoutChanges(p.Pools), Unmanaged: nonNil(p.Unmanaged), BootImages: p.BootImages,
			Refresh: meta.Refresh, Targets: meta.Targets, Exclude: meta.Exclude, Soak: meta.Soak}}
	out.Variables = make(map[string]jsonVariable, len(meta.Variables)) // none: omitted
	for name, v := range meta.Variables {
		out.Variables[name] = jsonVariable{Value: v, Sensitive: v == nil}
	}
	if !meta.Created.IsZero() {
		out.Timestamp = meta.Created.UTC().Format(time.RFC3339)
	}
	for _, pp := range p.Pools {
		act := "no-op"
		switch {
		case !pp.ReRendered && len(pp.MachinesMoved) == 0 || pp.PointerKept:
		case pp.Previous == "":
			act = "create" // as Terraform's: nothing in the state before (before is null)
		default:
			act = "update"
		}
		var before any
		if pp.Previous != "" {
			before = poolValue{RenderedConfig: pp.Previous}
		}
		out.ResourceChanges = append(out.ResourceChanges, resourceChange{Address: "pool." + pp.Name, Mode: "managed",
			Type: "mcp_pool", Name: pp.Name, Change: change{Actions: []string{act}, Before: before,
				After: poolValue{RenderedConfig: pp.Rendered, MaxUnavailable: pp.MaxUnavailable, Paused: pp.Paused}}})
	}
	stagesAhead := map[string]bool{}
	for _, pp := range p.Pools {
		stagesAhead[pp.Name] = pp.MaxStaging > 0
	}
	for _, n := range p.Nodes {
		act, imp := "no-op", (*importing)(nil)
		switch {
		case n.Action == planner.NodeAdopt:
			imp = &importing{ID: n.Name}
		case n.Changed():
			act = "update"
		}
		var before any
		if n.From != "" {
			before = nodeValue{RenderedConfig: n.From}
		}
		steps := stepsJSON(n.Steps, stagesAhead[n.Pool], n.From, n.To, func(name string) *model.Rendered { return p.Rendered[name] }, p.Provenance[n.To])
		out.ResourceChanges = append(out.ResourceChanges, resourceChange{Address: "node." + n.Name, Mode: "managed",
			Type: "mcp_node", Name: n.Name, Change: change{Actions: []string{act}, Before: before, After: nodeValue{RenderedConfig: n.To}, Importing: imp},
			MCP: &nodeMeta{Pool: n.Pool, Zone: n.Zone, Action: string(n.Action), Steps: steps, Reboot: n.Reboot, Wave: n.Wave,
				Deferred: n.Deferred, Condition: n.Condition, Blockers: nonNilB(n.Blockers), Warnings: nonNil(n.Warnings),
				Held: n.Held, Untargeted: n.Untargeted, Canary: n.Canary, DriftOnly: n.DriftOnly, Happened: n.Happened,
				Observation: n.Observation, Interim: interimJSON(p, &n)}})
	}
	out.ResourceChanges = append(out.ResourceChanges, bootImageChanges(p)...)
	out.ResourceChanges = append(out.ResourceChanges, itemChanges(p)...)
	onDrift := map[string]model.OnDrift{}
	for _, pp := range p.Pools {
		onDrift[pp.Name] = cmp.Or(pp.OnDrift, model.OnDriftRestore)
	}
	for _, n := range p.Drifted() {
		// As Terraform's resource_drift: before is what the state says, after what was observed.
		out.ResourceDrift = append(out.ResourceDrift, resourceChange{Address: "node." + n.Name, Mode: "managed",
			Type: "mcp_node", Name: n.Name, Change: change{Actions: []string{"update"},
				Before: nodeValue{RenderedConfig: n.From}, After: nodeValue{RenderedConfig: n.From, Drift: n.Drift, DriftUnlisted: n.DriftUnlisted, DriftUnderWay: n.DriftUnderWay}},
			MCP: &driftMeta{Pool: n.Pool, OnDrift: string(onDrift[n.Pool]), Restored: n.Changed() && !onDrift[n.Pool].Reports()}})
	}
	return json.Marshal(out) // compact, as terraform show -json: plans can be large
}

// poolsWithoutChanges are the pools for mcp.pools: their changes are resource changes of
// their own (itemChanges), not repeated there.
func poolsWithoutChanges(pools []planner.PoolPlan) []planner.PoolPlan {
	out := make([]planner.PoolPlan, len(pools))
	for i, pp := range pools {
		pp.Changes = nil
		out[i] = pp
	}
	return out
}

// complete is Terraform's "complete": applying the plan leaves nothing for the next plan
// to do — false with -target, or when nodes are deferred (paused pool, no budget left).
func complete(p *planner.Rollout, targets []string) bool {
	if len(targets) > 0 {
		return false
	}
	for i := range p.Nodes {
		if p.Nodes[i].Deferred {
			return false
		}
	}
	return true
}

// writeJSONPlan writes a plan file's plan as one line of JSON.
func writeJSONPlan(w io.Writer, pf *planfile.File) error {
	b, err := jsonPlanOf(pf)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// jsonPlanOf is a plan file's plan as JSON.
func jsonPlanOf(pf *planfile.File) ([]byte, error) {
	vars := make(map[string]json.RawMessage, len(pf.Variables))
	for name, v := range pf.Variables {
		if vars[name] = v.Value; v.Sensitive {
			vars[name] = nil
		}
	}
	return JSONPlan(pf.Rollout, Meta{Variables: vars, Lineage: pf.Lineage, Serial: pf.Serial, FleetFingerprint: pf.FleetFingerprint,
		ConfigDir: pf.ConfigDir, Version: pf.MCPVersion, Created: pf.Created, Refresh: pf.Refresh, Targets: pf.Targets, Exclude: pf.Exclude, Soak: pf.Soak})
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilB(s []planner.Blocker) []planner.Blocker {
	if s == nil {
		return []planner.Blocker{}
	}
	return s
}

// interimJSON is n's interim move for the plan JSON (nil: none).
func interimJSON(p *planner.Rollout, n *planner.NodePlan) *jsonInterim {
	if n.Interim == nil {
		return nil
	}
	return &jsonInterim{Target: n.Interim.Target, Waiting: stepsJSON(n.Interim.Waiting, true, n.To, n.Interim.Target,
		func(name string) *model.Rendered { return p.Rendered[name] }, p.Provenance[n.Interim.Target])}
}
