package agentcmd

import (
	"testing"

	"github.com/mcpfleet/mcp/agent/standalone"
	"github.com/mcpfleet/mcp/model"
)

// -once says what the reconcile left the node at, nothing to do included.
func TestOnceLine(t *testing.T) {
	for _, c := range []struct {
		st   standalone.Status
		want string
	}{
		{standalone.Status{}, "Nothing to do: no rendered config is desired (give -desired NAME, or write its name to /r/var/lib/mcp/desired)."},
		{standalone.Status{Desired: "r-1", Current: "r-1", State: "Done"}, "Nothing to do: the node runs r-1 (Done), as desired."},
		{standalone.Status{Desired: "r-1", Current: "r-1", State: "Done", Drift: []model.Drift{{Path: "/etc/a", Kind: model.DriftMissing}}},
			"The node runs r-1 (Done), and differs from it: /etc/a: missing."},
		{standalone.Status{Desired: "r-2", Current: "r-1", State: "Degraded", Reason: "write /etc/a: denied"},
			"The node is Degraded on its way to r-2: write /etc/a: denied"},
		{standalone.Status{Desired: "r-2", State: "Working"}, "The node is Working on its way from no config to r-2."},
	} {
		if got := OnceLine(c.st, "/r"); got != c.want {
			t.Errorf("OnceLine(%+v) = %q, want %q", c.st, got, c.want)
		}
	}
}
