package protocol

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/mcpfleet/mcp/model"
)

// Command health checks (docs/kubernetes.md, "Command health checks"). The command never
// travels in a Node annotation — whoever may patch Nodes could then run anything as root
// on every node —: the engine writes the pools' command checks into HealthSecret, which
// only mcp's apply identity may write, and asks a node's agent to run one by naming it in
// CheckRequest. The agent looks the command up in HealthSecret and answers in CheckResult.
const (
	// CheckRequest (written by the engine) asks the agent to run one check once: a JSON
	// CheckRun — the pool, the check's name and a run id; no command.
	CheckRequest = Prefix + "check-request"
	// CheckResult (written by the agent) is what that run did: a JSON CheckReport with the
	// run id echoed.
	CheckResult = Prefix + "check-result"
)

// The pools' command checks in the state namespace.
const (
	// HealthSecret holds them: data HealthKey, the JSON of a PoolChecks. The agent's Role
	// may get this one Secret by name and nothing else.
	HealthSecret = "mcp-health-checks"
	HealthKey    = "checks.json"
	// KindHealthChecks is HealthSecret's KindLabel.
	KindHealthChecks = "health-checks"
)

// Bounds of the check messages: the engine writes far less; the agent refuses more.
const (
	maxCheckName  = 253
	maxArgs       = 256
	maxArgBytes   = 64 << 10 // all of a command's arguments together
	maxCheckError = 1024
	// maxRequestBytes bounds a request (two names escaped at 6 bytes a character, a run
	// id); twice that bounds a report.
	maxRequestBytes = 16 << 10
)

// CheckRun is the engine's request: run the check named Check of pool Pool once, under the
// id RunID.
type CheckRun struct {
	Pool  string `json:"pool"`
	Check string `json:"check"`
	RunID string `json:"run_id"`
}

// Annotations returns the annotation that carries r, refusing what ReadCheckRun would.
func (r CheckRun) Annotations() (map[string]string, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return map[string]string{CheckRequest: string(b)}, nil
}

func (r CheckRun) check() error {
	if len(r.RunID) > maxUpdateID || !nameChars(r.RunID) {
		return fmt.Errorf("annotation %s: %.80q is not a run id", CheckRequest, r.RunID)
	}
	if err := checkName("pool", r.Pool); err != nil {
		return fmt.Errorf("annotation %s: %w", CheckRequest, err)
	}
	if err := checkName("check", r.Check); err != nil {
		return fmt.Errorf("annotation %s: %w", CheckRequest, err)
	}
	return nil
}

// ReadCheckRun reads the engine's request from a node's annotations (ok false when there is
// none). One that is there but not one the engine would write is refused with an error;
// its RunID is kept when that alone is sound, so the agent can answer it.
func ReadCheckRun(ann map[string]string) (r CheckRun, ok bool, err error) {
	s, ok := ann[CheckRequest]
	if !ok || s == "" {
		return r, false, nil
	}
	if len(s) > maxRequestBytes {
		return r, true, fmt.Errorf("annotation %s: %d bytes, more than a request holds", CheckRequest, len(s))
	}
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return CheckRun{}, true, fmt.Errorf("annotation %s: %w", CheckRequest, err)
	}
	if err := r.check(); err != nil {
		if len(r.RunID) > maxUpdateID || !nameChars(r.RunID) {
			r.RunID = ""
		}
		return r, true, err
	}
	return r, true, nil
}

// CheckReport is the agent's answer: what run RunID of check Check did.
type CheckReport struct {
	RunID string `json:"run_id"`
	Check string `json:"check"`
	model.CheckResult
}

// Annotations returns the annotation that carries r, its output cut to
// model.CheckOutputLimit bytes and its error to a line's length.
func (r CheckReport) Annotations() (map[string]string, error) {
	r.Output = cut(r.Output, model.CheckOutputLimit)
	r.Error = cut(r.Error, maxCheckError)
	r.Check = cut(r.Check, maxCheckName)
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return map[string]string{CheckResult: string(b)}, nil
}

// ReadCheckReport reads the agent's answer from a node's annotations (ok false when there
// is none or it is unreadable).
func ReadCheckReport(ann map[string]string) (CheckReport, bool) {
	var r CheckReport
	s := ann[CheckResult]
	if s == "" || len(s) > 2*maxRequestBytes || json.Unmarshal([]byte(s), &r) != nil || r.RunID == "" {
		return CheckReport{}, false
	}
	r.Output, r.Error = cut(r.Output, model.CheckOutputLimit), cut(r.Error, maxCheckError)
	return r, true
}

