package model

import (
	"fmt"
	"strings"
)

// StepKind is one kind of node step. The order of the constants is the order in which the
// steps of one node run.
type StepKind uint8

const (
	// StepStage: before the node's slot, everything of an OS image update that leaves the
	// running boot and the next one as they are — the image pulled, a deployment of it
	// checked out and staged behind a finalization lock, no boot entry yet (plain OSTree
	// hosts), checked. The pivot finalizes it in the slot (node executor).
	StepStage        StepKind = iota + 1
	StepCordon                // mark the node unschedulable (engine)
	StepDrain                 // evict its pods, honouring PDBs (engine)
	StepWrite                 // write one file or unit (node executor)
	StepDaemonReload          // systemctl daemon-reload (node executor)
	StepKargs                 // change kernel arguments (node executor)
	StepPivot                 // switch the OS image (node executor)
	StepReload                // reload one unit (node executor)
	StepRestart               // restart one unit (node executor)
	StepReboot                // reboot (node executor)
	StepVerify                // after the reboot, check the disk against the config (node executor)
	StepUncordon              // make the node schedulable again (engine)
	// StepAdopt: the node checks it carries the target whole (as verify does) and records
	// it, changing nothing; a node that differs refuses (node executor's agent). Always
	// alone in a node's steps.
	StepAdopt
)

var stepNames = [...]string{
	StepStage:        "stage",
	StepCordon:       "cordon",
	StepDrain:        "drain",
	StepWrite:        "write",
	StepDaemonReload: "daemon-reload",
	StepKargs:        "kargs",
	StepPivot:        "pivot",
	StepReload:       "reload",
	StepRestart:      "restart",
	StepReboot:       "reboot",
	StepVerify:       "verify",
	StepUncordon:     "uncordon",
	StepAdopt:        "adopt",
}

func (k StepKind) String() string {
	if k.Valid() {
		return stepNames[k]
	}
	return fmt.Sprintf("StepKind(%d)", k)
}

// ParseStepKind is the inverse of String.
func ParseStepKind(s string) (StepKind, error) {
	for k, n := range stepNames {
		if n == s && n != "" {
			return StepKind(k), nil
		}
	}
	return 0, fmt.Errorf("unknown step %q", s)
}

// StageOnly reports whether steps are stage steps alone: a hand-over before the node's
// slot (StepStage), after which the node still runs the config it ran.
func StageOnly(steps []Step) bool {
	for _, s := range steps {
		if s.Kind != StepStage {
			return false
		}
	}
	return len(steps) > 0
}

// StagesFirst reports whether steps begin with a stage: a stage to run before the node's
// slot (the derivation puts it first, StageInSlot moves it into the slot).
func StagesFirst(steps []Step) bool { return len(steps) > 0 && steps[0].Kind == StepStage }

// StageInSlot moves the stage steps of steps (first in run order: a hand-over of their
// own before the cordon) to the node steps of the slot, ahead of them: where they run for
// a node whose config is unknown (the engine's and the views' one rule).
func StageInSlot(steps []Step) []Step {
	var stage, rest []Step
	for _, s := range steps {
		if s.Kind == StepStage {
			stage = append(stage, s)
		} else {
			rest = append(rest, s)
		}
	}
	i := -1
	for k, s := range rest {
		if s.Kind.OnNode() {
			i = k
			break
		}
	}
	if len(stage) == 0 || i < 0 {
		return steps
	}
	return append(append(append([]Step(nil), rest[:i]...), stage...), rest[i:]...)
}

// Valid reports whether k is one of the kinds above (a kind added to the enum is valid
// as soon as it has a name).
func (k StepKind) Valid() bool { return int(k) < len(stepNames) && stepNames[k] != "" }

// OnNode reports whether the node executor runs the step (the rest the engine runs
// through the provider).
func (k StepKind) OnNode() bool {
	return k != StepCordon && k != StepDrain && k != StepUncordon
}

// Disruptive reports whether the step takes the node's workloads away.
func (k StepKind) Disruptive() bool {
	return k == StepDrain || k == StepReboot
}

func (k StepKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

func (k *StepKind) UnmarshalText(b []byte) error {
	v, err := ParseStepKind(string(b))
	*k = v
	return err
}

// Step is one planned action on one node.
type Step struct {
	Kind StepKind `json:"kind"`
	// Target is the file path or unit name the step acts on, when it has one.
	Target string `json:"target,omitempty"`
	// Reason says why the step is needed. It is for people reading the plan only: nothing
	// decides anything on it.
	Reason string `json:"reason"`
	// Evidence is set only on a step the node's agent reports done, never on a planned one:
	// what the node showed of it (a reboot's old and new boot ids), or that it had happened
	// before this run. For people only, as Reason.
	Evidence string `json:"evidence,omitempty"`
}

func (s Step) String() string {
	if s.Target != "" {
		return s.Kind.String() + " " + s.Target
	}
	return s.Kind.String()
}

// Key identifies a step within one node's list, for journals and traces.
func (s Step) Key() string { return s.String() }

// ParseStepKey is the inverse of Key: the step kind and target a key names (the reason is
// not part of a key).
func ParseStepKey(key string) (Step, error) {
	kind, target, _ := strings.Cut(key, " ")
	k, err := ParseStepKind(kind)
	return Step{Kind: k, Target: target}, err
}
