// Package engine runs mcp's job: load the configuration, render it, refresh the fleet, plan,
// and apply a plan through a provider — holding the state lock, refusing stale plans and
// journaling every finished step so that an interrupted apply can be run again. The engine
// decides nothing itself (the planner does) and knows nothing of how a provider reaches its
// nodes.
package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mcpfleet/mcp/config"
	"github.com/mcpfleet/mcp/engine/planfile"
	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/providers"
	"github.com/mcpfleet/mcp/state"
)

// Version is mcp's version, set at build time.
var Version = "0.1.0-dev"

// Workspace is a loaded and rendered configuration with its provider and state backend:
// the parts Plan and Apply work with. Neither writes a field of it; how the caller holds
// the state lock is told to each (Locking), and a plan carries what its refresh saw (Plan).
type Workspace struct {
	Dir      string
	Config   *config.Result
	Desired  *model.Desired
	Rendered map[string]*model.Rendered // by pool
	// Variants renders the pools' variants for chosen nodes (planner.Variants), each once.
	Variants *planner.Variants
	Provider providers.Provider
	Backend  state.Backend
	adapted  adapted // Provider's capabilities: provider()
	// Alerts answers the pools' alert gates (Parts.Alerts).
	Alerts AlertSource
	// rollback: the pools whose Rendered is a stored config a rollback goes back to, and
	// its name (RollingBack).
	rollback map[string]string
	// rollbackWhy says what rolls back (the pools' rollback marks): "mcp rollback" when "".
	rollbackWhy string
}

// Parts are the providers and state backends this build of mcp has, as each declares
// itself (its spec: name, settings, constructor). cmd composes them; the engine reads the
// configuration's provider and state blocks against their specs and builds what they name,
// knowing no provider or backend by name.
type Parts struct {
	Providers []providers.Spec
	// Backends are the state backends; the first is the one a configuration without a
	// state block, or without a backend attribute, uses.
	Backends []state.BackendSpec
	// Alerts asks Prometheus which alerts fire, for the pools' alert_gate blocks; nil:
	// a pool with one holds every node (the gate fails closed).
	Alerts AlertSource
}

// AlertSource asks a Prometheus server which alerts fire (engine/alerts, over Prometheus'
// own client). The engine knows it by this interface, so that it links no Prometheus
// client: cmd composes it.
type AlertSource interface {
	// Firing returns the alerts firing now at the server with base URL base (pending ones
	// left out), or an error naming the server.
	Firing(ctx context.Context, base string) ([]model.Alert, error)
}

// Schemas are the blocks of the parts, for the configuration language.
func (p Parts) Schemas() config.Schemas {
	var s config.Schemas
	for _, sp := range p.Providers {
		s.Providers = append(s.Providers, sp.BlockSpec)
	}
	for _, b := range p.Backends {
		s.Backends = append(s.Backends, b.BlockSpec)
	}
	return s
}

// Provider builds the provider the configuration names.
func (p Parts) Provider(d *model.Desired) (providers.Provider, error) {
	for _, sp := range p.Providers {
		if sp.Name == d.Provider.Type {
			return sp.New(d.Provider.Settings)
		}
	}
	return nil, fmt.Errorf("provider %q is not available in this build", d.Provider.Type)
}

// Backend opens the state backend the configuration names.
func (p Parts) Backend(d *model.Desired) (state.Backend, error) {
	for _, b := range p.Backends {
		if b.Name == d.State.Backend {
			return b.Open(d.State.Settings)
		}
	}
	return nil, fmt.Errorf("state backend %q is not available in this build", d.State.Backend)
}

// Load reads the configuration in dir, renders every pool and builds the provider and
// the state backend from parts. Diagnostics carry source ranges; the Workspace is nil on
// errors (its Config may still be needed to print them, so it is returned in the result too).
// A configuration of clusters loaded without opts.Cluster gives no Workspace and no error:
// the Result names its clusters (package clusters loads each).
func Load(dir string, opts config.Options, parts Parts) (*Workspace, *config.Result, model.Diagnostics) {
	w, res, diags := Render(dir, opts, parts)
	if w == nil {
		return nil, res, diags
	}
	if d := w.Open(parts); d != nil {
		return nil, res, append(diags, d)
	}
	return w, res, diags
}