// CommandCheck is one command check as HealthSecret holds it.
type CommandCheck struct {
	Name    string   `json:"name"`
	Command []string `json:"command"`
	// Timeout is a Go duration ("2m0s"): each run is killed when it has passed.
	Timeout string `json:"timeout"`
}

// TimeoutDuration is Timeout parsed (Validate has checked it).
func (c CommandCheck) TimeoutDuration() time.Duration {
	d, _ := time.ParseDuration(c.Timeout)
	return d
}

// Validate refuses a check the engine would not write.
func (c CommandCheck) Validate() error {
	if err := checkName("check", c.Name); err != nil {
		return err
	}
	if len(c.Command) == 0 || len(c.Command) > maxArgs {
		return fmt.Errorf("check %q: %d arguments (want 1 to %d)", c.Name, len(c.Command), maxArgs)
	}
	if !path.IsAbs(c.Command[0]) {
		return fmt.Errorf("check %q: %.80q is not an absolute path", c.Name, c.Command[0])
	}
	n := 0
	for _, a := range c.Command {
		n += len(a)
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("check %q: an argument holds a NUL", c.Name)
		}
	}
	if n > maxArgBytes {
		return fmt.Errorf("check %q: %d bytes of arguments, more than %d", c.Name, n, maxArgBytes)
	}
	d, err := time.ParseDuration(c.Timeout)
	if err != nil || d <= 0 || d > model.MaxCommandCheckTimeout {
		return fmt.Errorf("check %q: timeout %.40q is not a duration between 0 and %s", c.Name, c.Timeout, model.MaxCommandCheckTimeout)
	}
	return nil
}

// PoolChecks are the command checks of each pool, by pool name: what HealthSecret holds.
type PoolChecks map[string][]CommandCheck

// CommandChecks gives the command checks among a pool's health checks, in order.
func CommandChecks(checks []model.HealthCheck) []CommandCheck {
	var out []CommandCheck
	for _, c := range checks {
		if len(c.Command) > 0 {
			out = append(out, CommandCheck{Name: c.Name, Command: c.Command, Timeout: c.Timeout.String()})
		}
	}
	return out
}

// Encode gives HealthSecret's data for pc, refusing what Decode would.
func (pc PoolChecks) Encode() ([]byte, error) {
	if err := pc.validate(); err != nil {
		return nil, err
	}
	return json.Marshal(pc)
}

// DecodeChecks reads HealthSecret's data. Data the engine would not write is refused whole:
// the agent then runs no check of any pool.
func DecodeChecks(b []byte) (PoolChecks, error) {
	var pc PoolChecks
	if err := json.Unmarshal(b, &pc); err != nil {
		return nil, fmt.Errorf("%s: %w", HealthKey, err)
	}
	if err := pc.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", HealthKey, err)
	}
	return pc, nil
}

func (pc PoolChecks) validate() error {
	for _, pool := range slices.Sorted(maps.Keys(pc)) {
		if err := checkName("pool", pool); err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, c := range pc[pool] {
			if err := c.Validate(); err != nil {
				return fmt.Errorf("pool %q: %w", pool, err)
			}
			if seen[c.Name] {
				return fmt.Errorf("pool %q: check %q twice", pool, c.Name)
			}
			seen[c.Name] = true
		}
	}
	return nil
}

// Find is the check r names. A check the engine did not write for that pool is an error:
// the agent then runs nothing.
func (pc PoolChecks) Find(r CheckRun) (CommandCheck, error) {
	for _, c := range pc[r.Pool] {
		if c.Name == r.Check {
			return c, nil
		}
	}
	return CommandCheck{}, fmt.Errorf("pool %q has no command check %q in Secret %s: nothing run", r.Pool, r.Check, HealthSecret)
}

// checkName refuses an empty or over-long name, or one with control characters.
func checkName(what, s string) error {
	if s == "" || len(s) > maxCheckName || strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return fmt.Errorf("%.80q is not a %s name", s, what)
	}
	return nil
}

// cut keeps the first n bytes of s, as valid UTF-8.
func cut(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
