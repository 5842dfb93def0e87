package model

import (
	"fmt"
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
	Paused         bool
	OSImage        string
	KernelArgs     []string
	BootImage      BootImage
	// DrainTimeout bounds each drain of the pool's nodes; zero: apply's -drain-timeout.
	DrainTimeout time.Duration
	// HealthChecks are the pool's health_check blocks, in the order declared.
	HealthChecks []HealthCheck
	// AlertGate is the pool's alert_gate block; nil: none.
	AlertGate *AlertGate
	// OnDrift is what a plan does with a node that drifted from the config it runs.
	OnDrift OnDrift
	// KernelArgsRange is the pool's kernel_args attribute.
	KernelArgsRange Range
	DeclRange       Range
	// Pacing: how apply paces the pool's rollout (canary, max_failures, soak).
	Pacing Pacing
	// Windows are the pool's maintenance windows: apply starts the pool's nodes only while
	// one is open. None: always open.
	Windows []Window
}

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
	Name        string
	Pools       []string
	Files       []File
	Directories []Directory
	Links       []Link
	Units       []Unit
	KernelArgs  []string
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
