package record

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

// Refresh is a copy of the fleet: nodes sorted by name, the pods on them, the PDBs with
// their status, the machine templates sorted by ID.
func (p *Provider) Refresh(ctx context.Context) (*model.Fleet, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record("refresh", "", "")
	f := &model.Fleet{Pods: slices.Clone(p.pods), PDBs: p.pdbStatus(), Templates: slices.Clone(p.temps)}
	for _, name := range slices.Sorted(maps.Keys(p.nodes)) {
		f.Nodes = append(f.Nodes, copyNode(*p.nodes[name]))
	}
	slices.SortFunc(f.Templates, func(a, b model.MachineTemplate) int { return strings.Compare(a.ID(), b.ID()) })
	return f, nil
}

// ObserveNodes is the named nodes as they are now.
func (p *Provider) ObserveNodes(ctx context.Context, names []string) ([]model.Node, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record("observe-nodes", "", "%s", strings.Join(names, ", "))
	out := make([]model.Node, 0, len(names))
	for _, name := range names {
		n, err := p.node(name)
		if err != nil {
			return nil, err
		}
		out = append(out, copyNode(*n))
	}
	return out, nil
}

func (p *Provider) Cordon(ctx context.Context, node string) error {
	return p.change("cordon", node, func(n *model.Node) { n.Unschedulable = true })
}

// Uncordon also brings back the pods drains evicted from the node, as their controllers
// would once it is schedulable again.
func (p *Provider) Uncordon(ctx context.Context, node string) error {
	return p.change("uncordon", node, func(n *model.Node) {
		n.Unschedulable = false
		back := slices.DeleteFunc(slices.Clone(p.evicted), func(pod model.Pod) bool { return pod.Node != node })
		p.evicted = slices.DeleteFunc(p.evicted, func(pod model.Pod) bool { return pod.Node == node })
		p.pods = append(p.pods, back...)
	})
}

// Drain evicts the node's pods but the DaemonSets', each once every PDB selecting it
// allows a disruption; a refused eviction is tried again after opts.RetryDelay until
// opts.Timeout (default a minute).
func (p *Provider) Drain(ctx context.Context, node string, opts providers.DrainOptions) error {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	retry := max(opts.RetryDelay, 10*time.Millisecond)
	deadline := time.Now().Add(timeout)
	p.mu.Lock()
	p.record("drain", node, "timeout %s", timeout)
	_, err := p.node(node)
	p.mu.Unlock()
	if err != nil {
		return err
	}
	for {
		blocked, err := p.evictAllowed(node)
		if err != nil || blocked == "" {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("drain node %s: %s; gave up after %s", node, blocked, timeout)
		}
		if err := wait(ctx, retry); err != nil {
			return fmt.Errorf("drain node %s: %s (%w)", node, blocked, err)
		}
	}
}

// evictAllowed evicts the node's pods their PDBs allow, and says why the first one left
// could not go ("" when none is left).
func (p *Provider) evictAllowed(node string) (blocked string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pdbs := p.pdbStatus() // model.Evict counts each eviction in it
	for i := 0; i < len(p.pods); {
		pod := p.pods[i]
		if pod.Node != node || pod.DaemonSet {
			i++
			continue
		}
		if refused := model.Evict(&pod, pdbs); refused != "" {
			return refused, nil
		}
		p.record("evict", node, "%s/%s", pod.Namespace, pod.Name)
		p.evicted = append(p.evicted, pod)
		p.pods = slices.Delete(p.pods, i, i+1)
	}
	return "", nil
}

// pdbStatus is the PDBs with the status the disruption controller would give them now;
// p.mu is held.
func (p *Provider) pdbStatus() []model.PDB {
	out := slices.Clone(p.pdbs)
	for i := range out {
		b := &out[i]
		healthy := 0
		for j := range p.pods {
			if p.pods[j].Ready && b.Matches(&p.pods[j]) {
				healthy++
			}
		}
		b.SetHealthy(healthy)
	}
	return out
}
