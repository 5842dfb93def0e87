package nodeexec

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
)

// FirstBootPath is the first-boot record inside the root (content.FirstBootPath): the boot
// server's served config puts it there, through the node's Ignition.
const FirstBootPath = StateDir + "/firstboot.json"

// Fetch gives the rendered config of a name: from the boot server (SERVER/rendered/NAME)
// for an agent on a node, from the configs the state holds for the local provider.
type Fetch func(ctx context.Context, name string) (*model.Rendered, error)

// FirstBoot is the agent's first-boot path (docs/agent.md, "First boot"). A node whose
// root holds the first-boot record and that runs no config yet (current is "") was just
// booted by Ignition from its pool's served config: FirstBoot fetches the rendered config
// the record names, checks the disk against it (Ignition wrote it: any difference means
// the boot went wrong, and the node is Degraded rather than joined), and then:
//
//   - when the image the machine booted (Host.BootedImage) is not the config's OS image:
//     pivot, reboot (through the pending record, as every update's reboot: an agent stopped
//     around the reboot is resumed by Resume and does not reboot twice), verify, Done;
//   - when it is, or the config has no OS image: verify, Done — no pivot, no reboot.
//
// Done removes the record (finish). A record found on a node that runs a config is what
// an agent stopped between its Done and that removal left: it is removed. FirstBoot
// returns false when there was no first boot to do. Run Resume first: a first boot that
// rebooted is finished there.
func (a *Agent) FirstBoot(ctx context.Context, current string, fetch Fetch, done func(model.Step)) (bool, error) {
	rec, err := a.Exec.ReadFirstBoot()
	if err != nil {
		return true, a.Degrade(fmt.Errorf("first boot: %w", err))
	}
	if rec == nil {
		return false, nil
	}
	if current != "" {
		return false, a.removeFirstBoot()
	}
	target, err := fetch(ctx, rec.Rendered)
	if err == nil && target.Name != rec.Rendered {
		err = fmt.Errorf("asked for %s, got %s", rec.Rendered, target.Name)
	}
	if err != nil {
		return true, a.Degrade(fmt.Errorf("first boot: fetching rendered config %s, which the node was booted with: %w", rec.Rendered, err))
	}
	if target.OSImage != rec.OSImage {
		return true, a.Degrade(fmt.Errorf("first boot: the first-boot record says OS image %q, and rendered config %s has %q",
			rec.OSImage, target.Name, target.OSImage))
	}
	drift, err := a.Exec.Verify(target)
	if err != nil {
		return true, a.Degrade(fmt.Errorf("first boot: checking the disk against %s: %w", target.Name, err))
	}
	if len(drift) > 0 {
		parts := make([]string, len(drift))
		for i, d := range drift {
			parts[i] = d.String()
		}
		return true, a.Degrade(fmt.Errorf("first boot: the disk does not match %s, which the node's Ignition wrote from the served config: %s",
			target.Name, strings.Join(parts, "; ")))
	}
	steps := []model.Step{{Kind: model.StepVerify, Reason: "first boot: the disk against the config Ignition wrote"}}
	if target.OSImage != "" {
		booted, err := a.Exec.Host.BootedImage(ctx)
		if err != nil {
			return true, a.Degrade(fmt.Errorf("first boot: %w", err))
		}
		if booted != target.OSImage {
			why := fmt.Sprintf("first boot: booted %s, the pool runs %s", orNone(booted), target.OSImage)
			steps = []model.Step{{Kind: model.StepPivot, Reason: why}, {Kind: model.StepReboot, Reason: why}, steps[0]}
		}
	}
	return true, a.Update(ctx, nil, target, steps, done)
}

func orNone(image string) string {
	if image == "" {
		return "no container image"
	}
	return image
}

// ReadFirstBoot reads the root's first-boot record; nil when there is none.
func (e *Executor) ReadFirstBoot() (*content.FirstBoot, error) {
	r, err := os.OpenRoot(e.Root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := ReadRecord(r, FirstBootPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rec, err := content.ParseFirstBoot(b)
	if err != nil {
		return nil, err
	}
	return &rec, nil
}

// removeFirstBoot removes the first-boot record, if there is one: the node runs a config.
func (a *Agent) removeFirstBoot() error {
	if err := a.Exec.removeRecord(FirstBootPath); err != nil {
		return fmt.Errorf("removing the first-boot record: %w", err)
	}
	return nil
}
