package model

// Observation is what a node carries against a rendered config it is not recorded on: its
// current config is absent, or a name the state does not know (an MCO-rendered one, a
// lost state). Refresh fills it (Node.Observed), through the node's own check — the one
// its verify step runs — so that the plan derives the steps of exactly the items that
// differ, and a node that carries everything is adopted: recorded, not touched.
type Observation struct {
	// Target is the rendered config the node was compared with (its pool's target).
	Target string `json:"target"`
	// Drift lists how the node differs from Target: paths by digest, mode, owner and
	// type, units, kernel arguments, OS image — at most MaxObserved entries.
	Drift []Drift `json:"drift,omitempty"`
	// Unlisted counts the differences beyond Drift: the plan then restores every item of
	// Target, each with its on_change.
	Unlisted int `json:"unlisted,omitempty"`
	// Reason, when set, says why the node could not be observed: the plan then derives its
	// steps as without an observation (a full rewrite for an unknown config), and says why.
	Reason string `json:"reason,omitempty"`
}

// MaxObserved bounds Observation.Drift: a node that differs in more is restored whole.
const MaxObserved = 1000

// Bound keeps at most max drift entries and counts the rest as unlisted.
func (o *Observation) Bound(max int) {
	if len(o.Drift) > max {
		o.Unlisted += len(o.Drift) - max
		o.Drift = o.Drift[:max:max]
	}
}

// Usable reports whether the observation says what the node carries against target.
func (o *Observation) Usable(target string) bool {
	return o != nil && o.Target == target && o.Reason == ""
}

// Carries reports whether the observation shows the node carries target whole.
func (o *Observation) Carries(target string) bool {
	return o.Usable(target) && len(o.Drift) == 0 && o.Unlisted == 0
}
