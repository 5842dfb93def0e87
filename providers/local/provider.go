package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec"
	"github.com/mcpfleet/mcp/providers"
)

// Options configure the provider.
type Options struct {
	Dir            string
	DrainDuration  time.Duration // simulated time a drain takes
	RebootDuration time.Duration // simulated time a reboot takes
	StageDuration  time.Duration // simulated time a stage (the pull and deployment ahead of the slot) takes
	// NodeTimeout bounds waiting for a node to come back from a reboot (DefaultNodeTimeout
	// when zero).
	NodeTimeout time.Duration
}

// DefaultNodeTimeout is Options.NodeTimeout's default.
const DefaultNodeTimeout = 10 * time.Minute

// Provider is the local fleet.
type Provider struct {
	o Options
	// mu serialises pod and PDB changes, so that concurrent drains of several nodes
	// see each other's evictions.
	mu    sync.Mutex
	cache *cache

	checksMu sync.Mutex
	checks   map[string][]model.HealthCheck // the command checks PublishChecks gave, by pool

	intentMu sync.Mutex
	intents  map[string]model.Claim // the claims with an intent Intend keeps for a node's next action
}

var (
	_ providers.Provider       = (*Provider)(nil)
	_ providers.NodeObserver   = (*Provider)(nil)
	_ providers.DriftReporter  = (*Provider)(nil)
	_ providers.ConfigObserver = (*Provider)(nil)
	_ providers.DegradedMarker = (*Provider)(nil)
)

// New opens the fleet in o.Dir.
func New(o Options) (*Provider, error) {
	if _, err := readFleetFile(o.Dir); err != nil {
		return nil, err
	}
	if o.NodeTimeout <= 0 {
		o.NodeTimeout = DefaultNodeTimeout
	}
	return &Provider{o: o, cache: newCache(o.Dir)}, nil
}

// Spec declares the local provider: provider "local" { fleet, drain_duration,
// reboot_duration, stage_duration, node_timeout }.
var Spec = providers.Spec{
	BlockSpec: model.BlockSpec{Name: "local", Example: `fleet = "./fleet"`, Settings: []model.SettingSpec{
		{Name: "fleet", Kind: model.SettingPath, Required: true, Check: model.NonEmpty},
		{Name: "drain_duration", Kind: model.SettingDuration, Default: time.Duration(0)},
		{Name: "reboot_duration", Kind: model.SettingDuration, Default: time.Duration(0)},
		{Name: "stage_duration", Kind: model.SettingDuration, Default: time.Duration(0)},
		{Name: "node_timeout", Kind: model.SettingDuration, Default: DefaultNodeTimeout, Check: model.PositiveDuration},
	}},
	New: func(s model.Settings) (providers.Provider, error) {
		p, err := New(Options{Dir: s.Str("fleet"), DrainDuration: s.Duration("drain_duration"),
			RebootDuration: s.Duration("reboot_duration"), StageDuration: s.Duration("stage_duration"),
			NodeTimeout: s.Duration("node_timeout")})
		if err != nil {
			return nil, &model.SettingError{Setting: "fleet", Err: err}
		}
		return p, nil
	},
}

// FleetOf is the fleet directory of a configuration's provider block when it names the
// local provider (mcp fleet's commands work on it).
func FleetOf(c model.ProviderConfig) (dir string, ok bool) {
	if c.Type != Spec.Name || c.Settings.Str("fleet") == "" {
		return "", false
	}
	return c.Settings.Str("fleet"), true
}

