package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/internal/boundedfile"
	"github.com/mcpfleet/mcp/model"
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

// Init creates a fleet in dir, which must not exist or be empty. The node files are
// written plainly and made durable together, by one sync of the filesystem, before
// fleet.json — what makes the directory a fleet — is written (atomically): a fleet is
// complete or is not one, without two fsyncs per node.
func Init(dir string, spec InitSpec) error {
	if ents, err := boundedfile.ReadDir(dir); err == nil && len(ents) > 0 {
		return fmt.Errorf("fleet directory %s is not empty", dir)
	}
	if len(spec.Zones) == 0 {
		spec.Zones = []string{"a"}
	}
	if err := checkInitNames(spec); err != nil {
		return err
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
			if err := writeNode(dir, &n); err != nil {
				return err
			}
			if spec.Workloads {
				pods := []podFile{{Namespace: "kube-system", Name: "node-agent-" + name, DaemonSet: true, Ready: true,
					Labels: map[string]string{"app": "node-agent"}}}
				if pi == 0 {
					pods = append(pods, podFile{Namespace: "demo", Name: "web-" + strconv.Itoa(k), Ready: true,
						Labels: map[string]string{"app": "web"}})
				}
				if err := writePlain(podsFile(dir, name), pods); err != nil {
					return err
				}
			}
		}
	}
	if spec.Workloads && len(spec.Pools) > 0 && spec.Pools[0].Count > 0 {
		ff.PDBs = append(ff.PDBs, pdbSpec{Namespace: "demo", Name: "web-pdb",
			Selector: map[string]string{"app": "web"}, MinAvailable: spec.Pools[0].Count - 1})
	}
	if err := syncFS(dir); err != nil {
		return fmt.Errorf("making fleet %s durable: %w", dir, err)
	}
	return writeJSON(filepath.Join(dir, "fleet.json"), ff)
}

// checkInitNames refuses pool names and zones a fleet cannot hold before anything is
// written. A pool name that is a DNS-1123 label makes node names (<pool>-<i>) that are
// DNS-1123 subdomains.
func checkInitNames(spec InitSpec) error {
	var errs []error
	for _, p := range spec.Pools {
		errs = append(errs, checkPoolName(p.Name))
	}
	for _, z := range spec.Zones {
		errs = append(errs, checkZone(z))
	}
	return errors.Join(errs...)
}

// writeNode writes a new node's directory, root and node.json, without syncing them.
func writeNode(dir string, n *model.Node) error {
	if err := writeRoot(rootDir(dir, n.Name)); err != nil {
		return err
	}
	return writePlain(nodeFile(dir, n.Name), n)
}

// writeRoot writes a new machine's root as a Fedora CoreOS or RHCOS image brings it: etc
// and var, the image's users and groups, /usr/local and /opt as the OS's links into /var
// (relative, as rpm-ostree makes them), so that files configs put there land where they
// do on such a node, and the OS's units (vendorunits.go).
func writeRoot(root string) error {
	for _, d := range []string{"etc", "var/usrlocal", "var/opt", "usr"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return err
		}
	}
	for link, target := range coreosLinks {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
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
	return writeVendorUnits(root)
}

// coreosLinks are the links a new node's root has, as on Fedora CoreOS and RHCOS.
var coreosLinks = map[string]string{"usr/local": "../var/usrlocal", "opt": "var/opt"}

