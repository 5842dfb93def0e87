// Package protocol is the agent protocol on Kubernetes: the Node annotations through which
// the engine hands a node its planned steps and the node's agent reports back, and the names
// of the objects mcp keeps in the cluster. The provider (providers/kubernetes), the agent
// (agent/kagent), the state backend (state/kubestate) and the boot server's source
// (bootsrv/kubesource) all use these definitions, so the protocol is written once. It is
// documented for people in docs/kubernetes.md.
package protocol

import (
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/model"
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
	// Claim is the JSON model.Claim of the apply that works on the node, or of the last
	// that did (released). The agent does not read it.
	Claim = Prefix + "claim"
)

// Node annotations written by the agent.
const (
	// CurrentConfig is the rendered config the node runs, verified.
	CurrentConfig = Prefix + "current-config"
	// State is Done, Working or Degraded (model.StateDone, ...).
	State = Prefix + "state"
	// Reason says why the node is Degraded; beside Done (a protocol-3 agent), why the agent
	// refused the hand-over and changed nothing: an adoption of a node that no longer
	// carries its target (a stale plan).
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
	// RolledOut is the JSON model.HostRecord of what the host ran when the agent last
	// reported Done: the baseline drift runs compare what the config does not manage with.
	// Written with Done only (the drift check's patches leave it), removed when the host
	// could say neither.
	RolledOut = Prefix + "rolled-out"
	// AgentProtocol is the version of this protocol the node's agent speaks (Version). An
	// agent from before versions were written leaves it out: version 1.
	AgentProtocol = Prefix + "agent-protocol"
)

// Versions of the agent protocol (docs/agent.md, "Protocol versions"):
//
//  1. the agent reports Working as it takes up a hand-over, then its progress after each
//     step, then Done or Degraded;
//  2. the agent reports Done or Degraded only, unless the update is still running after
//     WorkingAfter, or is about to reboot the machine: then it reports Working (with its
//     progress, and the progress of each later step) first.
//  3. the agent also answers observation requests (ObserveRequest, observe.go): what the
//     node carries against a rendered config it is not recorded on; and it takes a current
//     config the boot server does not serve (a foreign name) as none, as the engine
//     planned its steps.
//
// An engine reads both; it refuses to hand an update to an agent of a later version.
const (
	Version    = 3
	MinVersion = 1
)

// WorkingAfter is how long a version-2 agent runs an update before it reports Working:
// an in-place update (writes, a restart) usually ends sooner, and its Done says all there
// is to say; an update that reboots says Working before the reboot whatever its age. It
// stays under the 15 s after which apply says an agent has not taken up its update
// (docs/decisions.md, "An agent that writes what it must").
const WorkingAfter = 10 * time.Second

