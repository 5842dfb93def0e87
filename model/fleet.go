package model

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Fleet is what a provider observed: nodes, and the workloads that decide whether they may
// be drained.
type Fleet struct {
	Nodes []Node `json:"nodes"` // sorted by name
	Pods  []Pod  `json:"pods,omitempty"`
	PDBs  []PDB  `json:"pdbs,omitempty"`
	// Templates are the machine templates that create nodes (Kubernetes: MachineSets and
	// Cluster API infrastructure templates), sorted by ID; the local fleet has none.
	Templates []MachineTemplate `json:"templates,omitempty"`
	// UserData are the pools' user-data Secrets (user_data blocks), in pool order.
	UserData []UserDataObject `json:"user_data,omitempty"`
}

// Node is one observed node.
type Node struct {
	Name          string            `json:"name"`
	Labels        map[string]string `json:"labels,omitempty"`
	Zone          string            `json:"zone,omitempty"` // topology.kubernetes.io/zone
	Created       time.Time         `json:"created"`
	Ready         bool              `json:"ready"`
	Unschedulable bool              `json:"unschedulable,omitempty"` // cordoned
	// CurrentConfig is the rendered config the node runs; DesiredConfig the one it was told to
	// move to (equal when the node is settled).
	CurrentConfig string `json:"current_config,omitempty"`
	DesiredConfig string `json:"desired_config,omitempty"`
	// Staging: the node's latest hand-over is a stage alone (StageOnly), ahead of its
	// slot: whether its executor works on it or is done with it, the node runs
	// CurrentConfig and is in service; DesiredConfig names the config it stages for.
	Staging bool `json:"staging,omitempty"`
	// CurrentConfigFrom says where CurrentConfig was read when not from mcp's own record
	// (the MCO's currentConfig annotation on a node mcp never updated). For people reading
	// the plan only: nothing decides anything on it.
	CurrentConfigFrom string `json:"current_config_from,omitempty"`
	// OSImage and KernelArgs are what the node reports it runs; "" and nil mean it reports
	// nothing (an agent that has not reported yet), and then nothing is compared with them.
	OSImage    string   `json:"os_image,omitempty"`
	KernelArgs []string `json:"kernel_args,omitempty"`
	BootID     string   `json:"boot_id,omitempty"`
	BootImage  string   `json:"boot_image,omitempty"` // the image the node first booted from
	// State is the node executor's report: "Done", "Working" or "Degraded" (with Reason).
	State  string `json:"state,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Drift lists how the node differs from CurrentConfig: its disk (from the provider or
	// its agent) and its kernel arguments and OS image (HostDrift, added at refresh).
	Drift []Drift `json:"drift,omitempty"`
	// DriftUnlisted counts drifted paths the report does not list (the Kubernetes
	// annotation carries the first protocol.MaxDrift).
	DriftUnlisted int `json:"drift_unlisted,omitempty"`
	// RolledOut is what the node's host ran when its agent last finished an update (its
	// Done): the baseline of what CurrentConfig does not manage. nil: not recorded.
	RolledOut *HostRecord `json:"rolled_out,omitempty"`
	// Outside lists how the node differs from RolledOut in what CurrentConfig does not
	// manage (UnmanagedHostDrift, added at refresh): information for people and drift
	// runs; no plan acts on it.
	Outside []Drift `json:"outside,omitempty"`
	// PendingReboot is an update the node's agent rebooted into and has not finished, as
	// recorded on the node before the reboot (nil: none, or the provider does not say).
	// With BootID it tells whether that reboot happened (RebootedInto).
	PendingReboot *PendingReboot `json:"pending_reboot,omitempty"`
	// Hold is the value of the node's HoldKey annotation (Kubernetes; a local fleet's
	// node.json "hold"): the node is kept out of rollouts. A label of that key does the
	// same; HoldReason reads both.
	Hold string `json:"hold,omitempty"`
	// Claim is the apply that works on the node, or the last that did (Claim.Released);
	// nil when none ever did or the provider keeps no claims (providers.Claimer).
	Claim *Claim `json:"claim,omitempty"`
	// OwnClaim is the node's own claim (its record, or nil) where Claim is an OS updater's
	// lock read from elsewhere and laid over it (kured's: model.KuredPrefix); nil
	// otherwise. The fleet's fingerprint takes it in Claim's place: a lock that comes and
	// goes with kured changes nothing mcp planned.
	OwnClaim *Claim `json:"-"`
	// Observed is what the node carries against its pool's target, when its current
	// config is absent or unknown to the state (filled at refresh; nil otherwise, or when
	// the provider cannot observe nodes: providers.ConfigObserver). Not in the fleet's
	// fingerprint: asked again, a node may answer what it did not before (an agent slow
	// under load: a reason, then an answer) with the same steps; what an observation
	// changes in the plan, apply finds by deriving the plan again (its steps must be the same).
	Observed *Observation `json:"-"`
}

// PendingReboot is what a node's agent records before it reboots into an update.
type PendingReboot struct {
	Config string `json:"config"`  // the rendered config the node rebooted into
	BootID string `json:"boot_id"` // the boot it rebooted from
}

// RebootedInto reports whether the node shows that it rebooted into config for an update
// not finished yet: its agent's pending record names config and its boot id is no longer
// the one the record was made in. It returns the boot ids, for people.
func (n *Node) RebootedInto(config string) (before, now string, ok bool) {
	p := n.PendingReboot
	if p == nil || p.Config != config || n.BootID == "" || p.BootID == "" || p.BootID == n.BootID {
		return "", "", false
	}
	return p.BootID, n.BootID, true
}

// HoldKey is the annotation or label that keeps a node out of rollouts; its value says why.
const HoldKey = "mcpfleet.io/hold"

// HoldReason says why the node is on hold ("" when it is not): its HoldKey annotation,
// else its label. An empty value still holds: the key alone is the operator's word.
func (n *Node) HoldReason() (reason string, held bool) {
	if n.Hold != "" {
		return n.Hold, true
	}
	v, ok := n.Labels[HoldKey]
	return v, ok
}

// DriftKind says how a managed file or unit, or the node's kernel arguments or OS image,
// differ from its config.
type DriftKind string

const (
	DriftMissing DriftKind = "missing"
	DriftContent DriftKind = "content"
	DriftMode    DriftKind = "mode"
	DriftType    DriftKind = "type" // e.g. a symlink or directory where a file belongs
	DriftMask    DriftKind = "mask"
	// DriftEnabled: a unit's enablement links in /etc/systemd/system disagree with its
	// enabled (Path the unit's; Expected "enabled" or "disabled", Found what the links say).
	DriftEnabled DriftKind = "enabled"
	// DriftOwner: the file's uid:gid are not its user and group (resolved on the node).
	DriftOwner DriftKind = "owner"
	// DriftTarget: a managed link points elsewhere (a symbolic link's target, or a hard
	// link that is not its target's file).
	DriftTarget DriftKind = "target"
	// DriftUnlistedKind marks a path restored because the node reported more drift than
	// it listed: it may or may not have drifted.
	DriftUnlistedKind DriftKind = "unlisted"
	// DriftKernelArgs: kernel arguments of the config are missing from the node's (Path
	// DriftPathKernelArgs). Arguments the config does not manage are not drift.
	DriftKernelArgs DriftKind = "kernel-args"
	// DriftOSImage: the node runs another OS image than its config's (Path DriftPathOSImage).
	DriftOSImage DriftKind = "os-image"
	// DriftUnmanagedKernelArgs and DriftUnmanagedOSImage are Node.Outside's: kernel
	// arguments the config does not name were added or removed since the rollout, or the
	// node boots another image than at the rollout in a pool that sets no os_image.
	DriftUnmanagedKernelArgs DriftKind = "unmanaged-kernel-args"
	DriftUnmanagedOSImage    DriftKind = "unmanaged-os-image"
)

// The Path of drift that is not a file: the configuration attribute that differs.
const (
	DriftPathKernelArgs = "kernel_args"
	DriftPathOSImage    = "os_image"
)

// Drift is one difference between a node's disk and a rendered config.
type Drift struct {
	Path     string    `json:"path"`
	Kind     DriftKind `json:"kind"`
	Expected string    `json:"expected,omitempty"` // sha256 or mode
	Found    string    `json:"found,omitempty"`
	// Diff is how a drifted file's content differs on the node: a unified diff from the
	// config's content to the node's, or a summary of sizes and digests when either is
	// binary or large; "" when the node's content is not known (a provider whose agents
	// report digests only). Sensitive: the file is marked sensitive, and neither its
	// digests nor its content are shown. Both are set at refresh, for people only.
	Diff      string `json:"diff,omitempty"`
	Sensitive bool   `json:"sensitive,omitempty"`
}

func (d Drift) String() string {
	if d.Sensitive {
		return fmt.Sprintf("%s: %s (sensitive)", d.Path, d.Kind)
	}
	if d.Kind == DriftUnmanagedKernelArgs { // Found: added since the rollout; Expected: removed
		var s []string
		if d.Found != "" {
			s = append(s, "added since the rollout: "+d.Found)
		}
		if d.Expected != "" {
			s = append(s, "removed since the rollout: "+d.Expected)
		}
		return fmt.Sprintf("%s: %s (%s)", d.Path, d.Kind, strings.Join(s, "; "))
	}
	if d.Kind == DriftUnmanagedOSImage {
		return fmt.Sprintf("%s: %s (rolled out on %s, now boots %s)", d.Path, d.Kind, d.Expected, d.Found)
	}
	if d.Expected != "" || d.Found != "" {
		return fmt.Sprintf("%s: %s (expected %s, found %s)", d.Path, d.Kind, short(d.Expected), short(d.Found))
	}
	return fmt.Sprintf("%s: %s", d.Path, d.Kind)
}

// OnHost reports whether the drift is of the node's kernel arguments or OS image, not of
// a path on its disk.
func (d Drift) OnHost() bool { return d.Kind == DriftKernelArgs || d.Kind == DriftOSImage }

// short abbreviates a SHA-256 digest for people; other values (modes, images, kernel
// arguments) are shown whole, since a cut one could not be told apart.
func short(s string) string {
	if len(s) == 64 && strings.Trim(s, "0123456789abcdef") == "" {
		return s[:16]
	}
	if s == "" {
		return "(none)"
	}
	return s
}

// Pod is a workload pod bound to a node.
type Pod struct {
	Namespace string            `json:"namespace"`
	Name      string            `json:"name"`
	Node      string            `json:"node"`
	Labels    map[string]string `json:"labels,omitempty"`
	DaemonSet bool              `json:"daemonset,omitempty"` // ignored by drains
	Ready     bool              `json:"ready"`
}

// PDB is a PodDisruptionBudget with its observed status.
type PDB struct {
	Namespace string            `json:"namespace"`
	Name      string            `json:"name"`
	Selector  map[string]string `json:"selector"` // matchLabels
	// MatchExpressions are the selector's other requirements (all must hold).
	MatchExpressions []SelectorRequirement `json:"match_expressions,omitempty"`
	// SelectsAll is a present but empty selector: in policy/v1 it selects every pod of the
	// namespace (a PDB with no selector at all selects none).
	SelectsAll         bool `json:"selects_all,omitempty"`
	MinAvailable       int  `json:"min_available"`
	CurrentHealthy     int  `json:"current_healthy"`
	DesiredHealthy     int  `json:"desired_healthy"`
	DisruptionsAllowed int  `json:"disruptions_allowed"`
}

// SelectorRequirement is one of a label selector's matchExpressions.
type SelectorRequirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"` // In, NotIn, Exists, DoesNotExist
	Values   []string `json:"values,omitempty"`
}

