// Package record is a provider that acts on nothing: its fleet lives in memory, and it
// records every call made to it, in order (Calls, and with Options.Log a file a line per
// call). Its nodes change as the calls say — a cordon marks one unschedulable, a drain
// evicts its pods while their PodDisruptionBudgets allow it, RunNodeSteps writes the
// target's files onto the node's in-memory disk and makes it run the target — so that the
// engine can plan and apply against it, and the conformance suite holds it to the same
// promises as the real providers.
//
// It is used only in tests. It is the proof that a provider is its package and one line in
// cmd/mcp: nothing in the engine names it (cmd/mcp's tests add Spec to the build's parts
// and run plan and apply on it), and the layering rules cover it as they cover every
// package under providers/. It runs no command checks: running a program is acting.
package record

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

// Options are the provider's fleet and behaviour.
type Options struct {
	// Fleet is the fleet to start from: its nodes, pods, PDBs (their MinAvailable: the
	// status is computed as the disruption controller would) and machine templates.
	Fleet model.Fleet
	// StepTime is how long each node step takes.
	StepTime time.Duration
	// Log, when set, is a file every call is appended to, a line each (Call.String).
	Log string
}

// Call is one call made to the provider: its method ("cordon", "run-node-steps", …), the
// node it named (if any) and what else it was given, for people.
type Call struct {
	Op, Node, Args string
}

func (c Call) String() string {
	return strings.Join(slices.DeleteFunc([]string{c.Op, c.Node, c.Args}, func(s string) bool { return s == "" }), " ")
}

// Provider is the in-memory fleet and the record of what it was asked.
type Provider struct {
	o Options

	mu       sync.Mutex
	nodes    map[string]*model.Node
	pods     []model.Pod
	evicted  []model.Pod // by drains, back on their node's uncordon
	pdbs     []model.PDB
	disks    map[string]map[string][]byte // by node, by path: what RunNodeSteps wrote
	temps    []model.MachineTemplate
	userData map[[3]string][]byte // namespace, name, key
	calls    []Call
}

var (
	_ providers.Provider        = (*Provider)(nil)
	_ providers.NodeObserver    = (*Provider)(nil)
	_ providers.DriftReporter   = (*Provider)(nil)
	_ providers.HealthGater     = (*Provider)(nil)
	_ providers.DegradedMarker  = (*Provider)(nil)
	_ providers.Claimer         = (*Provider)(nil)
	_ providers.WatchSharer     = (*Provider)(nil)
	_ providers.RequestCounter  = (*Provider)(nil)
	_ providers.TemplatePatcher = (*Provider)(nil)
	_ providers.UserDataStore   = (*Provider)(nil)
)

// New is a provider over a copy of o.Fleet.
func New(o Options) *Provider {
	p := &Provider{o: o, nodes: map[string]*model.Node{}, disks: map[string]map[string][]byte{},
		userData: map[[3]string][]byte{}}
	for _, n := range o.Fleet.Nodes {
		c := copyNode(n)
		p.nodes[n.Name] = &c
		p.disks[n.Name] = map[string][]byte{}
	}
	p.pods = slices.Clone(o.Fleet.Pods)
	p.pdbs = slices.Clone(o.Fleet.PDBs)
	p.temps = slices.Clone(o.Fleet.Templates)
	return p
}

// Calls are the calls made so far, in order.
func (p *Provider) Calls() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}

// record notes a call; p.mu is held. A log that cannot be written is reported on stderr:
// the record in memory is the provider's word.
func (p *Provider) record(op, node, format string, args ...any) {
	c := Call{Op: op, Node: node, Args: fmt.Sprintf(format, args...)}
	p.calls = append(p.calls, c)
	if p.o.Log == "" {
		return
	}
	f, err := os.OpenFile(p.o.Log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		_, err = f.WriteString(c.String() + "\n")
		err = cmp.Or(err, f.Close())
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "record provider: %v\n", err)
	}
}

// node is the named node, or an error naming it; p.mu is held.
func (p *Provider) node(name string) (*model.Node, error) {
	n := p.nodes[name]
	if n == nil {
		return nil, fmt.Errorf("no node %q in the record provider's fleet", name)
	}
	return n, nil
}

// change records op and applies f to the named node, under the lock.
func (p *Provider) change(op, name string, f func(n *model.Node)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record(op, name, "")
	n, err := p.node(name)
	if err != nil {
		return err
	}
	f(n)
	return nil
}

func copyNode(n model.Node) model.Node {
	n.Labels = maps.Clone(n.Labels)
	n.KernelArgs = slices.Clone(n.KernelArgs)
	n.Drift = slices.Clone(n.Drift)
	if n.Claim != nil {
		c := *n.Claim
		n.Claim = &c
	}
	if n.PendingReboot != nil {
		r := *n.PendingReboot
		n.PendingReboot = &r
	}
	return n
}

// wait sleeps d, or less when ctx ends (its error then).
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
