package views

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpfleet/mcp/engine"
	"github.com/mcpfleet/mcp/internal/untrusted"
	"github.com/mcpfleet/mcp/model"
)

// ApplySummary closes an apply's output.
type ApplySummary struct {
	// Outcome is "complete", "incomplete" (nothing failed, but planned node changes were
	// not done: exit 2) or "failed" (exit 1): engine.Outcome.
	Outcome                   string
	Updated, Failed, Deferred int
	// Unconfirmed counts nodes whose steps are done and whose health gates apply stopped
	// waiting for.
	Unconfirmed int `json:",omitempty"`
	// Adopted counts the nodes recorded on their target with nothing on them changed (not
	// among Updated).
	Adopted  int `json:",omitempty"`
	Failures []string
	Elapsed  time.Duration
	// APIRequests: what the rollout cost the API server (only from providers that count).
	APIRequests int64 `json:",omitempty"`
	// Nodes says what became of each node the plan changed.
	Nodes []NodeResult `json:",omitempty"`
	// Reverts: what each pool's on_failure = "revert" did after a failure stopped it.
	Reverts []RevertSummary `json:",omitempty"`
}

// RevertSummary is one pool's revert (engine.PoolRevert): the nodes back on To, and those
// not, with why.
type RevertSummary struct {
	Pool, To, Why string
	Reverted      []string
	NotReverted   map[string]string `json:",omitempty"`
}

// SummaryOf sums up an apply from its result and the error it returned, one failure a
// line of the error.
func SummaryOf(res *engine.ApplyResult, err error) ApplySummary {
	s := ApplySummary{Outcome: outcomeNames[engine.Outcome(res, err)], Updated: len(res.Updated), Adopted: len(res.Adopted), Failed: len(res.Failed),
		Deferred: len(res.Deferred) + len(res.Skipped), Unconfirmed: len(res.Unconfirmed), Elapsed: res.Elapsed,
		APIRequests: max(res.APIRequests, 0), Nodes: nodeResults(res)}
	for _, r := range res.Reverts {
		s.Reverts = append(s.Reverts, RevertSummary{Pool: r.Pool, To: r.To, Why: r.Why, Reverted: nonNil(r.Reverted), NotReverted: r.NotReverted})
		for i := range s.Nodes {
			s.Nodes[i].Reverted = s.Nodes[i].Reverted || slices.Contains(r.Reverted, s.Nodes[i].Node)
		}
	}
	if err != nil {
		for _, e := range joined(err) {
			s.Failures = append(s.Failures, e.Error())
		}
	}
	return s
}

var outcomeNames = map[engine.OutcomeKind]string{engine.Complete: "complete", engine.Incomplete: "incomplete", engine.Failed: "failed"}

// Progress shows an apply as it happens.
type Progress interface {
	Event(e engine.Event)
	Summary(s ApplySummary)
}

type humanProgress struct {
	mu      sync.Mutex
	w       io.Writer
	c       painter
	reboots marks
	// cols is the terminal's width, for the summary to fit it (nil or 0: no terminal).
	cols func() int
}

// NewHumanProgress prints one line per step start and end.
func NewHumanProgress(w io.Writer, color bool) Progress {
	return &humanProgress{w: w, c: painter(color), reboots: marks{}}
}

