package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/nodeexec"
)

// AddSpec is a machine for Add to make (mcp fleet add).
type AddSpec struct {
	Name string
	// Pool is the pool whose config the machine boots with.
	Pool string
	// Labels are the node's labels (the pool's node_selector); Add sets
	// kubernetes.io/hostname and topology.kubernetes.io/zone besides.
	Labels map[string]string
	Zone   string // default "a"
	// BootImage is the image the machine boots from. A local machine runs OS images
	// directly, so it runs this one (os_image) until a pivot.
	BootImage string
	// Ignition is the served config the machine's Ignition fetched (GET /config/POOL).
	Ignition []byte
}

// AddResult says what Add did.
type AddResult struct {
	// Continued: the node was there, with its first boot unfinished (an earlier Add was
	// killed during it), and Add finished that first boot.
	Continued bool
	// Node is the node as its first boot left it.
	Node model.Node
}

// Add makes a machine and boots it, as a real one is made and boots (docs/fleet-format.md,
// "Adding a node"): in a directory of its own beside nodes/, its root gets what its
// Ignition does with the served config (ignite: files, units, the first-boot record; the
// kernel arguments into node.json), node.json records the machine — NotReady, not yet
// joined, booted from BootImage — and events.jsonl its firstboot event; then the directory
// is renamed into nodes/ (refused if the name is taken), so a node is in the fleet whole or
// not at all. Then the node's agent starts, in-process as for apply: the agent's first-boot
// path (nodeexec.Agent.FirstBoot) moves it onto the config the record names, pivoting and
// rebooting when BootImage is not that config's OS image; and the node joins (Ready).
//
// A name the fleet has is an error, except for a node of Pool whose first boot did not
// finish: its agent starts again and finishes it (no second pivot or reboot once the
// reboot happened). fetch gives the rendered configs.
func (p *Provider) Add(ctx context.Context, spec AddSpec, fetch nodeexec.Fetch) (*AddResult, error) {
	if err := checkNodeName(spec.Name); err != nil {
		return nil, err
	}
	if spec.Zone != "" {
		if err := checkZone(spec.Zone); err != nil {
			return nil, err
		}
	}
	res := &AddResult{}
	if _, err := os.Lstat(nodeDir(p.o.Dir, spec.Name)); err == nil {
		if err := p.unfinished(spec); err != nil {
			return nil, err
		}
		res.Continued = true
	} else if err := p.makeNode(spec); err != nil {
		return nil, err
	}
	if err := p.firstBoot(ctx, spec.Name, fetch); err != nil {
		return res, err
	}
	r, err := p.observeNode(spec.Name)
	if err != nil {
		return res, err
	}
	res.Node = r.Node
	return res, nil
}

// unfinished accepts an existing node only when it is one of spec's pool whose first boot
// did not finish (its root still has the first-boot record and it runs no config).
func (p *Provider) unfinished(spec AddSpec) error {
	exists := fmt.Errorf("node %q exists in fleet %s", spec.Name, p.o.Dir)
	r, err := readRecord(p.o.Dir, spec.Name)
	if err != nil {
		return fmt.Errorf("%w: %w", exists, err)
	}
	rec, err := (&nodeexec.Executor{Root: rootDir(p.o.Dir, spec.Name)}).ReadFirstBoot()
	if err != nil || rec == nil || r.CurrentConfig != "" {
		return exists
	}
	if !strings.HasPrefix(rec.Rendered, "rendered-"+spec.Pool+"-") {
		return fmt.Errorf("%w, its first boot unfinished, with %s, not a config of pool %s", exists, rec.Rendered, spec.Pool)
	}
	return nil
}

// makeNode makes the machine in a directory of its own and renames it into nodes/.
func (p *Provider) makeNode(spec AddSpec) (err error) {
	// A killed Add leaves its directory: not a node (it is not in nodes/), removed here.
	if old, _ := filepath.Glob(filepath.Join(p.o.Dir, addDirPrefix(spec.Name)+"*")); len(old) > 0 {
		for _, d := range old {
			os.RemoveAll(d)
		}
	}
	tmp, err := os.MkdirTemp(p.o.Dir, addDirPrefix(spec.Name))
	if err != nil {
		return fmt.Errorf("adding node %s: %w", spec.Name, err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	root := filepath.Join(tmp, "root")
	if err := writeRoot(root); err != nil {
		return fmt.Errorf("adding node %s: %w", spec.Name, err)
	}
	kargs, err := ignite(root, spec.Ignition)
	if err != nil {
		return fmt.Errorf("node %s: Ignition's first boot: %w", spec.Name, err)
	}
	if err := presetAll(root); err != nil {
		return fmt.Errorf("node %s: systemd's first boot: %w", spec.Name, err)
	}
	rec, err := (&nodeexec.Executor{Root: root}).ReadFirstBoot()
	if err == nil && rec == nil {
		err = fmt.Errorf("the served config has no first-boot record (%s): it is not mcp serve's", content.FirstBootPath)
	}
	if err != nil {
		return fmt.Errorf("node %s: %w", spec.Name, err)
	}
	zone := spec.Zone
	if zone == "" {
		zone = "a"
	}
	labels := maps.Clone(spec.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels["kubernetes.io/hostname"], labels["topology.kubernetes.io/zone"] = spec.Name, zone
	now := time.Now()
	first := Event{Time: now, Node: spec.Name, Kind: EventFirstBoot, Seq: 1, OSImage: spec.BootImage, DesiredConfig: rec.Rendered}
	n := record{Node: model.Node{Name: spec.Name, Labels: labels, Zone: zone, Created: now.UTC(), Ready: false,
		OSImage: spec.BootImage, BootImage: spec.BootImage, KernelArgs: kargs, BootID: newBootID()},
		Events: []Event{first}}
	if err := writePlain(filepath.Join(tmp, "node.json"), &n); err != nil {
		return err
	}
	line, err := json.Marshal(first)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "events.jsonl"), append(line, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp's 0700; node directories are 0755
		return err
	}
	if err := renameNoReplace(tmp, nodeDir(p.o.Dir, spec.Name)); errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("node %q exists in fleet %s", spec.Name, p.o.Dir)
	} else if err != nil {
		return fmt.Errorf("adding node %s: %w", spec.Name, err)
	}
	return nil
}

// firstBoot starts the node's agent after boot: it finishes a first boot that rebooted
// (Resume), or runs the first-boot path; then the node joins (Ready).
func (p *Provider) firstBoot(ctx context.Context, node string, fetch nodeexec.Fetch) error {
	if err := p.waitBoot(ctx, node, time.Now()); err != nil {
		return fmt.Errorf("node %s: first boot: the agent cannot start: %w", node, err)
	}
	a := p.agent(node)
	nop := func(model.Step) {}
	resumed, err := a.Resume(ctx, nop)
	if err != nil {
		return fmt.Errorf("node %s: %w", node, err)
	}
	if !resumed {
		r, err := p.observeNode(node)
		if err != nil {
			return err
		}
		if _, err := a.FirstBoot(ctx, r.CurrentConfig, fetch, nop); err != nil {
			return fmt.Errorf("node %s: %w", node, err)
		}
	}
	return p.update(node, func(r *record) { r.Ready = true })
}
