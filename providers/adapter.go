package providers

import (
	"context"
	"errors"
	"time"

	"github.com/mcpfleet/mcp/model"
)

// Capability names one of the optional interfaces a provider may implement.
type Capability string

// The optional capabilities, each named as its interface.
const (
	CapNodeObserver    Capability = "NodeObserver"
	CapNodesRefresher  Capability = "NodesRefresher"
	CapDriftReporter   Capability = "DriftReporter"
	CapConfigObserver  Capability = "ConfigObserver"
	CapFileReader      Capability = "FileReader"
	CapRequestCounter  Capability = "RequestCounter"
	CapWatchSharer     Capability = "WatchSharer"
	CapHealthGater     Capability = "HealthGater"
	CapDegradedMarker  Capability = "DegradedMarker"
	CapCommandChecker  Capability = "CommandChecker"
	CapClaimer         Capability = "Claimer"
	CapTemplatePatcher Capability = "TemplatePatcher"
	CapUserDataStore   Capability = "UserDataStore"
)

// Capabilities are all the optional capabilities, in the order of this file.
var Capabilities = []Capability{CapNodeObserver, CapNodesRefresher, CapDriftReporter, CapConfigObserver, CapFileReader,
	CapRequestCounter, CapWatchSharer, CapHealthGater, CapDegradedMarker, CapCommandChecker,
	CapClaimer, CapTemplatePatcher, CapUserDataStore}

// Adapter is a Provider with each optional capability resolved once: its methods call the
// provider's implementation, or do the capability's fallback (documented on each) when the
// provider has none. The engine holds one and goes through it, so that what a provider
// lacking a capability does is decided here alone; the conformance suite (providertest)
// checks both sides against every provider.
//
// A fallback that cannot stand in for the capability returns an error wrapping
// errors.ErrUnsupported. Where a caller must act otherwise without the capability (not
// try at all), it asks Has first.
type Adapter struct {
	Provider
	has map[Capability]bool

	nodes     NodeObserver
	nodesOnly NodesRefresher
	drift     DriftReporter
	configs   ConfigObserver
	files     FileReader
	requests  RequestCounter
	watches   WatchSharer
	health    HealthGater
	degraded  DegradedMarker
	checks    CommandChecker
	claims    Claimer
	templates TemplatePatcher
	userData  UserDataStore
}

// Adapt resolves p's optional capabilities. An *Adapter is returned as it is.
func Adapt(p Provider) *Adapter {
	if a, ok := p.(*Adapter); ok {
		return a
	}
	a := &Adapter{Provider: p}
	a.has = map[Capability]bool{
		CapNodeObserver:    resolve(p, &a.nodes),
		CapNodesRefresher:  resolve(p, &a.nodesOnly),
		CapDriftReporter:   resolve(p, &a.drift),
		CapConfigObserver:  resolve(p, &a.configs),
		CapFileReader:      resolve(p, &a.files),
		CapRequestCounter:  resolve(p, &a.requests),
		CapWatchSharer:     resolve(p, &a.watches),
		CapHealthGater:     resolve(p, &a.health),
		CapDegradedMarker:  resolve(p, &a.degraded),
		CapCommandChecker:  resolve(p, &a.checks),
		CapClaimer:         resolve(p, &a.claims),
		CapTemplatePatcher: resolve(p, &a.templates),
		CapUserDataStore:   resolve(p, &a.userData),
	}
	return a
}

// resolve sets *c to p as a C, and says whether p is one.
func resolve[C any](p Provider, c *C) bool {
	var ok bool
	*c, ok = p.(C)
	return ok
}

// Has says whether the provider implements c (else its methods do the fallback).
func (a *Adapter) Has(c Capability) bool { return a.has[c] }

// The Adapter implements every capability.
var _ interface {
	Provider
	NodeObserver
	NodesRefresher
	DriftReporter
	ConfigObserver
	FileReader
	RequestCounter
	WatchSharer
	HealthGater
	DegradedMarker
	CommandChecker
	Claimer
	TemplatePatcher
	UserDataStore
} = (*Adapter)(nil)

// unsupportedError is a fallback's error: "this provider <does not>".
type unsupportedError string

func (e unsupportedError) Error() string        { return "this provider " + string(e) }
func (e unsupportedError) Is(target error) bool { return target == errors.ErrUnsupported }

func unsupported(what string) error { return unsupportedError(what) }

// ObserveNodes is NodeObserver's; the fallback refreshes the whole fleet and keeps the
// named nodes it has (a name it lacks is left out, not an error).
func (a *Adapter) ObserveNodes(ctx context.Context, names []string) ([]model.Node, error) {
	if a.nodes != nil {
		return a.nodes.ObserveNodes(ctx, names)
	}
	f, err := a.Refresh(ctx)
	if err != nil {
		return nil, err
	}
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	var out []model.Node
	for _, n := range f.Nodes {
		if want[n.Name] {
			out = append(out, n)
		}
	}
	return out, nil
}

// RefreshNodes is NodesRefresher's; the fallback is a whole Refresh.
func (a *Adapter) RefreshNodes(ctx context.Context) (*model.Fleet, error) {
	if a.nodesOnly != nil {
		return a.nodesOnly.RefreshNodes(ctx)
	}
	return a.Refresh(ctx)
}