func (h *humanProgress) Event(raw engine.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := Shown(raw)
	h.reboots.see(e)
	addr := "node." + e.Node
	switch {
	case e.Ahead && e.Kind == engine.EventStepStart:
		fmt.Fprintf(h.w, "%s: %s… (ahead of its slot, outside the budget)\n", addr, e.Step)
		return
	case e.Ahead && e.Kind == engine.EventStepDone:
		fmt.Fprintf(h.w, "%s: %s, ahead of its slot\n", addr, doneLine(e))
		return
	case e.Ahead && e.Kind == engine.EventStepFailed:
		fmt.Fprintf(h.w, "%s: %s ahead of its slot %s: %s; its slot stages it again\n", addr, e.Step, h.c.yellow("failed"), stepError(raw))
		return
	}
	switch e.Kind {
	case engine.EventStepStart:
		fmt.Fprintf(h.w, "%s: %s…\n", addr, e.Step)
	case engine.EventStepDone:
		fmt.Fprintf(h.w, "%s: %s\n", addr, doneLine(e))
	case engine.EventStepFailed:
		fmt.Fprintf(h.w, "%s: %s %s: %s\n", addr, e.Step, h.c.red("failed"), stepError(raw))
	case engine.EventNodeDone:
		fmt.Fprintf(h.w, "%s: %s\n", addr, h.c.green(h.reboots.doneWord(e.Node)))
	case engine.EventNodeFailed:
		fmt.Fprintf(h.w, "%s: %s\n", addr, h.c.red("failed"))
	case engine.EventUnconfirmed:
		fmt.Fprintf(h.w, "%s: %s\n", addr, h.c.yellow("steps done, health gates not confirmed"))
	case engine.EventPoolStopped:
		if e.Reason != "" {
			fmt.Fprintf(h.w, "pool.%s: %s: %s\n", e.Pool, h.c.red("not started"), e.Reason)
			break
		}
		fmt.Fprintf(h.w, "pool.%s: %s: no more nodes of this pool start\n", e.Pool, h.c.red("stopped"))
	case engine.EventHeld, engine.EventClaimed, engine.EventNodeWaiting, engine.EventSincePlan:
		fmt.Fprintf(h.w, "%s: %s\n", addr, h.c.yellow(e.Reason))
	case engine.EventWaiting:
		fmt.Fprintf(h.w, "pool.%s: %s before node.%s: %s\n", e.Pool, h.c.yellow("waiting"), e.Node, e.Reason)
	case engine.EventAlertsFiring:
		fmt.Fprintf(h.w, "pool.%s: %s: %s\n", e.Pool, h.c.red("stopping"), e.Reason)
	case engine.EventReverting:
		fmt.Fprintf(h.w, "pool.%s: %s: %s\n", e.Pool, h.c.red("reverting"), e.Reason)
	case engine.EventTemplate:
		io.WriteString(h.w, templateLine(h.c, e))
	}
}

// stepError is a failed step's error without the node and step it names first, which the
// line says already: cut from the event as the engine sent it, then escaped.
func stepError(e engine.Event) string {
	msg := e.Err.Error()
	if engine.NamesNode(msg, e.Node, e.Step) {
		msg = strings.TrimPrefix(msg, "node "+e.Node+": ")
		msg = strings.TrimPrefix(msg, e.Step.String()+": ")
	}
	return untrusted.Line(msg)
}

func (h *humanProgress) Summary(s ApplySummary) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s = Shown(s)
	cols := 0
	if h.cols != nil {
		cols = h.cols()
	}
	if len(s.Failures) > 0 {
		fmt.Fprintf(h.w, "\n%s\n", h.c.red("Errors:"))
		for _, f := range s.Failures {
			indent := "  "
			for _, l := range wrapWords(f, cols-4) {
				fmt.Fprintf(h.w, "%s%s\n", indent, l)
				indent = "    " // a wrapped error's next lines
			}
		}
	}
	h.reboots.fill(&s)
	writeNodeResults(h.w, h.c, s.Nodes, cols)
	writeReverts(h.w, h.c, s.Reverts)
	counts := "Nodes: " + s.counts()
	if s.Unconfirmed > 0 {
		counts += fmt.Sprintf(", %d not confirmed", s.Unconfirmed)
	}
	took := s.Elapsed.Round(time.Millisecond)
	switch s.outcome() {
	case "failed":
		fmt.Fprintf(h.w, "\n%s\n", h.c.red(fmt.Sprintf("Apply failed. %s. (%s)", counts, took)))
	case "incomplete":
		next := "run mcp apply again to continue"
		if !s.again() {
			next = "what is left waits for a person (a hold, a paused pool)"
		}
		fmt.Fprintf(h.w, "\n%s\n", h.c.yellow(fmt.Sprintf("Apply incomplete. %s; %s. (%s)", counts, next, took)))
	default:
		fmt.Fprintf(h.w, "\n%s\n", h.c.green(fmt.Sprintf("Apply complete! %s. (%s)", counts, took)))
	}
}

// outcome is Outcome, or for a summary made without it, what its counts say.
func (s ApplySummary) outcome() string {
	switch {
	case s.Outcome != "":
		return s.Outcome
	case s.Failed > 0 || len(s.Failures) > 0:
		return "failed"
	case s.Deferred+s.Unconfirmed > 0:
		return "incomplete"
	}
	return "complete"
}

