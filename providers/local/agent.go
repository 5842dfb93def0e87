package local

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec"
)

// RunNodeSteps runs the node's agent in-process: the same nodeexec.Agent a real node
// runs, against the node's root directory, reporting in node.json, with a Host that
// records unit operations (there is no systemd here) and simulates kernel-argument
// changes, pivots and reboots. Faults set in node.json fail the steps they name.
func (p *Provider) RunNodeSteps(ctx context.Context, node string, from, target *model.Rendered, steps []model.Step, done func(model.Step)) error {
	// An agent starts after boot: a node still down for a reboot (one a killed apply
	// asked for) is waited for.
	if err := p.waitBoot(ctx, node, time.Now()); err != nil {
		first := "agent"
		if len(steps) > 0 {
			first = steps[0].String()
		}
		return fmt.Errorf("node %s: %s: the agent cannot start: %w", node, first, err)
	}
	a := p.agent(node)
	a.State = nodeState{p: p, node: node, staging: model.StageOnly(steps)}
	if err := a.Update(ctx, from, target, steps, done); err != nil {
		return fmt.Errorf("node %s: %w", node, err)
	}
	return nil
}

// agent is the node's agent: the same nodeexec.Agent a real node runs, against the node's
// root, reporting in node.json, through the simulated Host.
func (p *Provider) agent(node string) *nodeexec.Agent {
	return &nodeexec.Agent{
		Exec: &nodeexec.Executor{Root: rootDir(p.o.Dir, node), Host: &host{p: p, node: node},
			Inject: p.injectWrite(node), NoSync: true},
		State:      nodeState{p: p, node: node},
		RebootWait: time.Second,
	}
}

// nodeState reports the agent's state in node.json.
type nodeState struct {
	p    *Provider
	node string
	// staging: the hand-over is a stage alone (model.Node.Staging).
	staging bool
}

// Working is the hand-over's first write: it carries the apply's intent (Provider.act).
func (s nodeState) Working(desired string) error {
	return s.p.act(s.node, func(r *record) {
		r.DesiredConfig, r.State, r.Reason, r.Staging = desired, model.StateWorking, "", s.staging
	})
}

// Done records, with the config, what the machine runs at that moment (model.Node.RolledOut):
// a local machine always knows its kernel arguments, none being an empty list. The node is
// at rest on current, so desired is current too: an adoption, which reports no Working,
// would otherwise leave the desired config it had before (a node at rest on a foreign
// config), and the node would count as updating.
func (s nodeState) Done(current string) error {
	return s.p.update(s.node, func(r *record) {
		r.CurrentConfig, r.DesiredConfig, r.State, r.Reason, r.Staging = current, current, model.StateDone, "", false
		r.RolledOut = &model.HostRecord{KernelArgs: append([]string{}, r.KernelArgs...), OSImage: r.OSImage}
	})
}

func (s nodeState) Degraded(reason string) error {
	return s.p.update(s.node, func(r *record) { r.State, r.Reason = model.StateDegraded, reason })
}

func (s nodeState) BootID() (string, error) {
	r, err := s.p.observeNode(s.node)
	if err != nil {
		return "", err
	}
	return r.BootID, nil
}

// host is the local node's Host: unit operations are recorded in host.log, and enabling
// makes the unit's links in the node's root; kernel arguments and the OS image are staged
// in node.json by kargs and pivot steps and run from the next boot on (endReboot), as
// ostree stages a deployment; node.json's kernel_args and os_image are what runs now.
type host struct {
	p    *Provider
	node string
}

func (h *host) log(op string, args ...string) error {
	return appendLog(filepath.Join(nodeDir(h.p.o.Dir, h.node), "host.log"),
		map[string]any{"time": time.Now().UTC().Format(time.RFC3339Nano), "op": op, "args": args})
}

func (h *host) DaemonReload(context.Context) error           { return h.log("daemon-reload") }
func (h *host) ReloadUnit(_ context.Context, u string) error { return h.log("reload", u) }

// RestartUnit fails for a unit the node's fault.restart names.
func (h *host) RestartUnit(_ context.Context, u string) error {
	r, err := h.p.readNode(h.node)
	if err != nil {
		return err
	}
	if hits(r.Faults.Restart, u) {
		return injected(h.node, "restart")
	}
	return h.log("restart", u)
}

// EnableUnit makes or removes the unit's links in the node's root as systemctl would
// (nodeexec.LinkUnit: enablement is the links, which drift checks read) and records it.
func (h *host) EnableUnit(_ context.Context, u string, on bool) error {
	op := "disable"
	if on {
		op = "enable"
	}
	if err := nodeexec.LinkUnit(rootDir(h.p.o.Dir, h.node), u, on); err != nil {
		return err
	}
	return h.log(op, u)
}

