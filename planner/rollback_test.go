package planner

import (
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/model"
)

// A pool an earlier rollback left on X is warned about while the configuration renders
// another config — going forward again to the one it was rolled back from, or moving on to
// a third — and not once it renders X; a rollback's own plan says it rolls back.
func TestRollbackNotes(t *testing.T) {
	marks := map[string]model.RolledBack{"worker": {To: "r-x", From: "r-y", Why: "mcp rollback"}}
	for _, c := range []struct {
		rendered string
		rollback bool
		want     string // "" no warning
	}{
		{"r-y", false, "pool was rolled back to r-x from r-y (mcp rollback); the configuration renders r-y, so this plan goes forward again"},
		{"r-z", false, "renders r-z, a config it ran neither before nor after the rollback, so this plan moves it there"},
		{"r-x", false, ""},
		{"r-x", true, ""},
	} {
		pp := PoolPlan{Name: "worker", Rendered: c.rendered}
		rollbackNotes(Input{RolledBack: marks, Rollback: map[string]bool{"worker": c.rollback}}, &pp)
		switch {
		case c.want == "" && (len(pp.Warnings) > 0 || pp.RolledBack != nil):
			t.Errorf("%s: warned %q", c.rendered, pp.Warnings)
		case c.want != "" && (len(pp.Warnings) != 1 || !strings.Contains(pp.Warnings[0], c.want) || pp.RolledBack == nil):
			t.Errorf("%s: warnings %q, want %q", c.rendered, pp.Warnings, c.want)
		}
		if pp.Rollback != c.rollback {
			t.Errorf("%s: rollback %v", c.rendered, pp.Rollback)
		}
	}
}