// doneLine says a step is done, with what the node showed of it (model.Step.Evidence).
func doneLine(e engine.Event) string {
	if e.Step.Evidence != "" {
		return fmt.Sprintf("%s done: %s (%s)", e.Step, e.Step.Evidence, e.Elapsed.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s done (%s)", e.Step, e.Elapsed.Round(time.Millisecond))
}

type jsonProgress struct {
	mu      sync.Mutex
	enc     *json.Encoder
	reboots marks
}

// NewJSONProgress writes one JSON object per line, in the style of Terraform's
// machine-readable UI.
func NewJSONProgress(w io.Writer) Progress {
	return &jsonProgress{enc: json.NewEncoder(w), reboots: marks{}}
}

type jsonEvent struct {
	Level     string           `json:"@level"`
	Message   string           `json:"@message"`
	Timestamp string           `json:"@timestamp"`
	Type      string           `json:"type"`
	Node      string           `json:"node,omitempty"`
	Pool      string           `json:"pool,omitempty"`
	Event     engine.EventKind `json:"event,omitempty"`
	Step      *model.Step      `json:"step,omitempty"`
	ElapsedMS int64            `json:"elapsed_ms,omitempty"`
	Error     string           `json:"error,omitempty"`
	Reason    string           `json:"reason,omitempty"`
	// Alerts are the firing alerts that hold a node or stop its pool (its alert gate).
	Alerts []model.Alert `json:"alerts,omitempty"`
	// Ahead: a stage step run ahead of the node's slot, outside the pool's budget (its
	// failure is no failure of the node: the slot stages it again).
	Ahead   bool          `json:"ahead,omitempty"`
	Summary *ApplySummary `json:"summary,omitempty"`
}

func (j *jsonProgress) Event(e engine.Event) {
	if e.Kind == engine.EventChecking {
		return // the stream's events are those it had before health gates; a failed gate is a node-failed
	}
	level, msg := "info", ""
	if e.Err != nil {
		level, msg = "error", e.Err.Error()
		if e.Ahead {
			level = "warn" // the slot stages it again
		}
	}
	je := jsonEvent{Level: level, Timestamp: e.Time.UTC().Format(time.RFC3339Nano), Type: "apply_progress",
		Node: e.Node, Pool: e.Pool, Event: e.Kind, ElapsedMS: e.Elapsed.Milliseconds(), Error: msg, Reason: e.Reason, Alerts: e.Alerts, Ahead: e.Ahead}
	if e.Step.Kind != 0 {
		s := e.Step
		je.Step = &s
		je.Message = fmt.Sprintf("node.%s: %s %s", e.Node, e.Step, e.Kind)
	} else if e.Kind == engine.EventTemplate {
		je.Message = strings.TrimSuffix(templateLine(painter(false), e), "\n")
	} else if e.Kind == engine.EventNodeWaiting {
		je.Message = fmt.Sprintf("node.%s: %s", e.Node, e.Reason)
	} else if e.Node == "" { // a pool's event
		je.Message = fmt.Sprintf("pool.%s: %s", e.Pool, e.Kind)
	} else {
		je.Message = fmt.Sprintf("node.%s: %s", e.Node, e.Kind)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.reboots.see(e)
	j.enc.Encode(je)
}

func (j *jsonProgress) Summary(s ApplySummary) {
	s.Outcome = s.outcome()
	level := map[string]string{"failed": "error", "incomplete": "warn"}[s.Outcome]
	if level == "" {
		level = "info"
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.reboots.fill(&s)
	j.enc.Encode(jsonEvent{Level: level, Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Type: "apply_summary",
		Message: fmt.Sprintf("Apply %s: %s", s.Outcome, s.counts()), Summary: &s})
}

// templateLine reports a machine template's boot image set, or not.
func templateLine(c painter, e engine.Event) string {
	if e.Err != nil {
		return fmt.Sprintf("machine_template.%s: %s %s: %s\n", e.Pool, e.Reason, c.red("failed"), errorText(e.Err))
	}
	return fmt.Sprintf("machine_template.%s: %s %s\n", e.Pool, e.Reason, c.green("set"))
}

// counts is the summary's "6 updated, 0 failed, 0 not started", with the adopted nodes
// apart when there are any.
func (s ApplySummary) counts() string {
	adopted := ""
	if s.Adopted > 0 {
		adopted = fmt.Sprintf(", %d adopted", s.Adopted)
	}
	return fmt.Sprintf("%d updated%s, %d failed, %d not started", s.Updated, adopted, s.Failed, s.Deferred)
}

// writeReverts says, per pool that reverted (on_failure = "revert"), which nodes are back on
// the config they ran before and which are not, with why.
func writeReverts(w io.Writer, c painter, reverts []RevertSummary) {
	for _, r := range reverts {
		to := r.To
		if to == "" {
			to = "(none)"
		}
		fmt.Fprintf(w, "\n%s pool.%s back to %s, after: %s\n", c.bold(`Reverted (on_failure = "revert"):`), r.Pool, to, r.Why)
		for _, n := range r.Reverted {
			fmt.Fprintf(w, "  node.%s  %s\n", n, c.green("reverted"))
		}
		for _, n := range slices.Sorted(maps.Keys(r.NotReverted)) {
			fmt.Fprintf(w, "  node.%s  %s: %s\n", n, c.red("not reverted"), r.NotReverted[n])
		}
	}
}