// Render is Load without building the provider and the backend (Open does): a fleet of
// clusters shows a cluster whose provider cannot start as unknown, beside the others.
func Render(dir string, opts config.Options, parts Parts) (*Workspace, *config.Result, model.Diagnostics) {
	return RenderShared(dir, opts, parts, nil)
}

// RenderShared is Render rendering through cache: the clusters of a fleet render
// identical configs once.
func RenderShared(dir string, opts config.Options, parts Parts, cache *RenderCache) (*Workspace, *config.Result, model.Diagnostics) {
	opts.Schemas = parts.Schemas()
	res, diags := config.Load(dir, opts)
	if diags.HasErrors() || res.Desired == nil {
		return nil, res, diags
	}
	d := res.Desired
	rendered, rdiags := cache.render(d)
	diags = append(diags, rdiags...)
	if diags.HasErrors() {
		return nil, res, diags
	}
	v := planner.NewVariants(d, ignition.Renderer{})
	if _, err := v.ForMachines(); err != nil {
		return nil, res, append(diags, &model.Diagnostic{Severity: model.DiagError, Summary: "A machine's config does not render", Detail: err.Error()})
	}
	return &Workspace{Dir: dir, Config: res, Desired: d, Rendered: rendered, Variants: v, Alerts: parts.Alerts}, res, diags
}

// Open builds the provider and the state backend of a rendered Workspace; a part that
// refuses to be built is a diagnostic at its setting.
func (w *Workspace) Open(parts Parts) *model.Diagnostic {
	d := w.Desired
	var err error
	if w.Provider, err = parts.Provider(d); err != nil {
		return partError("Cannot start provider", err, d.Provider.Settings, d.Provider.DeclRange)
	}
	if w.Backend, err = parts.Backend(d); err != nil {
		return partError("Cannot open state backend", err, d.State.Settings, d.State.DeclRange)
	}
	return nil
}

// partError is a part's refusal to be built, shown at the setting it names (a
// *model.SettingError) when the configuration gave it, else at the block.
func partError(summary string, err error, s model.Settings, block model.Range) *model.Diagnostic {
	at := block
	var se *model.SettingError
	if errors.As(err, &se) && s[se.Setting].Range.Filename != "" {
		at = s[se.Setting].Range
	}
	return &model.Diagnostic{Severity: model.DiagError, Summary: summary, Detail: err.Error(), Subject: model.Subject(at)}
}

// Fingerprint is a digest of everything observed about the fleet. A saved plan records it,
// and apply refuses the plan when a fresh refresh gives another.
func Fingerprint(f *model.Fleet) string {
	sortFleet(f)
	return digest(f)
}