// ReadAgentProtocol is the protocol version a node's agent speaks (1 when the node does not
// say), or an error naming the annotation when it is one this package does not speak.
func ReadAgentProtocol(ann map[string]string) (int, error) {
	s, ok := ann[AgentProtocol]
	if !ok {
		return MinVersion, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < MinVersion {
		return 0, fmt.Errorf("annotation %s is %.40q, not a protocol version", AgentProtocol, s)
	}
	if v > Version {
		return v, fmt.Errorf("its agent speaks protocol version %d (annotation %s) and this mcp speaks %d to %d: upgrade mcp before it hands the node an update",
			v, AgentProtocol, MinVersion, Version)
	}
	return v, nil
}

// AgentAnnotations are every Node annotation an agent writes: its reports, and
// DesiredConfig at the end of a first boot when the engine has written none. The
// ValidatingAdmissionPolicy in deploy/ lets an agent change these on its own Node and
// nothing else (deploy_test.go checks the policy's list is this one).
var AgentAnnotations = []string{ObservedUpdateID, State, Reason, Progress, CurrentConfig, DesiredConfig,
	Drift, DriftCount, OSImage, KernelArgs, CheckResult, RolledOut, AgentProtocol, Observed}

// BootImageError is the annotation apply writes on a machine template (a MachineSet, a
// Cluster API infrastructure template) whose image the API server refused to set: the
// server's message. A later set that succeeds removes it. It is not part of the agent
// protocol: no agent reads it; mcp status shows it (model.MachineTemplate.LastError).
const BootImageError = Prefix + "boot-image-error"

// MaxDrift bounds the drift entries an annotation carries (annotations are small).
const MaxDrift = 20

// Objects in the state namespace.
const (
	// ManagedBy labels every object mcp creates (app.kubernetes.io/managed-by=mcp).
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "mcp"
	// KindLabel says what an object holds: "state", "state-chunk", "rendered",
	// "health-checks" (KindHealthChecks).
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

// Bounds of a hand-over. The annotations of an object hold 256 KiB in all, so the engine
// can never write more steps than that; the agent refuses a hand-over beyond them rather
// than trust whoever else can patch a Node.
const (
	MaxSteps      = 10000
	maxStepsBytes = 256 << 10
	maxNameLen    = 253 // the Secret mcp-NAME holding a rendered config is a DNS subdomain
	maxUpdateID   = 128 // the engine writes 26 characters (crypto/rand.Text)
	maxPath       = 4096
)

// Annotations returns the annotations that carry h, refusing what ReadHandover would.
func (h Handover) Annotations() (map[string]string, error) {
	if err := CheckHandover(h); err != nil {
		return nil, err
	}
	b, err := json.Marshal(h.Steps)
	if err != nil {
		return nil, err
	}
	return map[string]string{DesiredConfig: h.Desired, Steps: string(b), UpdateID: h.UpdateID}, nil
}

// ReadHandover reads the engine's hand-over from a node's annotations (ok false when there
// is none). A hand-over that is there but is not one the engine would write — engine
// steps, unknown kinds, steps out of their run order, a target that is no clean path or
// unit name, absurd sizes — is refused with an error and no steps, for the agent to
// report the node Degraded on.
func ReadHandover(ann map[string]string) (h Handover, ok bool, err error) {
	h.Desired, h.UpdateID = ann[DesiredConfig], ann[UpdateID]
	if h.Desired == "" || h.UpdateID == "" {
		return h, false, nil
	}
	if s := ann[Steps]; s != "" {
		if len(s) > maxStepsBytes {
			return h, true, fmt.Errorf("annotation %s: %d bytes, more than a hand-over holds (%d)", Steps, len(s), maxStepsBytes)
		}
		if err := json.Unmarshal([]byte(s), &h.Steps); err != nil {
			h.Steps = nil
			return h, true, fmt.Errorf("annotation %s: %w", Steps, err)
		}
	}
	if err := CheckHandover(h); err != nil {
		h.Steps = nil
		return h, true, err
	}
	return h, true, nil
}

// CheckHandover refuses a hand-over the engine would not write.
func CheckHandover(h Handover) error {
	if !renderedName(h.Desired) {
		return fmt.Errorf("annotation %s: %.80q is not the name of a rendered config", DesiredConfig, h.Desired)
	}
	if len(h.UpdateID) > maxUpdateID || !nameChars(h.UpdateID) {
		return fmt.Errorf("annotation %s: %.80q is not an update id", UpdateID, h.UpdateID)
	}
	if len(h.Steps) > MaxSteps {
		return fmt.Errorf("annotation %s: %d steps, more than %d", Steps, len(h.Steps), MaxSteps)
	}
	seen := make(map[model.Step]bool, len(h.Steps))
	for i, s := range h.Steps {
		if err := checkStep(s); err != nil {
			return fmt.Errorf("annotation %s: step %d: %w", Steps, i+1, err)
		}
		// The planner sorts steps by kind, the order they run in (model.StepKind).
		if i > 0 && s.Kind < h.Steps[i-1].Kind {
			return fmt.Errorf("annotation %s: step %d (%s) comes after %s, out of the order steps run in", Steps, i+1, s.Kind, h.Steps[i-1].Kind)
		}
		id := model.Step{Kind: s.Kind, Target: s.Target}
		if seen[id] {
			return fmt.Errorf("annotation %s: step %d: %s twice", Steps, i+1, id)
		}
		seen[id] = true
	}
	return nil
}

func checkStep(s model.Step) error {
	switch {
	case s.Kind == 0:
		return fmt.Errorf("no kind")
	case !s.Kind.Valid():
		return fmt.Errorf("unknown step kind %d", s.Kind)
	case !s.Kind.OnNode():
		return fmt.Errorf("%s is not a node step: the engine runs it", s.Kind)
	}
	switch s.Kind {
	case model.StepWrite:
		// A file's absolute path or a unit's name.
		if strings.HasPrefix(s.Target, "/") {
			if len(s.Target) > maxPath || path.Clean(s.Target) != s.Target || strings.ContainsRune(s.Target, 0) {
				return fmt.Errorf("write: target %.80q is not a clean absolute path", s.Target)
			}
			return nil
		}
		if !model.ValidUnitName(s.Target) {
			return fmt.Errorf("write: target %.80q is neither an absolute path nor a unit name", s.Target)
		}
	case model.StepReload, model.StepRestart:
		if !model.ValidUnitName(s.Target) {
			return fmt.Errorf("%s: target %.80q is not a unit name", s.Kind, s.Target)
		}
	default:
		if s.Target != "" {
			return fmt.Errorf("%s takes no target, got %.80q", s.Kind, s.Target)
		}
	}
	return nil
}

// nameChars: a non-empty string of the characters of Kubernetes names and of
// crypto/rand.Text.
func nameChars(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
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
	p, err := strconv.Atoi(ann[Progress])
	if err != nil || p < 0 {
		p = 0 // no progress known; the engine then counts nothing done
	}
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

// ReadClaim reads the Claim annotation: the claim (nil when there is none, or when it does
// not read as one: then nothing holds the node), its raw value and whether it is there.
func ReadClaim(ann map[string]string) (c *model.Claim, raw string, ok bool) {
	raw, ok = ann[Claim]
	if !ok {
		return nil, "", false
	}
	c = new(model.Claim)
	if len(raw) > maxClaimBytes || json.Unmarshal([]byte(raw), c) != nil || c.Apply == "" {
		return nil, raw, true
	}
	return c, raw, true
}

// maxClaimBytes bounds a claim the engine reads: it writes a few hundred bytes.
const maxClaimBytes = 4 << 10

// EncodeClaim is the Claim annotation's value for c.
func EncodeClaim(c model.Claim) string {
	b, _ := json.Marshal(c) // plain strings, numbers and times: it cannot fail
	return string(b)
}

// AnnotationsPatch is the JSON merge patch that sets ann on an object's annotations (a nil
// value, in a map[string]any, removes one): every write of the protocol is such a patch, so
// engine and agent never overwrite each other's annotations.
func AnnotationsPatch[V any](ann map[string]V) ([]byte, error) {
	return json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
}
