package record

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/mcpfleet/mcp/model"
)

// RunNodeSteps carries out steps on the node in memory, Options.StepTime each: a write
// puts the target's file on the node's disk (or takes away one the target no longer has),
// kargs and pivot set what the node reports it runs, a reboot gives it a new boot id. Then
// the node runs target, Done.
func (p *Provider) RunNodeSteps(ctx context.Context, node string, from, target *model.Rendered, steps []model.Step, done func(model.Step)) error {
	p.mu.Lock()
	names := make([]string, len(steps))
	for i, s := range steps {
		names[i] = s.String()
	}
	p.record("run-node-steps", node, "%s: %s", target.Name, strings.Join(names, ", "))
	n, err := p.node(node)
	if err == nil {
		n.DesiredConfig, n.State, n.Reason, n.Staging = target.Name, model.StateWorking, "", model.StageOnly(steps)
	}
	p.mu.Unlock()
	if err != nil {
		return err
	}
	for _, s := range steps {
		if !s.Kind.OnNode() {
			return fmt.Errorf("node %s: %s is not a node step", node, s)
		}
		if err := wait(ctx, p.o.StepTime); err != nil {
			return fmt.Errorf("node %s: %s: %w", node, s, err)
		}
		p.mu.Lock()
		p.step(p.nodes[node], s, target)
		p.mu.Unlock()
		done(s)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if model.StageOnly(steps) && from != nil {
		// A stage changes nothing the node runs: it stays on from.
		n.DesiredConfig, n.State = from.Name, model.StateDone
		return nil
	}
	n.CurrentConfig, n.State = target.Name, model.StateDone
	return nil
}

// step carries out one step on n; p.mu is held.
func (p *Provider) step(n *model.Node, s model.Step, target *model.Rendered) {
	disk := p.disks[n.Name]
	switch s.Kind {
	case model.StepWrite:
		if f := target.File(s.Target); f != nil {
			disk[s.Target] = f.Contents
		} else if u := target.Unit(s.Target); u != nil {
			disk[s.Target] = []byte(u.Contents)
		} else {
			delete(disk, s.Target)
		}
	case model.StepKargs:
		n.KernelArgs = append([]string{}, target.KernelArgs...)
	case model.StepPivot:
		n.OSImage = target.OSImage
	case model.StepReboot:
		n.BootID = fmt.Sprintf("%s-boot-%d", n.Name, len(p.calls))
	}
}

// Drift compares the node's disk with current's files and units: each one missing, or
// with other contents.
func (p *Provider) Drift(ctx context.Context, node string, current *model.Rendered) ([]model.Drift, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record("drift", node, "%s", current.Name)
	if _, err := p.node(node); err != nil {
		return nil, err
	}
	disk := p.disks[node]
	var out []model.Drift
	check := func(path string, want []byte) {
		got, ok := disk[path]
		switch {
		case !ok:
			out = append(out, model.Drift{Path: path, Kind: model.DriftMissing})
		case !bytes.Equal(got, want):
			out = append(out, model.Drift{Path: path, Kind: model.DriftContent})
		}
	}
	for _, f := range current.Files {
		check(f.Path, f.Contents)
	}
	for _, u := range current.Units {
		check(u.Name, []byte(u.Contents))
	}
	return out, nil
}
