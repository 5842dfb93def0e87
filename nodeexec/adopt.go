package nodeexec

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcpfleet/mcp/model"
)

// StaleError refuses an adoption: the node no longer carries the target it was planned to
// be recorded on (it changed since the plan observed it). Nothing on the node changed and
// nothing was reported: the node is not Degraded, and a new plan derives its steps.
type StaleError struct {
	Target string
	Drift  []Drift
}

func (e *StaleError) Error() string {
	parts := make([]string, len(e.Drift))
	for i, d := range e.Drift {
		parts[i] = d.String()
	}
	return fmt.Sprintf("stale plan: the node no longer carries %s as planned (%s); not adopted, nothing changed: run mcp plan again",
		e.Target, strings.Join(parts, "; "))
}

// adopt records target as the node's config when the node carries it whole, checked as
// the verify step checks (CheckNode); it writes, restarts and reboots nothing. A node that
// differs is refused with a *StaleError and left as it was: no Working, no Degraded.
func (a *Agent) adopt(ctx context.Context, target *model.Rendered, s model.Step, done func(model.Step)) error {
	drift, err := a.Exec.CheckNode(ctx, nil, target)
	if err != nil {
		return fmt.Errorf("%s: %w", s, err)
	}
	if len(drift) > 0 {
		return &StaleError{Target: target.Name, Drift: drift}
	}
	s.Evidence = "the node carries every item of " + target.Name
	done(s)
	return a.finish(target.Name)
}

// adoption reports whether steps are an adoption (one adopt step, alone).
func adoption(steps []model.Step) bool {
	return len(steps) == 1 && steps[0].Kind == model.StepAdopt
}

// Observe is what the node carries against target, a config it is not recorded on: the
// verify step's check (CheckNode from nothing managed), bounded to model.MaxObserved
// listed differences — a file too large or of the wrong type is one drift entry saying so.
// Every provider's observation runs it (the local provider on the node's root, the kube
// agent on its own).
func (e *Executor) Observe(ctx context.Context, target *model.Rendered) (model.Observation, error) {
	drift, err := e.CheckNode(ctx, nil, target)
	if err != nil {
		return model.Observation{}, fmt.Errorf("observing what the node carries of %s: %w", target.Name, err)
	}
	o := model.Observation{Target: target.Name, Drift: drift}
	o.Bound(model.MaxObserved)
	return o, nil
}
