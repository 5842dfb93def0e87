package main

import (
	"strings"
	"testing"
)

// serve -fleetlock refuses what cannot hold the budget: a lease out of bounds, and a
// provider that keeps no claims on Kubernetes Nodes (the quickstart's local fleet) — never
// a FleetLock endpoint that grants slots nothing counts.
func TestServeFleetLockRefusals(t *testing.T) {
	dir := quickstart(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-fleetlock", "-fleetlock-lease", "0s"}, "-fleetlock-lease 0s"},
		{[]string{"-fleetlock", "-fleetlock-lease", "25h"}, "at most 24h0m0s"},
		{[]string{"-fleetlock"}, `it needs provider "kubernetes"`},
	} {
		code, out, errOut := mcpWithin(t, dir, append([]string{"serve", "-listen", "127.0.0.1:0"}, tc.args...)...)
		if code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("mcp serve %s: exit %d, want 1 saying %q\n%s%s", strings.Join(tc.args, " "), code, tc.want, out, errOut)
		}
	}
}
