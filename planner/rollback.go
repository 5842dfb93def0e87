package planner

import (
	"fmt"
	"time"
)

// rollbackNotes says what a rollback means for the pool: a plan of mcp rollback says it
// goes back; a plan of a pool an earlier rollback left off what the configuration renders
// says it goes forward again (the configuration is the truth, as Terraform's), until the
// configuration renders the config it was rolled back to.
func rollbackNotes(in Input, pp *PoolPlan) {
	if in.Rollback[pp.Name] {
		pp.Rollback = true
		return
	}
	m, ok := in.RolledBack[pp.Name]
	if !ok || m.To == pp.Rendered {
		return
	}
	pp.RolledBack = &m
	when := ""
	if !m.At.IsZero() {
		when = " at " + m.At.UTC().Format(time.RFC3339)
	}
	why := ""
	if m.Why != "" {
		why = " (" + m.Why + ")"
	}
	next := "so this plan goes forward again"
	if pp.Rendered != m.From {
		next = "a config it ran neither before nor after the rollback, so this plan moves it there"
	}
	pp.Warnings = append(pp.Warnings, fmt.Sprintf("pool was rolled back to %s from %s%s%s; the configuration renders %s, "+
		"%s: to stay on %s, change the configuration back (it then renders %s again)",
		m.To, m.From, when, why, pp.Rendered, next, m.To, m.To))
}
