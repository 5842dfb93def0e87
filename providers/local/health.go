package local

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec"
	"github.com/mcpfleet/mcp/providers"
)

var _ providers.HealthGater = (*Provider)(nil)

// DefaultAddress is a local node's address when its node.json gives none.
const DefaultAddress = "127.0.0.1"

// healthPoll is the pause between two looks at a node that is not healthy yet. A look
// costs no file read unless the node's directory changed (cache.go).
const healthPoll = 100 * time.Millisecond

// WaitHealthy waits until node.json says ready (and the machine is not down for a reboot)
// and every DaemonSet pod in pods.json is ready, looking through the provider's cache.
func (p *Provider) WaitHealthy(ctx context.Context, node string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		gate, out, err := p.unhealthy(node)
		if err != nil {
			return err
		}
		if gate == "" {
			return nil
		}
		wait := min(healthPoll, time.Until(deadline))
		if wait <= 0 {
			return &providers.GateError{Gate: gate, Output: fmt.Sprintf("%s after %s", out, timeout)}
		}
		if err := sleep(ctx, wait); err != nil {
			return &providers.GateError{Gate: gate, Output: fmt.Sprintf("%s when apply stopped waiting (%v)", out, err)}
		}
	}
}

// unhealthy names the first gate the node does not pass now ("" when it passes them all)
// and what it sees.
func (p *Provider) unhealthy(node string) (gate, out string, err error) {
	r, err := p.observeNode(node)
	if err != nil {
		return "", "", err
	}
	if !r.Ready || r.rebooting() {
		return providers.GateReady, fmt.Sprintf("node %s is not ready (%s)", node, relNodeFile(node, "node.json")), nil
	}
	var notReady []string
	err = p.cache.look(func() error {
		pods, err := p.cache.pods(node)
		for _, pod := range pods {
			if pod.DaemonSet && !pod.Ready {
				notReady = append(notReady, pod.Namespace+"/"+pod.Name)
			}
		}
		return err
	})
	if err != nil {
		return "", "", err
	}
	if len(notReady) > 0 {
		return providers.GateDaemonSets, fmt.Sprintf("DaemonSet pods on node %s not ready: %s (%s)",
			node, strings.Join(notReady, ", "), relNodeFile(node, "pods.json")), nil
	}
	return "", "", nil
}

// NodeAddress is node.json's address, else DefaultAddress.
func (p *Provider) NodeAddress(ctx context.Context, node string) (string, error) {
	r, err := p.readNode(node)
	if err != nil {
		return "", err
	}
	if r.Address != "" {
		return r.Address, nil
	}
	return DefaultAddress, nil
}

var _ providers.CommandChecker = (*Provider)(nil)

// PublishChecks keeps the pools' command checks: RunCheck runs only those, by name, as an
// agent on Kubernetes runs only what apply published in its Secret. A pool given none
// keeps none.
func (p *Provider) PublishChecks(_ context.Context, checks map[string][]model.HealthCheck) error {
	p.checksMu.Lock()
	defer p.checksMu.Unlock()
	if p.checks == nil {
		p.checks = map[string][]model.HealthCheck{}
	}
	for pool, cs := range checks {
		var cmds []model.HealthCheck
		for _, c := range cs {
			if len(c.Command) > 0 {
				c.Command = slices.Clone(c.Command)
				cmds = append(cmds, c)
			}
		}
		p.checks[pool] = cmds
	}
	return nil
}

// published is pool's command check of that name, as PublishChecks was given it.
func (p *Provider) published(pool, name string) (model.HealthCheck, bool) {
	p.checksMu.Lock()
	defer p.checksMu.Unlock()
	for _, c := range p.checks[pool] {
		if c.Name == name {
			return c, true
		}
	}
	return model.HealthCheck{}, false
}

// RunCheck runs the command of check on this machine, as the local fleet simulates nodes
// as directories: nodeexec.RunCheck with the node's root directory (absolute) as working
// directory and MCP_NODE_ROOT, and its name as MCP_NODE. The node must exist. The command
// run is the one published for the pool under check's name (PublishChecks); a name not
// published runs nothing and is answered with why.
func (p *Provider) RunCheck(ctx context.Context, node, pool string, check model.HealthCheck) (model.CheckResult, error) {
	if _, err := p.observeNode(node); err != nil {
		return model.CheckResult{}, err
	}
	c, ok := p.published(pool, check.Name)
	if !ok {
		return model.CheckResult{ExitCode: -1, Error: fmt.Sprintf("pool %q has no command check %q published: nothing run", pool, check.Name)}, nil
	}
	root, err := filepath.Abs(rootDir(p.o.Dir, node))
	if err != nil {
		return model.CheckResult{}, fmt.Errorf("node %s: %w", node, err)
	}
	return nodeexec.RunCheck(ctx, nodeexec.Check{Argv: c.Command, Timeout: c.Timeout, Node: node, Root: root}), nil
}
