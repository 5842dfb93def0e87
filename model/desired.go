package model

import (
	"fmt"
	"slices"
	"time"
)

// Desired is everything the configuration files declare.
type Desired struct {
	Provider ProviderConfig
	State    StateConfig
	// IgnitionVersion is the Ignition spec the rendered configs are written in ("3.4.0").
	IgnitionVersion string
	Pools           []Pool   // sorted by name
	Configs         []Config // sorted by name (the merge order)
	// BootImages are the boot_image blocks, sorted by name.
	BootImages []BootImageDef
	// Machines are the machine blocks, sorted by name: machines the boot server tells
	// apart at first boot (MAC, UUID, hostname) and gives their own config.
	Machines []Machine
	// Dir is the directory the configuration was loaded from; relative paths in
	// provider and state blocks are relative to it.
	Dir string
	// Cluster is the cluster block the configuration was loaded for ("": a configuration
	// of one cluster, without cluster blocks).
	Cluster string
	// Reach are the variables each file, directory and link (by path) and unit (by name)
	// of the configs uses in its own attributes, sorted: a plan across clusters names with
	// them the cluster values that made an item differ. Display only.
	Reach map[string][]string
}

// Pool returns the pool named name, or nil.
func (d *Desired) Pool(name string) *Pool {
	for i := range d.Pools {
		if d.Pools[i].Name == name {
			return &d.Pools[i]
		}
	}
	return nil
}

// ProviderConfig is the provider block: its type label and its settings, read against the
// spec of the provider it names.
type ProviderConfig struct {
	Type      string
	Settings  Settings // paths already resolved against Desired.Dir
	DeclRange Range
}

// StateConfig is the state block: the backend it names and that backend's settings. Without
// a state block (or a backend attribute) it names the build's first backend, with its
// defaults.
type StateConfig struct {
	Backend   string
	Settings  Settings // paths already resolved against Desired.Dir
	DeclRange Range    // the zero Range without a state block
}

// Pool is a named group of nodes that share one rendered config.
type Pool struct {
	Name           string
	NodeSelector   map[string]string
	MaxUnavailable IntOrPercent
	// Paused is what the pool's pause holds ("": nothing).
	Paused Pause
	// Order is the order its nodes roll out in.
	Order      Order
	OSImage    string
	KernelArgs []string
	BootImage  BootImage
	// DrainTimeout bounds each drain of the pool's nodes; zero: apply's -drain-timeout.
	DrainTimeout time.Duration
	// HealthChecks are the pool's health_check blocks, in the order declared.
	HealthChecks []HealthCheck
	// AlertGate is the pool's alert_gate block; nil: none.
	AlertGate *AlertGate
	// OnDrift is what a plan does with a node that drifted from the config it runs.
	OnDrift OnDrift
	// OnFailure is what apply does when a node of the pool fails (a step, a health gate,
	// a canary) or an alert fires after one: stop (the default), or revert the nodes it
	// updated.
	OnFailure OnFailure
	// KernelArgsRange is the pool's kernel_args attribute.
	KernelArgsRange Range
	DeclRange       Range
	// Pacing: how apply paces the pool's rollout (canary, max_failures, soak).
	Pacing Pacing
	// Windows are the pool's maintenance windows: apply starts the pool's nodes only while
	// one is open. None: always open.
	Windows []Window
}

// Pause is a pool's paused setting: which changes apply holds back.
type Pause string

const (
	// PauseOff (paused = false, or none): nothing is held.
	PauseOff Pause = ""
	// PauseAll (paused = true): every change waits, and the boot pointer stays.
	PauseAll Pause = "all"
	// PauseDisruptive (paused = "disruptive"): a node whose steps drain or reboot it waits;
	// one whose steps do neither (on_change none, reload, restart, daemon-reload) updates.
	PauseDisruptive Pause = "disruptive"
)

// On reports whether the pool is paused at all.
func (p Pause) On() bool { return p != PauseOff }

// Holds reports whether the pause holds a node whose steps are disruptive as said.
func (p Pause) Holds(disruptive bool) bool {
	return p == PauseAll || p == PauseDisruptive && disruptive
}

