package model

// Phase is the action an apply takes on a node, as its intent names it before (or with)
// the action: the last one it began.
type Phase string

const (
	// PhaseClaimed: the apply claimed the node; nothing on it changed yet.
	PhaseClaimed Phase = "claimed"
	// PhaseCordon: the apply cordons the node (and then drains it).
	PhaseCordon Phase = "cordon"
	// PhaseHandOver: the apply hands the node's steps and target to its executor.
	PhaseHandOver Phase = "hand-over"
	// PhaseUncordon: the apply uncordons the node.
	PhaseUncordon Phase = "uncordon"
)

// Valid reports whether p is one of the phases.
func (p Phase) Valid() bool {
	return p == PhaseClaimed || p == PhaseCordon || p == PhaseHandOver || p == PhaseUncordon
}

// Intent is what an apply is doing to a node: written on the node's claim before each
// action that changes the node, in the action's own write where the provider can
// (providers.Claimer), so that a run after a kill reads what was in flight instead of
// guessing it from the node's shape (Terraform marks an unfinished object tainted for the
// same reason).
type Intent struct {
	// Target is the rendered config the apply moves the node to.
	Target string `json:"target"`
	// Phase is the last action the apply began on the node.
	Phase Phase `json:"phase"`
	// Cordoned: the node is cordoned by this apply (or by an interrupted one it took the
	// node over from) and not uncordoned since: whoever finishes the update uncordons it.
	Cordoned bool `json:"cordoned,omitempty"`
}

// InFlight is an update an apply began on a node and did not finish, as that apply
// recorded it: the state's journal (begun before the node's first action, each step
// recorded once it finished, dropped once the node finished) and the intent on the node's
// claim. The planner takes these as its input and resumes such a node: it never infers
// one from how the node looks.
type InFlight struct {
	Node string `json:"node"`
	// Apply is the apply run that began it ("": a journal written before runs were named).
	Apply string `json:"apply,omitempty"`
	// From is the node's config when the update began; Target the config it moves to.
	From   string `json:"from,omitempty"`
	Target string `json:"target"`
	// Phase is the last action the apply recorded beginning; Cordoned says the node is
	// cordoned by it (model.Intent).
	Phase    Phase `json:"phase"`
	Cordoned bool  `json:"cordoned,omitempty"`
	// Done are the steps it journaled finished (model.Step.Key), in order.
	Done []string `json:"done,omitempty"`
}

// Started reports whether the apply changed anything on the node: an action begun, or a
// step finished. An update only claimed changed nothing, and is no update in flight.
func (f *InFlight) Started() bool {
	return f.Phase != PhaseClaimed && f.Phase != "" || len(f.Done) > 0
}

// PhaseOf is the phase a journal's finished steps show, and whether they leave the node
// cordoned: for a journal entry whose apply recorded no intent on the node (one written
// before intents were, or a provider that keeps no claims).
func PhaseOf(done []string) (Phase, bool) {
	cordon, uncordon := Step{Kind: StepCordon}.Key(), Step{Kind: StepUncordon}.Key()
	p, cordoned := PhaseClaimed, false
	for _, k := range done {
		switch s, err := ParseStepKey(k); {
		case err != nil:
		case k == cordon:
			p, cordoned = PhaseCordon, true
		case k == uncordon:
			p, cordoned = PhaseUncordon, false
		case s.Kind.OnNode():
			p = PhaseHandOver
		}
	}
	return p, cordoned
}

// IndexInFlight keys fs by node.
func IndexInFlight(fs []InFlight) map[string]*InFlight {
	out := make(map[string]*InFlight, len(fs))
	for i := range fs {
		out[fs[i].Node] = &fs[i]
	}
	return out
}

// Same reports whether a and b are one intent (nil for none).
func (a *Intent) Same(b *Intent) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