// Drift is DriftReporter's; without it drift is what Refresh reported, and Drift is
// unsupported (ask Has(CapDriftReporter) first).
func (a *Adapter) Drift(ctx context.Context, node string, current *model.Rendered) ([]model.Drift, error) {
	if a.drift != nil {
		return a.drift.Drift(ctx, node, current)
	}
	return nil, unsupported("checks no disk on request")
}

// ObserveConfig is ConfigObserver's; the fallback is unsupported: nodes whose current
// config is unknown are planned without an observation (ask Has(CapConfigObserver) first).
func (a *Adapter) ObserveConfig(ctx context.Context, node string, target *model.Rendered) (model.Observation, error) {
	if a.configs != nil {
		return a.configs.ObserveConfig(ctx, node, target)
	}
	return model.Observation{}, unsupported("cannot observe what its nodes carry")
}

// ReadNodeFile is FileReader's; the fallback is unsupported (a drift is shown without
// its diff).
func (a *Adapter) ReadNodeFile(ctx context.Context, node, path string, max int64) ([]byte, error) {
	if a.files != nil {
		return a.files.ReadNodeFile(ctx, node, path, max)
	}
	return nil, unsupported("cannot read nodes' files")
}

// APIRequests is RequestCounter's; the fallback is -1 (no count).
func (a *Adapter) APIRequests() int64 {
	if a.requests != nil {
		return a.requests.APIRequests()
	}
	return -1
}

// ShareWatches is WatchSharer's; the fallback shares nothing, and stop does nothing.
func (a *Adapter) ShareWatches(ctx context.Context) (stop func()) {
	if a.watches != nil {
		return a.watches.ShareWatches(ctx)
	}
	return func() {}
}

// WaitHealthy is HealthGater's; the fallback passes at once: the provider has no
// built-in gates.
func (a *Adapter) WaitHealthy(ctx context.Context, node string, timeout time.Duration) error {
	if a.health != nil {
		return a.health.WaitHealthy(ctx, node, timeout)
	}
	return nil
}

// NodeAddress is HealthGater's; the fallback is unsupported.
func (a *Adapter) NodeAddress(ctx context.Context, node string) (string, error) {
	if a.health != nil {
		return a.health.NodeAddress(ctx, node)
	}
	return "", unsupported("does not know nodes' addresses")
}

// MarkDegraded is DegradedMarker's; the fallback records nothing (the failure is in
// apply's error alone) and is no error.
func (a *Adapter) MarkDegraded(ctx context.Context, node, reason string) error {
	if a.degraded != nil {
		return a.degraded.MarkDegraded(ctx, node, reason)
	}
	return nil
}

// PublishChecks is CommandChecker's; the fallback publishes nothing and is no error (a
// command check then fails at its gate: RunCheck).
func (a *Adapter) PublishChecks(ctx context.Context, checks map[string][]model.HealthCheck) error {
	if a.checks != nil {
		return a.checks.PublishChecks(ctx, checks)
	}
	return nil
}

// RunCheck is CommandChecker's; the fallback is unsupported.
func (a *Adapter) RunCheck(ctx context.Context, node, pool string, check model.HealthCheck) (model.CheckResult, error) {
	if a.checks != nil {
		return a.checks.RunCheck(ctx, node, pool, check)
	}
	return model.CheckResult{}, unsupported("cannot run commands on its nodes")
}

// Claim is Claimer's; the fallback is unsupported: a provider that keeps no claims is
// not asked (Has(CapClaimer)), and an apply then claims no node.
func (a *Adapter) Claim(ctx context.Context, node string, c model.Claim, live ClaimLive) (*model.Claim, error) {
	if a.claims != nil {
		return a.claims.Claim(ctx, node, c, live)
	}
	return nil, unsupported("keeps no claims")
}

// Intend is Claimer's; the fallback is unsupported, as Claim's.
func (a *Adapter) Intend(ctx context.Context, node string, c model.Claim) error {
	if a.claims != nil {
		return a.claims.Intend(ctx, node, c)
	}
	return unsupported("keeps no claims")
}

// Release is Claimer's; the fallback is unsupported, as Claim's.
func (a *Adapter) Release(ctx context.Context, node string, c model.Claim, leave *model.Claim) error {
	if a.claims != nil {
		return a.claims.Release(ctx, node, c, leave)
	}
	return unsupported("keeps no claims")
}

// Clear is Claimer's; the fallback is unsupported, as Claim's.
func (a *Adapter) Clear(ctx context.Context, node string, held, leave model.Claim) error {
	if a.claims != nil {
		return a.claims.Clear(ctx, node, held, leave)
	}
	return unsupported("keeps no claims")
}

// SetTemplateImage is TemplatePatcher's; the fallback is unsupported.
func (a *Adapter) SetTemplateImage(ctx context.Context, t model.MachineTemplate, from, to string) error {
	if a.templates != nil {
		return a.templates.SetTemplateImage(ctx, t, from, to)
	}
	return unsupported("cannot set machine templates")
}

// UserData is UserDataStore's; the fallback is unsupported.
func (a *Adapter) UserData(ctx context.Context, namespace, name, key string) ([]byte, bool, error) {
	if a.userData != nil {
		return a.userData.UserData(ctx, namespace, name, key)
	}
	return nil, false, unsupported("holds no Secrets")
}

// SetUserData is UserDataStore's; the fallback is unsupported.
func (a *Adapter) SetUserData(ctx context.Context, namespace, name, key string, value []byte, from string) error {
	if a.userData != nil {
		return a.userData.SetUserData(ctx, namespace, name, key, value, from)
	}
	return unsupported("holds no Secrets")
}