// Order is the order a pool's changing nodes roll out in (and its canaries are taken from):
// By, then Nodes first when given.
type Order struct {
	// By is OrderOldest (the default: zone, then oldest, then name, the MCO's order) or
	// OrderNewest (zone, then newest, then name).
	By OrderBy
	// Nodes, when the order is a list: these nodes first, in this order; the pool's other
	// nodes after them in the default order.
	Nodes []string
	// NodeRanges are where each of Nodes is written.
	NodeRanges []Range
}

// OrderBy is how an Order sorts the nodes it does not list.
type OrderBy string

const (
	OrderOldest OrderBy = "oldest"
	OrderNewest OrderBy = "newest"
	// OrderList is how a plan names an order that lists nodes first (Order.Nodes).
	OrderList OrderBy = "list"
)

// Pacing is how apply paces a pool's rollout, beyond max_unavailable.
type Pacing struct {
	// Canary nodes (the first in the rollout order) are updated alone; then apply waits
	// CanarySoak before it starts the others. 0: no canary.
	Canary     int
	CanarySoak time.Duration
	// MaxFailures is how many failed nodes stop new starts in the pool (default 1).
	MaxFailures int
	// Soak keeps a finished node's budget slot taken this long before it frees.
	Soak time.Duration
	// MaxStaging bounds how many of the pool's nodes stage an update ahead of their slots
	// at once, outside max_unavailable (0: each stages in its own slot). Nil: as many as
	// max_unavailable lets update at once.
	MaxStaging *int
}

// Window is one maintenance window: it opens on each of Days at Start (wall-clock time in
// Location) and stays open for Duration (elapsed time).
type Window struct {
	Days     []time.Weekday // Monday first, no duplicates; never empty
	Start    time.Duration  // since local midnight: 2h30m for "02:30"
	Duration time.Duration
	// Location is the time zone, as loaded by the configuration (time.LoadLocation);
	// Zone is its name as written.
	Location  *time.Location
	Zone      string
	DeclRange Range
}

// OnDrift is a pool's on_drift: whether plans restore drift or only report it.
type OnDrift string

const (
	// OnDriftRestore (the default, also "") plans the steps that put drift back, with each
	// file's own on_change policy.
	OnDriftRestore OnDrift = "restore"
	// OnDriftReport shows drift in plans and drift runs but plans nothing for it.
	OnDriftReport OnDrift = "report"
)

// Reports reports whether drift is only reported, not restored.
func (o OnDrift) Reports() bool { return o == OnDriftReport }

// OnFailure is a pool's on_failure: what apply does once a failure stops the pool's
// rollout.
type OnFailure string

const (
	// OnFailureStop (the default, also "") stops starting the pool's nodes; the nodes
	// updated stay on the new config.
	OnFailureStop OnFailure = "stop"
	// OnFailureRevert stops, then puts the nodes this apply changed in the pool back on the
	// config they ran before, within the pool's max_unavailable.
	OnFailureRevert OnFailure = "revert"
)

// Reverts reports whether a failure reverts the pool's updated nodes.
func (o OnFailure) Reverts() bool { return o == OnFailureRevert }

// IntOrPercent is max_unavailable: an absolute count or a percentage of the pool.
type IntOrPercent struct {
	Value   int
	Percent bool
}

// Resolve returns the number of nodes for a pool of size n: percentages round down,
// and the result is at least 1 (the MCO's rule).
func (v IntOrPercent) Resolve(n int) int {
	r := v.Value
	if v.Percent {
		r = n * v.Value / 100
	}
	if r < 1 {
		r = 1
	}
	return r
}

func (v IntOrPercent) String() string {
	if v.Percent {
		return fmt.Sprintf("%d%%", v.Value)
	}
	return fmt.Sprint(v.Value)
}

