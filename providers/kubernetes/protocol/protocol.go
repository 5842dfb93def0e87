// Package protocol is the agent protocol on Kubernetes: the Node annotations through which
// the engine hands a node its planned steps and the node's agent reports back, and the names
// of the objects mcp keeps in the cluster. The engine (providers/kubernetes), the agent
// (mcp agent -kubeconfig) and the boot server all use these definitions, so the protocol is
// written once. It is documented for people in docs/kubernetes.md.
package protocol

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/mcpfleet/mcp/planner/model"
)

// Prefix starts every annotation and label mcp sets.
const Prefix = "mcpfleet.io/"

// Node annotations written by the engine.
const (
	// DesiredConfig is the rendered config the node is to move to.
	DesiredConfig = Prefix + "desired-config"
	// Steps is the JSON list of the node steps (model.Step) the plan gave the node.
	Steps = Prefix + "steps"
	// UpdateID names one hand-over; a new one makes the agent act even when DesiredConfig
	// is unchanged (a retry after Degraded).
	UpdateID = Prefix + "update-id"
)

// Node annotations written by the agent.
const (
	// CurrentConfig is the rendered config the node runs, verified.
	CurrentConfig = Prefix + "current-config"
	// State is Done, Working or Degraded (model.StateDone, ...).
	State = Prefix + "state"
	// Reason says why the node is Degraded.
	Reason = Prefix + "reason"
	// ObservedUpdateID is the UpdateID that State and Progress refer to.
	ObservedUpdateID = Prefix + "observed-update-id"
	// Progress counts the steps of ObservedUpdateID finished so far.
	Progress = Prefix + "progress"
	// Drift is a JSON list of model.Drift: how the disk differs from CurrentConfig
	// (at most MaxDrift entries; DriftCount gives the whole number).
	Drift      = Prefix + "drift"
	DriftCount = Prefix + "drift-count"
	// OSImage and KernelArgs (JSON list) are what the node booted with.
	OSImage    = Prefix + "os-image"
	KernelArgs = Prefix + "kernel-args"
)

// MaxDrift bounds the drift entries an annotation carries (annotations are small).
const MaxDrift = 20

// Objects in the state namespace.
const (
	// ManagedBy labels every object mcp creates (app.kubernetes.io/managed-by=mcp).
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "mcp"
	// KindLabel says what an object holds: "state", "state-chunk", "rendered".
	KindLabel = Prefix + "kind"
	// RenderedLabel carries the rendered config's name on its Secret.
	RenderedLabel = Prefix + "rendered"
	// StateSecret is the head of the state (lineage, serial, pointers, journal).
	StateSecret = "mcp-state"
	// LockLease is the state lock.
	LockLease = "mcp-state-lock"
	// RenderedKey is the data key of a rendered config's Secret (its model.Rendered JSON).
	RenderedKey = "rendered.json"
)

// RenderedSecretName is the Secret that stores the rendered config name (immutable).
func RenderedSecretName(name string) string { return "mcp-" + name }

// Handover is what the engine writes on a node to start an update.
type Handover struct {
	Desired  string
	Steps    []model.Step
	UpdateID string
}

// Annotations returns the annotations that carry h.
func (h Handover) Annotations() (map[string]string, error) {
	b, err := json.Marshal(h.Steps)
	if err != nil {
		return nil, err
	}
	return map[string]string{DesiredConfig: h.Desired, Steps: string(b), UpdateID: h.UpdateID}, nil
}

// ReadHandover reads the engine's hand-over from a node's annotations (ok false when there
// is none).
func ReadHandover(ann map[string]string) (h Handover, ok bool, err error) {
	h.Desired, h.UpdateID = ann[DesiredConfig], ann[UpdateID]
	if h.Desired == "" || h.UpdateID == "" {
		return h, false, nil
	}
	if s := ann[Steps]; s != "" {
		if err := json.Unmarshal([]byte(s), &h.Steps); err != nil {
			return h, true, fmt.Errorf("annotation %s: %w", Steps, err)
		}
	}
	return h, true, nil
}

// Report is what the agent writes on its node.
type Report struct {
	Current          string
	State            string
	Reason           string
	ObservedUpdateID string
	Progress         int
}

// ReadReport reads the agent's report from a node's annotations.
func ReadReport(ann map[string]string) Report {
	p, _ := strconv.Atoi(ann[Progress])
	return Report{Current: ann[CurrentConfig], State: ann[State], Reason: ann[Reason],
		ObservedUpdateID: ann[ObservedUpdateID], Progress: p}
}

// EncodeDrift gives the Drift and DriftCount annotation values for d.
func EncodeDrift(d []model.Drift) (drift, count string) {
	n := len(d)
	if len(d) > MaxDrift {
		d = d[:MaxDrift]
	}
	if d == nil {
		d = []model.Drift{}
	}
	b, _ := json.Marshal(d)
	return string(b), strconv.Itoa(n)
}

// DecodeDrift reads the Drift annotation (nil when absent or unreadable).
func DecodeDrift(s string) []model.Drift {
	var d []model.Drift
	if s == "" || json.Unmarshal([]byte(s), &d) != nil {
		return nil
	}
	return d
}

// AnnotationsPatch is the JSON merge patch that sets ann on an object's annotations (a nil
// value, in a map[string]any, removes one): every write of the protocol is such a patch, so
// engine and agent never overwrite each other's annotations.
func AnnotationsPatch[V any](ann map[string]V) ([]byte, error) {
	return json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
}