// Refresh reads every node, its pods, and the PDBs, whose status it computes as the
// disruption controller would.
func (p *Provider) Refresh(ctx context.Context) (*model.Fleet, error) {
	ff, err := readFleetFile(p.o.Dir)
	if err != nil {
		return nil, err
	}
	names, err := nodeNames(p.o.Dir)
	if err != nil {
		return nil, err
	}
	nodes := make([]model.Node, len(names))
	pods := make([][]podFile, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	work := make(chan int)
	for w := 0; w < max(4, runtime.NumCPU()*2); w++ {
		wg.Go(func() {
			var r record // read into, node after node (nodes[i] copies its Node)
			var buf []byte
			in := interner{}
			for i := range work {
				var err error
				buf, err = readRecordInto(p.o.Dir, names[i], &r, buf)
				if err == nil && r.rebootOver(time.Now()) {
					var back *record
					if back, err = p.updateNode(names[i], nil); err == nil {
						r = *back
					}
				}
				if err == nil {
					nodes[i] = r.Node
					if nodes[i].KernelArgs == nil {
						// A local node always reports its kernel arguments: none is an
						// empty list, not an unknown (model.Node.KernelArgs).
						nodes[i].KernelArgs = []string{}
					}
					in.node(&nodes[i])
					err = p.pendingReboot(&nodes[i])
				}
				if err == nil {
					pods[i], err = readPods(p.o.Dir, names[i])
				}
				errs[i] = err
			}
		})
	}
	for i := range names {
		work <- i
	}
	close(work)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	f := &model.Fleet{Nodes: nodes}
	for i, ps := range pods {
		for _, pod := range ps {
			if pod.Evicted {
				continue
			}
			f.Pods = append(f.Pods, model.Pod{Namespace: pod.Namespace, Name: pod.Name, Node: names[i],
				Labels: pod.Labels, DaemonSet: pod.DaemonSet, Ready: pod.Ready && nodes[i].Ready})
		}
	}
	slices.SortFunc(f.Pods, func(a, b model.Pod) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	for _, s := range ff.PDBs {
		f.PDBs = append(f.PDBs, pdbStatus(s, f.Pods))
	}
	return f, nil
}

// pendingReboot reads, for a node whose agent reports it is working on an update or that
// it failed one, the reboot that agent recorded on the node (nodeexec.PendingPath): with
// the boot id, it shows whether a reboot of an unfinished update happened. A node Done has
// none, and its root is not read for it.
func (p *Provider) pendingReboot(n *model.Node) error {
	if n.State != model.StateWorking && n.State != model.StateDegraded {
		return nil
	}
	pr, err := (&nodeexec.Executor{Root: rootDir(p.o.Dir, n.Name)}).PendingReboot()
	if err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	n.PendingReboot = pr
	return nil
}

// pdbStatus computes a PDB's status from the pods: healthy = selected, ready, not evicted.
func pdbStatus(s pdbSpec, pods []model.Pod) model.PDB {
	b := model.PDB{Namespace: s.Namespace, Name: s.Name, Selector: s.Selector, MinAvailable: s.MinAvailable}
	healthy := 0
	for i := range pods {
		if b.Matches(&pods[i]) && pods[i].Ready {
			healthy++
		}
	}
	b.SetHealthy(healthy)
	return b
}

// ObserveNodes reads the named nodes as they are now (a reboot whose time has come is
// over), without pods or PodDisruptionBudgets; a name the fleet lacks is an error. It
// reads only the nodes whose files changed since the provider last read them (cache.go),
// so apply's look at a pool before each start costs no file reads for the nodes that did
// not change — and still sees a node another process changed.
func (p *Provider) ObserveNodes(ctx context.Context, names []string) ([]model.Node, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rs, err := p.observeNodes(names)
	if err != nil {
		return nil, err
	}
	out := make([]model.Node, len(rs))
	for i, r := range rs {
		out[i] = r.Node
	}
	return out, nil
}

// update changes a node through the one write path (updateNode).
func (p *Provider) update(node string, f func(r *record)) error {
	_, err := p.updateNode(node, func(r *record) ([]Event, error) { f(r); return nil, nil })
	return err
}

// act is update for an action of an apply — a cordon, an uncordon, its agent's first
// report on a hand-over — carrying the claim with the intent Intend kept for it in the
// same write of node.json.
func (p *Provider) act(node string, f func(r *record)) error {
	_, err := p.updateNode(node, func(r *record) ([]Event, error) {
		if err := p.carryIntent(node, r); err != nil {
			return nil, err
		}
		f(r)
		return nil, nil
	})
	return err
}

func (p *Provider) Cordon(ctx context.Context, node string) error {
	return p.act(node, func(r *record) { r.Unschedulable = true })
}

// Uncordon also brings the node's evicted pods back: they reschedule when it returns.
// The pods come back first, so that the uncordon event, logged once node.json is written,
// is never earlier than the pods' return.
func (p *Provider) Uncordon(ctx context.Context, node string) error {
	if err := p.unevict(node); err != nil {
		return err
	}
	return p.act(node, func(r *record) { r.Unschedulable = false })
}

func (p *Provider) unevict(node string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var pods []podFile
	err := p.cache.look(func() (err error) {
		pods, err = p.cache.pods(node)
		pods = slices.Clone(pods) // changed below
		return err
	})
	if err != nil || !slices.ContainsFunc(pods, func(p podFile) bool { return p.Evicted }) {
		return err
	}
	for i := range pods {
		pods[i].Evicted = false
	}
	return writeJSON(podsFile(p.o.Dir, node), pods)
}

func newBootID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// appendLog appends one JSON line to the node's host.log.
func appendLog(path string, v any) error {
	b, _ := json.Marshal(v)
	f, _, err := openRegular(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(append(b, '\n'))
	return err
}

// MarkDegraded records in node.json that the node is Degraded for reason (a health gate it
// did not pass): its next update clears it, as its agent's own report would.
func (p *Provider) MarkDegraded(ctx context.Context, node, reason string) error {
	return p.update(node, func(r *record) { r.State, r.Reason = model.StateDegraded, reason })
}