// writePlain writes v as JSON, as writeJSON does, but in place and without a sync: for a
// fleet being made, which nobody reads yet.
func writePlain(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// setters are the keys `mcp fleet set` takes, besides label.K and fault.K.
var setters = map[string]func(r *record, v string) error{
	"ready": boolSetter(func(r *record, b bool) {
		if b && r.rebooting() {
			r.endReboot() // a power cycle: a hung reboot is over
		}
		r.Ready = b
	}),
	"unschedulable": boolSetter(func(r *record, b bool) { r.Unschedulable = b }),
	// hold is the mcpfleet.io/hold annotation a cluster would carry: its value is the reason,
	// free text, and hold= lifts it. true and false are refused: the annotation holds the
	// node with any value, "false" too, so hold=false would hold it for the reason "false".
	"hold": func(r *record, v string) error {
		if _, err := strconv.ParseBool(v); err == nil {
			return fmt.Errorf("%q is not a reason: hold takes the reason the node is held for (hold=\"kernel bug 4711\"), and hold= lifts the hold", v)
		}
		r.Hold = v
		return nil
	},
	"zone": func(r *record, v string) error {
		if err := checkZone(v); err != nil {
			return err
		}
		r.Zone = v
		r.Labels["topology.kubernetes.io/zone"] = v
		return nil
	},
	"current_config": func(r *record, v string) error { r.CurrentConfig = v; return nil },
	"desired_config": func(r *record, v string) error { r.DesiredConfig = v; return nil },
	"os_image":       func(r *record, v string) error { r.OSImage = v; return nil },
	// kernel_args is the node's whole list, comma-separated (kernel_args= clears it).
	"kernel_args": func(r *record, v string) error {
		r.KernelArgs = nil
		if v != "" {
			r.KernelArgs = strings.Split(v, ",")
		}
		return nil
	},
	"boot_image": func(r *record, v string) error { r.BootImage = v; return nil },
	"state":      func(r *record, v string) error { r.State = v; return nil },
	"reason":     func(r *record, v string) error { r.Reason = v; return nil },
}

func boolSetter(f func(*record, bool)) func(*record, string) error {
	return func(r *record, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("want true or false, not %q", v)
		}
		f(r, b)
		return nil
	}
}

// Set changes a node's observed state: key=value pairs (label.K=V sets a label, label.K-
// removes it; fault.K=V injects a fault, fault.K- removes it). Every pair is checked
// before anything is written; the change goes through the one write path, so it is in the
// node's event log like any other.
func Set(dir, node string, assignments []string) error {
	_, err := updateNode(dir, node, func(r *record) ([]Event, error) {
		if err := assignAll(r, assignments); err != nil {
			return nil, fmt.Errorf("node %s not changed: %w", node, err)
		}
		return nil, nil
	})
	return err
}

// CheckSet checks assignments as Set does, writing nothing.
func CheckSet(assignments []string) error { return assignAll(&record{}, assignments) }

// assignAll makes every assignment on r, and returns the problems of all that fail.
func assignAll(r *record, assignments []string) error {
	if r.Labels == nil {
		r.Labels = map[string]string{}
	}
	var errs []error
	for _, a := range assignments {
		if err := assign(r, a); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func assign(r *record, a string) error {
	k, v, ok := strings.Cut(a, "=")
	if label, isLabel := strings.CutPrefix(k, "label."); isLabel {
		if name, del := strings.CutSuffix(label, "-"); del && !ok {
			delete(r.Labels, name)
		} else {
			r.Labels[label] = v
		}
		return nil
	}
	if kind, isFault := strings.CutPrefix(k, "fault."); isFault {
		if name, del := strings.CutSuffix(kind, "-"); del && !ok {
			return setFault(&r.Faults, name, "", true)
		}
		if !ok {
			return fmt.Errorf("%q: want fault.K=V or fault.K-", a)
		}
		return setFault(&r.Faults, kind, v, false)
	}
	set, known := setters[k]
	if !known || !ok {
		return fmt.Errorf("%q: want key=value with key one of %s, label.K=V or fault.K=V", a, keys())
	}
	if err := set(r, v); err != nil {
		return fmt.Errorf("%s: %w", k, err)
	}
	return nil
}

func keys() string { return strings.Join(SetKeys(), ", ") }

// SetKeys are the keys Set takes, besides label.K and fault.K, sorted.
func SetKeys() []string {
	var ks []string
	for k := range setters {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
