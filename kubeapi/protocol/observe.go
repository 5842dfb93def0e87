package protocol

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcpfleet/mcp/model"
)

// Observation requests (docs/agent.md, "Protocol versions": version 3). Where a node's
// current config is absent or a name the state does not know, the engine asks the node's
// agent what it carries against the pool's target: the agent fetches the target from the
// boot server, as for an update, runs the check its verify step runs against it, and
// answers with the differences, bounded. The engine plans the node from that answer
// (model.Observation).
const (
	// ObserveRequest (written by the engine) is a JSON ObserveRun: the rendered config to
	// compare with and a request id.
	ObserveRequest = Prefix + "observe-request"
	// Observed (written by the agent) is the JSON ObserveReport answering it.
	Observed = Prefix + "observed"
)

// ObserveVersion is the first protocol version whose agents answer ObserveRequest.
const ObserveVersion = 3

// Bounds of an answer: at most MaxObservedDrift entries listed (the rest counted), and at
// most maxObservedBytes of JSON (entries dropped from the end, and counted, until it fits;
// the annotations of a Node hold 256 KiB in all).
const (
	MaxObservedDrift = 100
	maxObservedBytes = 64 << 10
	maxObserveReason = 1024
)

// ObserveRun is the engine's request: compare the node with rendered config Target, under
// the id RequestID.
type ObserveRun struct {
	Target    string `json:"target"`
	RequestID string `json:"request_id"`
}

// Annotations returns the annotation that carries r, refusing what ReadObserveRun would.
func (r ObserveRun) Annotations() (map[string]string, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return map[string]string{ObserveRequest: string(b)}, nil
}

func (r ObserveRun) check() error {
	if len(r.RequestID) > maxUpdateID || !nameChars(r.RequestID) {
		return fmt.Errorf("annotation %s: %.80q is not a request id", ObserveRequest, r.RequestID)
	}
	if !renderedName(r.Target) {
		return fmt.Errorf("annotation %s: %.80q is not the name of a rendered config", ObserveRequest, r.Target)
	}
	return nil
}

// ReadObserveRun reads the engine's request from a node's annotations (ok false when there
// is none). One that is there but not one the engine would write is refused with an error;
// its RequestID is kept when that alone is sound, so that the agent can answer it.
func ReadObserveRun(ann map[string]string) (r ObserveRun, ok bool, err error) {
	s, ok := ann[ObserveRequest]
	if !ok || s == "" {
		return r, false, nil
	}
	if len(s) > maxRequestBytes {
		return r, true, fmt.Errorf("annotation %s: %d bytes, more than a request holds", ObserveRequest, len(s))
	}
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return ObserveRun{}, true, fmt.Errorf("annotation %s: %w", ObserveRequest, err)
	}
	if err := r.check(); err != nil {
		if len(r.RequestID) > maxUpdateID || !nameChars(r.RequestID) {
			r.RequestID = ""
		}
		return r, true, err
	}
	return r, true, nil
}

// ObserveReport is the agent's answer to request RequestID: how the node differs from
// Target (Drift, at most MaxObservedDrift entries; Unlisted counts the rest), or why it
// could not say (Reason).
type ObserveReport struct {
	RequestID string        `json:"request_id"`
	Target    string        `json:"target"`
	Drift     []model.Drift `json:"drift,omitempty"`
	Unlisted  int           `json:"unlisted,omitempty"`
	Reason    string        `json:"reason,omitempty"`
}

// Annotations returns the annotation that carries r, bounded: entries beyond
// MaxObservedDrift, or beyond what fits the answer's size, are counted in Unlisted.
func (r ObserveReport) Annotations() (map[string]string, error) {
	r.Reason = cut(r.Reason, maxObserveReason)
	r.Target = cut(r.Target, maxNameLen)
	o := model.Observation{Drift: r.Drift, Unlisted: r.Unlisted}
	o.Bound(MaxObservedDrift)
	for i := range o.Drift {
		o.Drift[i].Diff = "" // refresh's, for people: never carried
	}
	for {
		r.Drift, r.Unlisted = o.Drift, o.Unlisted
		b, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		if len(b) <= maxObservedBytes || len(o.Drift) == 0 {
			return map[string]string{Observed: string(b)}, nil
		}
		o.Bound(len(o.Drift) / 2)
	}
}

// ReadObserveReport reads the agent's answer from a node's annotations (ok false when there
// is none or it is unreadable).
func ReadObserveReport(ann map[string]string) (ObserveReport, bool) {
	var r ObserveReport
	s := ann[Observed]
	if s == "" || len(s) > 2*maxObservedBytes || json.Unmarshal([]byte(s), &r) != nil || r.RequestID == "" {
		return ObserveReport{}, false
	}
	if len(r.Drift) > MaxObservedDrift || r.Unlisted < 0 {
		return ObserveReport{}, false
	}
	r.Reason = cut(r.Reason, maxObserveReason)
	return r, true
}

// renderedName: the name of a rendered config mcp makes (the Secret mcp-NAME holds it).
func renderedName(s string) bool {
	return strings.HasPrefix(s, "rendered-") && len(s) <= maxNameLen && nameChars(s) && !strings.Contains(s, "..")
}