// Matches reports whether labels satisfy the requirement, as Kubernetes' label selectors
// do (an unknown operator matches nothing).
func (r SelectorRequirement) Matches(labels map[string]string) bool {
	v, has := labels[r.Key]
	switch r.Operator {
	case "In":
		return has && slices.Contains(r.Values, v)
	case "NotIn":
		return !has || !slices.Contains(r.Values, v)
	case "Exists":
		return has
	case "DoesNotExist":
		return !has
	}
	return false
}

// Matches reports whether the PDB selects the pod.
func (p *PDB) Matches(pod *Pod) bool {
	if pod.Namespace != p.Namespace {
		return false
	}
	if len(p.Selector) == 0 && len(p.MatchExpressions) == 0 {
		return p.SelectsAll
	}
	for k, v := range p.Selector {
		if pod.Labels[k] != v {
			return false
		}
	}
	for _, r := range p.MatchExpressions {
		if !r.Matches(pod.Labels) {
			return false
		}
	}
	return true
}

// Node states reported by the node executor.
const (
	StateDone     = "Done"
	StateWorking  = "Working"
	StateDegraded = "Degraded"
)

// The special files a type drift may find (Drift.Found): what the executor never writes
// over, since a failed update could not put them back.
const (
	SpecialPipe   = "named pipe"
	SpecialSocket = "socket"
	SpecialDevice = "device"
)

// Special reports whether d found a named pipe, socket or device where the config has a
// file, directory or link: apply refuses to replace it (the node goes Degraded, nothing
// changed), so a plan says so before.
func (d Drift) Special() bool {
	return d.Kind == DriftType && (d.Found == SpecialPipe || d.Found == SpecialSocket || d.Found == SpecialDevice)
}

// Updating reports whether the node's executor works on an update or was handed one it
// has not finished: it is out of service for it (planner.Condition). A stage alone
// (Staging) is not such an update.
func (n *Node) Updating() bool {
	return !n.Staging && (n.State == StateWorking || n.DesiredConfig != "" && n.DesiredConfig != n.CurrentConfig)
}
