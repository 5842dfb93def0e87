package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/planner/model"
)

// PoolSize is a pool name and a node count for Init.
type PoolSize struct {
	Name  string
	Count int
}

// InitSpec describes a new fleet.
type InitSpec struct {
	Pools     []PoolSize // nodes <pool>-0 … <pool>-N-1
	Zones     []string   // assigned round-robin per pool; default ["a"]
	OSImage   string     // default DefaultOSImage
	Workloads bool       // a demo app with a PodDisruptionBudget on the first pool
}

// DefaultOSImage is the image new local nodes run.
const DefaultOSImage = "quay.io/fedora/fedora-coreos:stable"

// baseTime makes "oldest first" deterministic: node i of a pool was created i minutes after.
var baseTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ParsePoolSizes parses "worker=4,infra=2".
func ParsePoolSizes(s string) ([]PoolSize, error) {
	var out []PoolSize
	for _, part := range strings.Split(s, ",") {
		name, count, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(count)
		if !ok || name == "" || err != nil || n < 0 {
			return nil, fmt.Errorf("%q: want pool=count, as in worker=4,infra=2", part)
		}
		if slices.ContainsFunc(out, func(p PoolSize) bool { return p.Name == name }) {
			return nil, fmt.Errorf("pool %q given twice", name)
		}
		out = append(out, PoolSize{Name: name, Count: n})
	}
	return out, nil
}

// Init creates a fleet in dir, which must not exist or be empty.
func Init(dir string, spec InitSpec) error {
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return fmt.Errorf("fleet directory %s is not empty", dir)
	}
	if len(spec.Zones) == 0 {
		spec.Zones = []string{"a"}
	}
	if spec.OSImage == "" {
		spec.OSImage = DefaultOSImage
	}
	ff := fleetFile{FormatVersion: FormatVersion}
	i := 0
	for pi, pool := range spec.Pools {
		for k := 0; k < pool.Count; k++ {
			name := fmt.Sprintf("%s-%d", pool.Name, k)
			zone := spec.Zones[k%len(spec.Zones)]
			n := model.Node{Name: name, Zone: zone, Created: baseTime.Add(time.Duration(i) * time.Minute),
				Ready: true, OSImage: spec.OSImage, BootImage: spec.OSImage, BootID: newBootID(), State: model.StateDone,
				Labels: map[string]string{"node-role.kubernetes.io/" + pool.Name: "", "kubernetes.io/hostname": name,
					"topology.kubernetes.io/zone": zone}}
			i++
			if err := initNode(dir, &n); err != nil {
				return err
			}
			if spec.Workloads {
				pods := []podFile{{Namespace: "kube-system", Name: "node-agent-" + name, DaemonSet: true, Ready: true,
					Labels: map[string]string{"app": "node-agent"}}}
				if pi == 0 {
					pods = append(pods, podFile{Namespace: "demo", Name: "web-" + strconv.Itoa(k), Ready: true,
						Labels: map[string]string{"app": "web"}})
				}
				if err := writeJSON(podsFile(dir, name), pods); err != nil {
					return err
				}
			}
		}
	}
	if spec.Workloads && len(spec.Pools) > 0 && spec.Pools[0].Count > 0 {
		ff.PDBs = append(ff.PDBs, pdbSpec{Namespace: "demo", Name: "web-pdb",
			Selector: map[string]string{"app": "web"}, MinAvailable: spec.Pools[0].Count - 1})
	}
	return writeJSON(filepath.Join(dir, "fleet.json"), ff)
}

func initNode(dir string, n *model.Node) error {
	root := rootDir(dir, n.Name)
	for _, d := range []string{"etc", "var"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return err
		}
	}
	for name, body := range map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\ncore:x:1000:1000:CoreOS Admin:/var/home/core:/bin/bash\n",
		"etc/group":  "root:x:0:\ncore:x:1000:\n",
	} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return writeJSON(nodeFile(dir, n.Name), n)
}

// setters are the keys `mcp fleet set` takes.
var setters = map[string]func(n *model.Node, v string) error{
	"ready":         boolSetter(func(n *model.Node, b bool) { n.Ready = b }),
	"unschedulable": boolSetter(func(n *model.Node, b bool) { n.Unschedulable = b }),
	"zone": func(n *model.Node, v string) error {
		n.Zone = v
		n.Labels["topology.kubernetes.io/zone"] = v
		return nil
	},
	"current_config": func(n *model.Node, v string) error { n.CurrentConfig = v; return nil },
	"desired_config": func(n *model.Node, v string) error { n.DesiredConfig = v; return nil },
	"os_image":       func(n *model.Node, v string) error { n.OSImage = v; return nil },
	"boot_image":     func(n *model.Node, v string) error { n.BootImage = v; return nil },
	"state":          func(n *model.Node, v string) error { n.State = v; return nil },
	"reason":         func(n *model.Node, v string) error { n.Reason = v; return nil },
}

func boolSetter(f func(*model.Node, bool)) func(*model.Node, string) error {
	return func(n *model.Node, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("want true or false, not %q", v)
		}
		f(n, b)
		return nil
	}
}

// Set changes a node's observed state: key=value pairs (label.K=V sets a label, label.K-
// removes it).
func Set(dir, node string, assignments []string) error {
	n, err := readNode(dir, node)
	if err != nil {
		return err
	}
	var errs []error
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	for _, a := range assignments {
		k, v, ok := strings.Cut(a, "=")
		if label, isLabel := strings.CutPrefix(k, "label."); isLabel {
			if label, del := strings.CutSuffix(label, "-"); del && !ok {
				delete(n.Labels, label)
			} else {
				n.Labels[label] = v
			}
			continue
		}
		set, known := setters[k]
		if !known || !ok {
			errs = append(errs, fmt.Errorf("%q: want key=value with key one of %s, or label.K=V", a, keys()))
			continue
		}
		if err := set(n, v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("node %s not changed: %w", node, err)
	}
	return writeJSON(nodeFile(dir, node), n)
}

func keys() string {
	var ks []string
	for k := range setters {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return strings.Join(ks, ", ")
}
