package providertest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

// The promises of providers.Adapter, through which the engine reaches every capability:
// it finds what the provider implements, and where it does not, each capability's
// fallback does what its documentation says.

// implements says whether p implements c, by the type assertion the Adapter stands for.
func implements(p providers.Provider, c providers.Capability) bool {
	ok := false
	switch c {
	case providers.CapNodeObserver:
		_, ok = p.(providers.NodeObserver)
	case providers.CapNodesRefresher:
		_, ok = p.(providers.NodesRefresher)
	case providers.CapDriftReporter:
		_, ok = p.(providers.DriftReporter)
	case providers.CapConfigObserver:
		_, ok = p.(providers.ConfigObserver)
	case providers.CapFileReader:
		_, ok = p.(providers.FileReader)
	case providers.CapRequestCounter:
		_, ok = p.(providers.RequestCounter)
	case providers.CapWatchSharer:
		_, ok = p.(providers.WatchSharer)
	case providers.CapHealthGater:
		_, ok = p.(providers.HealthGater)
	case providers.CapDegradedMarker:
		_, ok = p.(providers.DegradedMarker)
	case providers.CapCommandChecker:
		_, ok = p.(providers.CommandChecker)
	case providers.CapClaimer:
		_, ok = p.(providers.Claimer)
	case providers.CapTemplatePatcher:
		_, ok = p.(providers.TemplatePatcher)
	case providers.CapUserDataStore:
		_, ok = p.(providers.UserDataStore)
	default:
		panic("no such capability " + c)
	}
	return ok
}

// adapterFindsCapabilities: the Adapter has exactly the capabilities the provider
// implements, and reaches the provider's own where it has them.
func adapterFindsCapabilities(t *testing.T, newProvider New) {
	p := newProvider(t, Standard())
	a := providers.Adapt(p)
	if providers.Adapt(a) != a {
		t.Error("Adapt of an Adapter made another")
	}
	for _, c := range providers.Capabilities {
		if a.Has(c) != implements(p, c) {
			t.Errorf("Has(%s) = %v, the provider implements it: %v", c, a.Has(c), implements(p, c))
		}
	}
	if a.Has(providers.CapNodeObserver) {
		// The provider's own: a name the fleet lacks is an error (the fallback leaves it out).
		if _, err := a.ObserveNodes(ctx, []string{"w-9"}); err == nil {
			t.Error("ObserveNodes(w-9) through the Adapter: no error, the provider's own gives one")
		}
	}
	if rc, ok := p.(providers.RequestCounter); ok && a.APIRequests() < rc.APIRequests() {
		t.Error("APIRequests through the Adapter went back from the provider's own count")
	}
}

// bare is a provider with none of the optional capabilities: its Provider's methods alone.
type bare struct{ providers.Provider }

// adapterFallbacks: over a provider with no optional capability, each capability does its
// fallback: the observations come from Refresh; sharing watches, the built-in gates,
// marking Degraded and publishing command checks do nothing, without error; the request
// count is -1; the rest is an error that is errors.ErrUnsupported and changes nothing.
func adapterFallbacks(t *testing.T, newProvider New) {
	p := newProvider(t, Standard())
	a := providers.Adapt(bare{p})
	for _, c := range providers.Capabilities {
		if a.Has(c) {
			t.Errorf("Has(%s) of a provider without it", c)
		}
	}
	if err := p.Cordon(ctx, "w-2"); err != nil {
		t.Fatal(err)
	}
	nodes, err := a.ObserveNodes(ctx, []string{"w-2", "w-9"})
	if err != nil || len(nodes) != 1 || observed(nodes[0]) != observed(node(t, p, "w-2")) {
		t.Errorf("fallback ObserveNodes(w-2, w-9): %v, %v; want w-2 as Refresh sees it, w-9 left out", nodes, err)
	}
	f, err := a.RefreshNodes(ctx)
	if err != nil || len(f.Nodes) != 3 {
		t.Errorf("fallback RefreshNodes: %v, %v; want Refresh's 3 nodes", f, err)
	}
	if n := a.APIRequests(); n != -1 {
		t.Errorf("fallback APIRequests: %d, want -1", n)
	}
	a.ShareWatches(ctx)()
	if err := a.WaitHealthy(ctx, "w-0", time.Second); err != nil {
		t.Errorf("fallback WaitHealthy: %v, want a pass (no built-in gates)", err)
	}
	if err := a.MarkDegraded(ctx, "w-1", "gate failed"); err != nil || node(t, p, "w-1").State == model.StateDegraded {
		t.Errorf("fallback MarkDegraded: %v; want nothing recorded and no error", err)
	}
	if err := a.PublishChecks(ctx, map[string][]model.HealthCheck{"worker": {{Name: "probe", Command: []string{"true"}}}}); err != nil {
		t.Errorf("fallback PublishChecks: %v, want nothing published and no error", err)
	}
	target, _ := conformanceTarget()
	tm := model.MachineTemplate{Kind: "MachineSet", Namespace: TemplateNamespace, Name: "worker-a", Image: "ami-0"}
	claim := model.Claim{Apply: "a1", Since: time.Now()}
	unsupported := map[string]func() error{
		"Drift":            func() error { _, err := a.Drift(ctx, "w-0", target); return err },
		"ObserveConfig":    func() error { _, err := a.ObserveConfig(ctx, "w-0", target); return err },
		"ReadNodeFile":     func() error { _, err := a.ReadNodeFile(ctx, "w-0", "/etc/hostname", 10); return err },
		"NodeAddress":      func() error { _, err := a.NodeAddress(ctx, "w-0"); return err },
		"RunCheck":         func() error { _, err := a.RunCheck(ctx, "w-0", "worker", model.HealthCheck{Name: "probe"}); return err },
		"Claim":            func() error { _, err := a.Claim(ctx, "w-0", claim, nil); return err },
		"Release":          func() error { return a.Release(ctx, "w-0", claim, nil) },
		"SetTemplateImage": func() error { return a.SetTemplateImage(ctx, tm, "ami-0", "ami-1") },
		"UserData":         func() error { _, _, err := a.UserData(ctx, Namespace, "ud", "userData"); return err },
		"SetUserData":      func() error { return a.SetUserData(ctx, Namespace, "ud", "userData", []byte("x"), "") },
	}
	for name, call := range unsupported {
		if err := call(); !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("fallback %s: %v, want an error that is errors.ErrUnsupported", name, err)
		}
	}
	if n := node(t, p, "w-0"); n.Claim != nil || n.State == model.StateDegraded {
		t.Errorf("the fallbacks changed w-0: %s", fmt.Sprint(n.Claim, n.State))
	}
}