// sortFleet puts the fleet in the order Fingerprint digests it.
func sortFleet(f *model.Fleet) {
	slices.SortFunc(f.Nodes, func(a, b model.Node) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(f.Pods, func(a, b model.Pod) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	slices.SortFunc(f.PDBs, func(a, b model.PDB) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
}

// digest is Fingerprint of a sorted fleet; it only reads it. An OS updater's claim on a
// node (a FleetLock client's slot, kured's lock) is left out — a kured lock laid over a
// node's own claim gives that one back: it comes and goes with the OS's own updater,
// changes nothing the plan derives, and apply waits for it live (docs/decisions.md, "One
// budget with the OS's own updater").
func digest(f *model.Fleet) string {
	h := sha256.New()
	_ = encodeFleet(h, withoutUpdaters(f))
	return hex.EncodeToString(h.Sum(nil))
}

// withoutUpdaters is f with no OS updater's claims (f itself when it has none): each such
// claim is replaced by the node's own (model.Node.OwnClaim; none for a FleetLock slot,
// which is the node's own claim).
func withoutUpdaters(f *model.Fleet) *model.Fleet {
	i := slices.IndexFunc(f.Nodes, func(n model.Node) bool { return n.Claim.ByUpdater() })
	if i < 0 {
		return f
	}
	out := *f
	out.Nodes = slices.Clone(f.Nodes)
	for i := range out.Nodes {
		if n := &out.Nodes[i]; n.Claim.ByUpdater() {
			n.Claim, n.OwnClaim = n.OwnClaim, nil
		}
	}
	return &out
}

// apiRequests reads the provider's request counter (-1 when it has none).
func (w *Workspace) apiRequests() int64 {
	return w.provider().APIRequests()
}

// observe asks the provider for the fleet, without checking disks for drift.
func (w *Workspace) observe(ctx context.Context, nodesOnly bool) (*model.Fleet, error) {
	refresh := w.Provider.Refresh
	if nodesOnly {
		refresh = w.provider().RefreshNodes
	}
	fleet, err := refresh(ctx)
	if err != nil {
		return nil, fmt.Errorf("refreshing fleet: %w", err)
	}
	return fleet, nil
}

// refresh observes the fleet, with each node's drift from the config it runs: its disk
// (checked here when the provider checks disks on request; else as its agent reported it),
// then its kernel arguments and OS image as the provider reports them (model.HostDrift);
// with what a plan made from it acts on beside the fleet (Observed): the nodes' claims as
// seen and judged now, as the caller holds the lock, and the user_data Secrets as read.
func (w *Workspace) refresh(ctx context.Context, st *state.State, lock Locking) (*model.Fleet, *Observed, error) {
	fleet, err := w.refreshWith(ctx, st, false)
	if err != nil {
		return nil, nil, err
	}
	before := w.apiRequests()
	asked, err := w.observeConfigs(ctx, st, fleet)
	if err != nil {
		return nil, nil, err
	}
	obs := &Observed{Lock: lock, InFlight: inFlight(st, fleet), Nodes: fleet.Nodes, Observations: asked, ObserveRequests: -1}
	if before >= 0 {
		obs.ObserveRequests = w.apiRequests() - before
	}
	if obs.Pointers, obs.UserData, err = w.observeUserData(ctx, fleet); err != nil {
		return nil, nil, err
	}
	if w.provider().Has(providers.CapClaimer) {
		obs.Claims = noteClaims(fleet, newClaimJudge(w.Backend, st.Lineage, lock))
	}
	return fleet, obs, nil
}

// refreshWith is refresh without what only a plan acts on (status and drift act on
// none); nodesOnly observes only the nodes when the provider can (a drift run: it reads no
// pods, budgets or templates).
func (w *Workspace) refreshWith(ctx context.Context, st *state.State, nodesOnly bool) (*model.Fleet, error) {
	fleet, err := w.observe(ctx, nodesOnly)
	if err != nil {
		return nil, err
	}
	if err := w.diskDrift(ctx, st, fleet); err != nil {
		return nil, err
	}
	for i := range fleet.Nodes {
		n := &fleet.Nodes[i]
		if cur := w.knownConfig(st, n.CurrentConfig); cur != nil {
			n.Drift = append(n.Drift, model.HostDrift(n, cur)...)
			n.Outside = model.UnmanagedHostDrift(n, cur)
		}
	}
	w.explainDrift(ctx, st, fleet)
	return fleet, nil
}

// diskDrift asks a provider that checks disks on request for each node's drift.
func (w *Workspace) diskDrift(ctx context.Context, st *state.State, fleet *model.Fleet) error {
	dr := w.provider()
	if !dr.Has(providers.CapDriftReporter) {
		return nil
	}
	var g errgroup.Group
	g.SetLimit(8)
	for i := range fleet.Nodes {
		n := &fleet.Nodes[i]
		cur := w.knownConfig(st, n.CurrentConfig)
		if cur == nil {
			continue
		}
		g.Go(func() error {
			d, err := dr.Drift(ctx, n.Name, cur)
			if err != nil {
				return fmt.Errorf("checking node %s for drift: %w", n.Name, err)
			}
			n.Drift = d
			return nil
		})
	}
	return g.Wait()
}

// planAt plans against st and fleet, as observed in obs and with fingerprint fp
// (Fingerprint), limited to targets and without exclude, as at now: maintenance windows
// are shown as they stand then. A saved plan is derived again at the time it was made, so
// that only what it was made from can differ.
func (w *Workspace) planAt(st *state.State, fleet *model.Fleet, obs *Observed, fp string, targets, exclude []string, now time.Time) (*planfile.File, error) {
	nodeR, machineR, err := w.variants(fleet.Nodes)
	if err != nil {
		return nil, err
	}
	p, err := planner.MakePlan(planner.Input{
		Desired: w.Desired, Rendered: w.Rendered, NodeRendered: nodeR, MachineRendered: machineR, Known: st.Rendered,
		Pointers: st.Pointers, Machines: st.Machines, BootImages: st.BootImages, UserData: obs.pointerDigests(), Fleet: fleet, InFlight: obs.InFlight, Claims: obs.judgedClaims(), Now: now,
		StepTimes: st.StepTimes,
		Targets:   targets, Exclude: exclude, PausedSince: st.PausedSince,
		Rollback: w.rollbackPools(), RolledBack: st.RolledBack,
	})
	if err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(w.Dir)
	pf := &planfile.File{
		FormatVersion: planfile.FormatVersion, MCPVersion: Version,
		Created: now.UTC(), ConfigDir: abs, Cluster: w.Desired.Cluster,
		Lineage: st.Lineage, Serial: st.Serial, FleetFingerprint: fp, Rollout: p,
		Targets: targets, Exclude: exclude, Rollback: w.rollback,
	}
	if w.Config != nil && len(w.Config.Variables) > 0 {
		if pf.Variables, err = planfile.EncodeVariables(w.Config.Variables, w.Config.SensitiveVariables); err != nil {
			return nil, fmt.Errorf("recording the variables in the plan: %w", err)
		}
	}
	return pf, nil
}

// ReadState reads the state, giving it a lineage if it has none yet.
func (w *Workspace) ReadState(ctx context.Context) (*state.State, error) {
	return w.Backend.Read(ctx)
}

// Lock takes the state lock for operation, waiting up to timeout for another holder. The
// Locking returned says so to Plan and Apply (PlanOptions.Lock, ApplyOptions.Lock).
func (w *Workspace) Lock(ctx context.Context, operation string, timeout time.Duration) (state.Unlocker, Locking, error) {
	info := state.NewLockInfo(operation, Version)
	u, err := state.LockWait(ctx, w.Backend, info, timeout)
	if err != nil {
		return nil, Locking{NoLock: true}, err
	}
	return u, Locking{ID: info.ID}, nil
}

// variants are the variants of the pools' configs for chosen nodes: each node's that
// targeted configs apply to, and each machine block's (planner.Variants).
func (w *Workspace) variants(nodes []model.Node) (byNode, byMachine map[string]*model.Rendered, err error) {
	v := w.Variants
	if v == nil { // a Workspace built by hand
		v = planner.NewVariants(w.Desired, ignition.Renderer{})
	}
	if byNode, err = v.ForNodes(nodes); err != nil {
		return nil, nil, err
	}
	byMachine, err = v.ForMachines()
	return byNode, byMachine, err
}

// variantsFor are w.variants keyed for people ("node NAME", "machine NAME").
func (w *Workspace) variantsFor(nodes []model.Node) (map[string]*model.Rendered, error) {
	byNode, byMachine, err := w.variants(nodes)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*model.Rendered, len(byNode)+len(byMachine))
	for n, r := range byNode {
		out["node "+n] = r
	}
	for m, r := range byMachine {
		out["machine "+m] = r
	}
	return out, nil
}