// Config is one config block: files, units, kernel arguments and an OS image for some pools.
type Config struct {
	Name  string
	Pools []string
	// Nodes and NodeSelector target the config at chosen nodes of its pools (none: every
	// node of them): a node named, or carrying every label of NodeSelector, gets it
	// (AppliesTo). NodesRange and NodeSelectorRange are their attributes, for warnings.
	Nodes             []string
	NodeSelector      map[string]string
	NodesRange        Range
	NodeSelectorRange Range
	Files             []File
	Directories       []Directory
	Links             []Link
	Units             []Unit
	KernelArgs        []string
	// KernelArgSources says where each of KernelArgs was declared (same length; absent
	// in configs built by hand, which then count as declared at DeclRange).
	KernelArgSources []Source
	OSImage          string
	// SSHKeys are the core user's SSH authorized keys the config declares
	// (ssh_authorized_keys, or passwd.users in its Butane): a pool's configs' keys
	// together, each once, in merge order, are its SSHKeysFile (model.SSHKeyItems), as the
	// MCO concatenates its MachineConfigs' keys. SSHKeysSource is where they were declared.
	SSHKeys       []string
	SSHKeysSource Source
	// FirstBoot is what the config's Butane or Ignition text declares beyond what mcp
	// manages (users and groups, disks, filesystems, RAID, LUKS, configs to merge…): an
	// Ignition config's JSON without its version, served to booting nodes as it is and
	// never applied to running ones. nil: none.
	FirstBoot []byte
	// FirstBootParts names its parts for people ("passwd.users.1 (alice)"), and
	// FirstBootRange is the attribute that declared it.
	FirstBootParts []string
	FirstBootRange Range
	DeclRange      Range
}

// Targeted reports whether the config targets chosen nodes of its pools (nodes or
// node_selector) rather than all of them.
func (c *Config) Targeted() bool { return len(c.Nodes) > 0 || len(c.NodeSelector) > 0 }

// AppliesTo reports whether c applies to a node (or machine) of pool named name with
// labels: c names the pool, and, when targeted, names the node or its selector matches
// every label (a node named or selected gets it: either is enough).
func (c *Config) AppliesTo(pool, name string, labels map[string]string) bool {
	if !slices.Contains(c.Pools, pool) {
		return false
	}
	if !c.Targeted() {
		return true
	}
	return slices.Contains(c.Nodes, name) || len(c.NodeSelector) > 0 && SelectorMatches(c.NodeSelector, labels)
}

// SelectorMatches reports whether labels carry every key of sel with its value (a pool's
// and a config's node_selector).
func SelectorMatches(sel, labels map[string]string) bool {
	for k, v := range sel {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Machine is a machine block: a machine not yet booted (or re-provisioned), told apart at
// first boot by Matchbox's selectors, that the boot server gives its own variant of its
// pool's config. Name is the node name it will have: configs naming it, or whose
// node_selector its Labels match, apply to it, as to the node.
type Machine struct {
	Name     string
	Pool     string
	MACs     []string // lower case, colon separated ("52:54:00:12:34:56")
	UUID     string   // lower case
	Hostname string
	Labels   map[string]string
	// DeclRange is the block's.
	DeclRange Range
}

// Machine returns the machine block named name, or nil.
func (d *Desired) Machine(name string) *Machine {
	for i := range d.Machines {
		if d.Machines[i].Name == name {
			return &d.Machines[i]
		}
	}
	return nil
}

// MachinePointer is what the boot server gives a machine block's machine at first boot:
// the rendered config of its pool it boots (its variant, or the pool's), and the
// selectors that tell it apart. The state keeps one per machine block (apply moves it
// with its pool's pointer).
type MachinePointer struct {
	Pool     string   `json:"pool"`
	Rendered string   `json:"rendered"`
	MACs     []string `json:"mac,omitempty"`
	UUID     string   `json:"uuid,omitempty"`
	Hostname string   `json:"hostname,omitempty"`
}

// VariantPointer is one variant of a pool's config that apply last pointed the pool at:
// the targeted configs (sorted names) whose nodes get it, and its name. Status compares
// each such node with it, as the others with the pool's pointer.
type VariantPointer struct {
	Configs  []string `json:"configs"`
	Rendered string   `json:"rendered"`
}

// VariantFor is the rendered config of vs for a node the targeted configs chosen apply to
// (Chosen), or pool when none of vs is theirs.
func VariantFor(vs []VariantPointer, chosen []string, pool string) string {
	if len(chosen) == 0 {
		return pool
	}
	for _, v := range vs {
		if slices.Equal(v.Configs, chosen) {
			return v.Rendered
		}
	}
	return pool
}