// SetKernelArgs stages the arguments: the machine boots with them from its next boot on
// (endReboot), as rpm-ostree kargs changes the deployment booted next. A second call before
// the boot changes what is staged.
func (h *host) SetKernelArgs(_ context.Context, add, remove []string) error {
	if err := h.log("kargs", "+"+strings.Join(add, ","), "-"+strings.Join(remove, ",")); err != nil {
		return err
	}
	_, err := h.p.updateNode(h.node, func(n *record) ([]Event, error) {
		base := n.KernelArgs
		if n.StagedKernelArgs != nil {
			base = *n.StagedKernelArgs
		}
		out := nodeexec.WithArgs(base, add, remove)
		n.StagedKernelArgs = &out
		return nil, nil
	})
	return err
}

// Pivot stages image: the machine runs it from its next boot (endReboot), as rpm-ostree
// boots a staged deployment at the next reboot. The pivot is in the event log.
func (h *host) Pivot(_ context.Context, image string) error {
	if err := h.log("pivot", image); err != nil {
		return err
	}
	_, err := h.p.updateNode(h.node, func(r *record) ([]Event, error) {
		r.StagedOSImage = image
		return []Event{{Kind: EventPivot, OSImage: image, DesiredConfig: r.DesiredConfig}}, nil
	})
	return err
}

// Stage is logged only: a simulated node has nothing to pull, and what it boots next is
// what kargs and pivot stage (a stage changes nothing of it).
func (h *host) Stage(ctx context.Context, image string, add, remove []string) error {
	if err := h.log("stage", image, "+"+strings.Join(add, ","), "-"+strings.Join(remove, ",")); err != nil {
		return err
	}
	select { // the pull and the deployment, in service (stage_duration)
	case <-time.After(h.p.o.StageDuration):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Unstage discards what kargs and pivot staged: the next boot runs what this one runs.
func (h *host) Unstage(context.Context) error {
	if err := h.log("unstage"); err != nil {
		return err
	}
	return h.p.update(h.node, func(r *record) { r.StagedOSImage, r.StagedKernelArgs = "", nil })
}

// BootedImage is the OS image node.json reports the node runs (not one a pivot staged).
func (h *host) BootedImage(context.Context) (string, error) {
	r, err := h.p.observeNode(h.node)
	if err != nil {
		return "", err
	}
	return r.OSImage, nil
}

// KernelArgs are the arguments node.json reports the node runs (not those a kargs step
// staged); a local node always knows them, none being an empty list.
func (h *host) KernelArgs(context.Context) ([]string, error) {
	r, err := h.p.observeNode(h.node)
	if err != nil {
		return nil, err
	}
	if r.KernelArgs == nil {
		return []string{}, nil
	}
	return r.KernelArgs, nil
}

// Reboot simulates one: node.json records that the machine is down until now +
// RebootDuration and the boot id it comes back with, so that it comes back on time
// whether or not this process lives to see it; Reboot then waits for it, NodeTimeout at
// most. With fault.reboot=hang the machine never comes back by itself; with
// fault.reboot=rollback it comes back on what it ran before (endReboot).
func (h *host) Reboot(ctx context.Context) error {
	if err := h.log("reboot"); err != nil {
		return err
	}
	start := time.Now()
	_, err := h.p.updateNode(h.node, func(r *record) ([]Event, error) {
		e := Event{Kind: EventReboot, BootID: r.BootID, DesiredConfig: r.DesiredConfig, NextBootID: newBootID(),
			RolledBack: r.Faults.Reboot == rebootRollback}
		if r.Faults.Reboot != rebootHang {
			e.Until = time.Now().Add(h.p.o.RebootDuration)
		}
		r.Ready, r.NextBootID, r.RebootingUntil, r.RollingBack = false, e.NextBootID, e.Until, e.RolledBack
		return []Event{e}, nil
	})
	if err != nil {
		return err
	}
	return h.p.waitBoot(ctx, h.node, start)
}

// ReadNodeFile reads at most max bytes of the file at path in the node's root, confined to
// it (os.Root): a link out of the root is refused.
func (p *Provider) ReadNodeFile(_ context.Context, node, path string, max int64) ([]byte, error) {
	root, err := os.OpenRoot(rootDir(p.o.Dir, node))
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.Open(strings.TrimPrefix(path, "/"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, max))
}

// Drift runs the node executor's check of the node's root against current.
func (p *Provider) Drift(ctx context.Context, node string, current *model.Rendered) ([]model.Drift, error) {
	ex := &nodeexec.Executor{Root: rootDir(p.o.Dir, node)}
	return ex.Verify(current)
}

// ObserveConfig runs the node's own check against target (nodeexec.Executor.Observe: the
// verify step's CheckNode, on its root and through its host), bounded.
func (p *Provider) ObserveConfig(ctx context.Context, node string, target *model.Rendered) (model.Observation, error) {
	if _, err := p.observeNode(node); err != nil {
		return model.Observation{}, err
	}
	o, err := p.agent(node).Exec.Observe(ctx, target)
	if err != nil {
		return model.Observation{}, fmt.Errorf("node %s: %w", node, err)
	}
	return o, nil
}
