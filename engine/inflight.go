package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/providers"
	"github.com/mcpfleet/mcp/state"
)

// Intent before action (docs/decisions.md): before a node's first action apply opens its
// journal entry (a Begin record), and before each action that changes the node — its
// cordon, the hand-over of its steps, its uncordon — it records the action's intent on the
// node's claim (providers.Claimer.Intend), which the provider writes with the action
// itself where it can. The journal records each step once it finished, and drops the
// entry once the node did. The next run reads these records (inFlight); it never guesses
// what was in flight from how a node looks.

// inFlight lists the updates interrupted applies left on fleet's nodes, as they recorded
// them: each open journal entry of st — an update begun and not finished —, with the
// intent its apply wrote last on the node's claim when the claim names that apply; and a
// node whose claim, held by an apply this state's journal does not know (another state's,
// or one whose record was lost), says that apply cordoned it and did not uncordon it.
func inFlight(st *state.State, fleet *model.Fleet) []model.InFlight {
	var out []model.InFlight
	for i := range fleet.Nodes {
		n := &fleet.Nodes[i]
		c := n.Claim
		if c != nil && c.Intent != nil && !c.Intent.Phase.Valid() {
			c = nil // an intent mcp did not write (a hand edit): it says nothing
		}
		e, journaled := st.Journal[n.Name]
		switch {
		case journaled:
			f := model.InFlight{Node: n.Name, Apply: e.Apply, From: e.From, Target: e.Target, Done: slices.Clone(e.Done)}
			f.Phase, f.Cordoned = model.PhaseOf(e.Done)
			if c != nil && c.Intent != nil && e.Apply != "" && c.Apply == e.Apply {
				// The intent is written before (or with) each action, the journal after it:
				// the intent's phase is the later word. A cordon the journal has and the
				// intent does not stands until the uncordon is journaled: an intent written
				// just before its uncordon says uncordoned before the uncordon is made.
				f.Phase, f.Cordoned = c.Intent.Phase, c.Intent.Cordoned || f.Cordoned
			}
			out = append(out, f)
		case c.Held() && c.Intent != nil && c.Intent.Cordoned:
			out = append(out, model.InFlight{Node: n.Name, Apply: c.Apply, Target: c.Intent.Target,
				Phase: c.Intent.Phase, Cordoned: true})
		}
	}
	return out
}

// inFlightOf is the update in flight the plan's refresh found on node (nil: none).
func (a *applier) inFlightOf(node string) *model.InFlight {
	if a.obs == nil {
		return nil
	}
	for i := range a.obs.InFlight {
		if a.obs.InFlight[i].Node == node {
			return &a.obs.InFlight[i]
		}
	}
	return nil
}

// begin opens the node's journal entry before its first action: from then until the node
// finishes, the update is in flight for any later run. An entry that cannot be written
// leaves the node as it is: nothing may change on a node whose intent is not recorded.
func (r *nodeRun) begin() error {
	n, a := r.n, r.a
	rec := state.JournalRecord{Node: n.Name, Apply: a.id, From: a.journalFrom(n), Target: n.To, Begin: true}
	if err := a.appendJournal(rec); err != nil {
		return fmt.Errorf("node %s: not started: recording that this apply begins it: %w", n.Name, err)
	}
	a.foldJournal(rec)
	return nil
}

// intent is node n's claim with the intent of the action it takes next; cordoned says
// whether the node is cordoned by this apply once the action is made.
func intent(c model.Claim, n planner.NodePlan, p model.Phase, cordoned bool) model.Claim {
	c.Intent = &model.Intent{Target: n.To, Phase: p, Cordoned: cordoned}
	return c
}

// intend records, before the action, what apply does next to the node (phase; cordoned: the
// node is cordoned by this apply once it is made), on the claim it holds there: the
// provider writes it with the action (providers.Claimer.Intend). Without a claim (a
// provider that keeps none) the journal's entry is the only record.
func (r *nodeRun) intend(ctx context.Context, p model.Phase, cordoned bool) error {
	a, n := r.a, r.n
	cl, ok := a.claims.claimer()
	if !ok {
		return nil
	}
	h := a.claims.get(n.Name)
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	next := intent(h.c, n, p, cordoned)
	if err := cl.Intend(ctx, n.Name, next); err != nil {
		if errors.Is(err, providers.ErrClaimed) {
			return err
		}
		return fmt.Errorf("recording the intent to %s on its claim: %w", p, err)
	}
	h.c = next
	return nil
}
