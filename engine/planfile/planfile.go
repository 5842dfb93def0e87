// Package planfile reads and writes saved plans (`mcp plan -out=FILE`). A saved plan carries
// what it was made from — the state's lineage and serial and a fingerprint of the observed
// fleet — so that apply can refuse it once the world has moved on, as Terraform's planfile
// does.
package planfile

import (
	"github.com/mcpfleet/mcp/internal/atomicfile"
	"github.com/mcpfleet/mcp/internal/boundedfile"

	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/state"
)

// FormatVersion is the saved plan format; a different one is refused.
const FormatVersion = 1

// File is a saved plan.
type File struct {
	FormatVersion int       `json:"format_version"`
	MCPVersion    string    `json:"mcp_version"`
	Created       time.Time `json:"created"`
	// ConfigDir is the configuration directory the plan was made in (absolute).
	ConfigDir string `json:"config_dir"`
	// Cluster is the cluster block the plan was made for, in a configuration of clusters
	// (-cluster): apply loads that cluster, and refuses -cluster naming another.
	Cluster string `json:"cluster,omitempty"`
	// Lineage and Serial identify the state the plan was made from.
	Lineage string `json:"lineage"`
	Serial  int64  `json:"serial"`
	// FleetFingerprint is a digest of the observed fleet the plan was made from.
	FleetFingerprint string `json:"fleet_fingerprint"`
	// Variables are the values the configuration's variables had, by name: apply loads
	// the configuration with exactly these, as Terraform's apply of a saved plan does.
	Variables map[string]Variable `json:"variables,omitempty"`
	// Targets and Exclude are the plan's -target and -exclude addresses: apply derives the
	// plan again with exactly these (and refuses -target beside a saved plan).
	Targets []string `json:"targets,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
	// Rollback is, for a plan of mcp rollback, the stored rendered config each pool named
	// goes back to, by pool: apply derives the plan again with exactly these targets
	// (engine.Workspace.RollingBack), not what the configuration renders.
	Rollback map[string]string `json:"rollback,omitempty"`
	// Rollout is what the plan does (its JSON key stays "plan": saved plans of every
	// version read alike).
	Rollout *planner.Rollout `json:"plan"`
	// Refresh is what the refresh before the plan observed and cost (display only).
	Refresh *model.RefreshStats `json:"refresh,omitempty"`
	// Soak is the soak gate's word on each pool the plan changes, in a cluster of a stage
	// that comes after others (package clusters), as it stood when the plan was made:
	// display only; apply asks the gate again.
	Soak []SoakNote `json:"soak,omitempty"`
}

// SoakNote is the soak gate's word on one pool: whether its target soaked long enough in
// the earlier stages, in words (for people only).
type SoakNote struct {
	Pool     string `json:"pool"`
	Rendered string `json:"rendered"`
	// Refused: it did not soak; apply refuses the pool (the whole plan) unless Overridden.
	Refused bool `json:"refused"`
	// Overridden: refused, and -ignore-soak said to go on.
	Overridden bool   `json:"overridden,omitempty"`
	Reason     string `json:"reason"`
}

// Variable is one variable's value with its type, in go-cty's JSON encoding. Sensitive:
// mcp shows not its value (the plan file holds it, for apply, as Terraform's does).
type Variable struct {
	Type      json.RawMessage `json:"type"`
	Value     json.RawMessage `json:"value"`
	Sensitive bool            `json:"sensitive,omitempty"`
}

// EncodeVariables records variable values for a saved plan, marking the sensitive ones.
func EncodeVariables(vals map[string]cty.Value, sensitive map[string]bool) (map[string]Variable, error) {
	out := make(map[string]Variable, len(vals))
	for name, v := range vals {
		t, err := ctyjson.MarshalType(v.Type())
		if err != nil {
			return nil, fmt.Errorf("variable %s: %w", name, err)
		}
		b, err := ctyjson.Marshal(v, v.Type())
		if err != nil {
			return nil, fmt.Errorf("variable %s: %w", name, err)
		}
		out[name] = Variable{Type: t, Value: b, Sensitive: sensitive[name]}
	}
	return out, nil
}

// VariableValues gives the values a saved plan recorded (an empty map when it recorded
// none: a configuration with no variables).
func (f *File) VariableValues() (map[string]cty.Value, error) {
	out := make(map[string]cty.Value, len(f.Variables))
	for name, v := range f.Variables {
		t, err := ctyjson.UnmarshalType(v.Type)
		if err != nil {
			return nil, fmt.Errorf("variable %s in the saved plan: %w", name, err)
		}
		val, err := ctyjson.Unmarshal(v.Value, t)
		if err != nil {
			return nil, fmt.Errorf("variable %s in the saved plan: %w", name, err)
		}
		out[name] = val
	}
	return out, nil
}

// Write saves f at path atomically.
func Write(path string, f *File) error {
	f.FormatVersion = FormatVersion
	return write(path, f)
}

// write saves v's JSON at path atomically, readable by its owner alone (a plan holds the
// variables' values, the sensitive ones too).
func write(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding plan: %w", err)
	}
	if err := atomicfile.Write(path, b, 0o600); err != nil {
		return fmt.Errorf("writing plan %q: %w", path, err)
	}
	return nil
}

// MaxSize bounds the saved plan Read accepts. A plan of thousands of nodes with their
// steps and rendered configs is tens of MiB; a larger file is not a plan.
const MaxSize = 256 << 20

// Read loads a saved plan and checks it: a plan that is truncated, empty, null, hand-edited
// or damaged is refused with the file named and what is wrong — its embedded rendered
// configs are verified against their names, and its pools, nodes and steps must be well
// formed. Whether it still fits the configuration and the fleet is apply's to check.
func Read(path string) (*File, error) {
	b, err := boundedfile.Read(path, MaxSize, 0)
	if err != nil {
		return nil, fmt.Errorf("loading plan %q: %w", path, err)
	}
	if isFleet(b) {
		return nil, fmt.Errorf("loading plan %q: %w", path, ErrFleet)
	}
	f, err := decode(b)
	if err != nil {
		return nil, fmt.Errorf("loading plan %q: %w", path, err)
	}
	return f, nil
}

// decode parses a saved plan strictly (no unknown fields, nothing after it) and checks it.
func decode(b []byte) (*File, error) {
	f := new(File)
	if err := strict(b, f); err != nil {
		return nil, err
	}
	if f.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("format version %d, this mcp reads %d", f.FormatVersion, FormatVersion)
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	return f, nil
}

// strict decodes the JSON object b into v: no unknown fields, nothing after it.
func strict(b []byte, v any) error {
	t := bytes.TrimSpace(b)
	switch {
	case len(t) == 0:
		return errors.New("it is empty (no bytes, or only white space): not a saved mcp plan")
	case bytes.Equal(t, []byte("null")):
		return errors.New("it is JSON null, not a saved mcp plan")
	case t[0] != '{':
		return fmt.Errorf("it is not a JSON object (it starts with %q): not a saved mcp plan", t[:min(len(t), 16)])
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("it is cut off: its JSON ends after %d bytes, mid-value", len(b))
		}
		return fmt.Errorf("not a saved mcp plan: %w", err)
	}
	if rest := bytes.TrimSpace(b[dec.InputOffset():]); len(rest) > 0 {
		return fmt.Errorf("it has %d bytes after the plan's JSON object", len(rest))
	}
	return nil
}

// check refuses a plan mcp would not have written (its form, not its fitness).
func (f *File) check() error {
	if f.Rollout == nil {
		return errors.New("no plan in it")
	}
	if f.Serial < 0 {
		return fmt.Errorf("its state serial %d is negative", f.Serial)
	}
	if err := checkPlan(f.Rollout); err != nil {
		return fmt.Errorf("%w (was it edited?)", err)
	}
	return nil
}

// ErrStale marks CheckFresh's refusals of a plan the state or the fleet moved on from.
var ErrStale = errors.New("stale plan")

// CheckFresh refuses a plan made from another state or fleet than the current ones; a plan
// the state or fleet moved on from is ErrStale.
func (f *File) CheckFresh(s *state.State, fingerprint string) error {
	if err := f.CheckState(s); err != nil {
		return err
	}
	if f.FleetFingerprint != fingerprint {
		return staleError{fmt.Errorf("saved plan is stale: the fleet changed since it was made (fingerprint %s, now %s); run mcp plan again", short(f.FleetFingerprint), short(fingerprint))}
	}
	return nil
}

// CheckState is CheckFresh of the state alone: a plan made from another state, or one the
// state moved on from.
func (f *File) CheckState(s *state.State) error {
	if f.Lineage != "" && s.Lineage != "" && f.Lineage != s.Lineage {
		return fmt.Errorf("saved plan is for another state (lineage %s, the state's is %s); run mcp plan again", f.Lineage, s.Lineage)
	}
	if f.Serial != s.Serial {
		return staleError{fmt.Errorf("saved plan is stale: it was made from state serial %d, the state is now at serial %d; run mcp plan again", f.Serial, s.Serial)}
	}
	return nil
}

type staleError struct{ error }

func (e staleError) Is(target error) bool { return target == ErrStale }
func (e staleError) Unwrap() error        { return e.error }

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
