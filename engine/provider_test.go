package engine

import (
	"testing"

	"github.com/mcpfleet/mcp/providers"
)

// The workspace resolves its provider's capabilities once, and again when Provider is set
// to another (tests and callers may set it after Load).
func TestWorkspaceProviderResolvedOncePerProvider(t *testing.T) {
	f := newFake(map[string]int{"worker": 1})
	w := &Workspace{Provider: f}
	a := w.provider()
	if w.provider() != a || a.Provider != providers.Provider(f) {
		t.Fatal("the same provider was resolved again")
	}
	if a.Has(providers.CapCommandChecker) {
		t.Fatal("the fake has no CommandChecker")
	}
	w.Provider = &checkingProvider{fakeProvider: f}
	if b := w.provider(); b == a || !b.Has(providers.CapCommandChecker) {
		t.Errorf("after Provider was set to one with command checks: Has(CommandChecker) %v", b.Has(providers.CapCommandChecker))
	}
	// A provider of a type that cannot be compared is resolved each time, never mistaken.
	w.Provider = uncomparable{f, nil}
	if c := w.provider(); c.Has(providers.CapCommandChecker) {
		t.Error("an uncomparable provider got the last one's capabilities")
	}
}

type uncomparable struct {
	*fakeProvider
	_ []int
}
