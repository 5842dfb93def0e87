package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/nodeexec"
	"github.com/mcpfleet/mcp/planner/model"
)

// RunNodeSteps is the node's agent, in-process: the same executor a real node runs, against
// the node's root directory, with a Host that records unit operations (there is no systemd
// here) and simulates kernel-argument changes, pivots and reboots in node.json.
func (p *Provider) RunNodeSteps(ctx context.Context, node string, from, target *model.Rendered, steps []model.Step, done func(model.Step)) error {
	if err := p.updateNode(node, func(n *model.Node) {
		n.DesiredConfig, n.State, n.Reason = target.Name, model.StateWorking, ""
	}); err != nil {
		return err
	}
	ex := &nodeexec.Executor{Root: rootDir(p.o.Dir, node), Host: &host{p: p, node: node}}
	for _, s := range steps {
		if !s.Kind.OnNode() {
			return p.degrade(node, fmt.Errorf("node %s: %s is not a node step", node, s))
		}
		if s.Kind == model.StepReboot {
			if err := p.reboot(ctx, node, target, ex); err != nil {
				return p.degrade(node, fmt.Errorf("node %s: %s: %w", node, s, err))
			}
		} else if err := ex.Run(ctx, from, target, s); err != nil {
			return p.degrade(node, fmt.Errorf("node %s: %s: %w", node, s, err))
		}
		done(s)
	}
	return p.updateNode(node, func(n *model.Node) {
		n.CurrentConfig, n.State, n.Reason = target.Name, model.StateDone, ""
	})
}

func (p *Provider) degrade(node string, err error) error {
	if uerr := p.updateNode(node, func(n *model.Node) { n.State, n.Reason = model.StateDegraded, err.Error() }); uerr != nil {
		return fmt.Errorf("%w (and recording Degraded failed: %v)", err, uerr)
	}
	return err
}

// reboot follows the reboot protocol: a pending record names the desired config and the
// boot id before; the "machine" goes down for RebootDuration and comes back with a new
// boot id; the agent that starts after boot sees the pending record and the new boot id,
// and clears the record.
func (p *Provider) reboot(ctx context.Context, node string, target *model.Rendered, ex *nodeexec.Executor) error {
	n, err := readNode(p.o.Dir, node)
	if err != nil {
		return err
	}
	pendingPath := filepath.Join(nodeDir(p.o.Dir, node), "pending.json")
	if err := writeJSON(pendingPath, pendingFile{DesiredConfig: target.Name, BootID: n.BootID, Since: time.Now().UTC()}); err != nil {
		return err
	}
	if err := ex.Host.Reboot(ctx); err != nil {
		return err
	}
	if err := p.updateNode(node, func(n *model.Node) { n.Ready = false }); err != nil {
		return err
	}
	if err := sleep(ctx, p.o.RebootDuration); err != nil {
		return err
	}
	if err := p.updateNode(node, func(n *model.Node) { n.Ready, n.BootID = true, newBootID() }); err != nil {
		return err
	}
	// After boot: the agent starts afresh and finds the pending record.
	var pending pendingFile
	if err := readJSON(pendingPath, &pending); err != nil {
		return fmt.Errorf("after reboot: %w", err)
	}
	if now, _ := readNode(p.o.Dir, node); now == nil || now.BootID == pending.BootID {
		return fmt.Errorf("after reboot: the boot id did not change: the node did not reboot")
	}
	return os.Remove(pendingPath)
}

// host is the local node's Host: unit operations are recorded in host.log; kernel
// arguments and the OS image are recorded in node.json as a real node would report them.
type host struct {
	p    *Provider
	node string
}

func (h *host) log(op string, args ...string) error {
	return appendLog(filepath.Join(nodeDir(h.p.o.Dir, h.node), "host.log"),
		map[string]any{"time": time.Now().UTC().Format(time.RFC3339Nano), "op": op, "args": args})
}

func (h *host) DaemonReload(context.Context) error            { return h.log("daemon-reload") }
func (h *host) ReloadUnit(_ context.Context, u string) error  { return h.log("reload", u) }
func (h *host) RestartUnit(_ context.Context, u string) error { return h.log("restart", u) }
func (h *host) Reboot(context.Context) error                  { return h.log("reboot") }
func (h *host) EnableUnit(_ context.Context, u string, on bool) error {
	if on {
		return h.log("enable", u)
	}
	return h.log("disable", u)
}

func (h *host) SetKernelArgs(_ context.Context, add, remove []string) error {
	if err := h.log("kargs", "+"+strings.Join(add, ","), "-"+strings.Join(remove, ",")); err != nil {
		return err
	}
	return h.p.updateNode(h.node, func(n *model.Node) {
		var out []string
		for _, a := range n.KernelArgs {
			if !contains(remove, a) {
				out = append(out, a)
			}
		}
		for _, a := range add {
			if !contains(out, a) {
				out = append(out, a)
			}
		}
		n.KernelArgs = out
	})
}

func (h *host) Pivot(_ context.Context, image string) error {
	if err := h.log("pivot", image); err != nil {
		return err
	}
	return h.p.updateNode(h.node, func(n *model.Node) { n.OSImage = image })
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
